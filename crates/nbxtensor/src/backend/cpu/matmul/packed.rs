//! `pack_linear` and `linear_packed` on the host (the spec: `ops/spec/matmul.rs`): a constant
//! float32 weight laid out once in panels of [`PANEL`] output columns, `[⌈N / PANEL⌉, K,
//! PANEL]`, so that a product reads each panel as one contiguous stream and packs nothing.
//! `linear` by faer packs its weight at every call (13% of a MiniLM batch of 1 × 128 tokens).
//!
//! The AVX-512 kernel keeps a tile of [`ROWS`] rows × one panel in 24 vector accumulators:
//! per step of k, the panel's three vectors are loaded and each row's element broadcast into
//! three fused multiply-adds, the panel's lines [`AHEAD`] steps on asked for meanwhile. Every
//! output element is `fma(x[k], w[k], acc)` over k in order,
//! then `+ bias`: its bits depend on neither the tile, the thread count nor the kernel (the
//! portable loop, for CPUs without AVX-512F, computes the same fused steps; slower than
//! `linear` there, so a model packs only where [`native`] holds). Panels are shared among the
//! pool's threads.

use super::super::buffers::{read, write};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{Launch, Result, TensorMeta};
use crate::ops::spec::matmul::{LinearPacked, PackLinear, PANEL};
use crate::settings::{threads, tiling};
use rayon::prelude::*;

/// Rows of x a tile takes.
const ROWS: usize = 8;

/// Whether `linear_packed` runs its AVX-512 kernel on this CPU (else the portable loop): the
/// AVX-512F the few-rows product needs too.
pub fn native() -> bool {
    super::rows_dot::available()
}

/// Steps of k ahead whose panel lines the AVX-512 kernel asks the cache for: at a few rows the
/// product waits on the weights' stream (MiniLM at 1 × 16 tokens: 1500 batches 3.05–3.28 s
/// without, 2.78–2.83 s at 8 steps, 2.78–2.90 at 16, 2.90–2.92 at 32; docs/BENCHMARKS.md).
const AHEAD: usize = 8;

/// Pointers shared by the tasks of one product: each task writes its own panels' columns.
#[derive(Clone, Copy)]
struct Shared {
    x: *const f32,
    panels: *const f32,
    bias: *const f32,
    y: *mut f32,
}
// SAFETY: x, the panels and the bias are only read; the tasks write disjoint columns of y,
// which outlives them.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

/// One panel of the output: every row of x by panel `p` (its columns `p·PANEL ..` up to n).
///
/// # Safety
/// `s` must address x `m × k`, the panels `[⌈n / PANEL⌉, k, PANEL]`, y `m × n` (and the bias
/// `[n]` unless null), y written by no one else in these columns.
unsafe fn panel(s: Shared, (m, n, k): (usize, usize, usize), p: usize, avx512: bool) {
    let cols = (n - p * PANEL).min(PANEL);
    // SAFETY: panel p and its columns lie inside the buffers, as the caller guarantees.
    let (w, y, bias) = unsafe {
        (s.panels.add(p * k * PANEL), s.y.add(p * PANEL), if s.bias.is_null() { s.bias } else { s.bias.add(p * PANEL) })
    };
    let mut i = 0;
    while i < m {
        let rows = (m - i).min(ROWS);
        // SAFETY: rows i .. i + rows of x and y exist.
        let (x, y) = unsafe { (s.x.add(i * k), y.add(i * n)) };
        #[cfg(target_arch = "x86_64")]
        if avx512 {
            // SAFETY: avx512 is `native()`; the tile lies inside the buffers.
            unsafe { avx512::tile(rows, k, x, w, bias, y, n, cols) };
            i += rows;
            continue;
        }
        let _ = avx512;
        // SAFETY: as above.
        unsafe { portable_tile(rows, k, x, w, bias, y, n, cols) };
        i += rows;
    }
}

/// The tile of `rows` rows by one panel, one output element at a time in the kernel's order.
///
/// # Safety
/// As [`avx512::tile`].
#[allow(clippy::too_many_arguments)]
unsafe fn portable_tile(
    rows: usize,
    k: usize,
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    y: *mut f32,
    n: usize,
    cols: usize,
) {
    for r in 0..rows {
        let mut acc = [0.0f32; PANEL];
        for kk in 0..k {
            // SAFETY: row r of x holds k values; the panel holds k steps of PANEL values.
            let (v, step) = unsafe { (*x.add(r * k + kk), std::slice::from_raw_parts(w.add(kk * PANEL), PANEL)) };
            acc.iter_mut().zip(step).for_each(|(a, &b)| *a = v.mul_add(b, *a));
        }
        for (j, a) in acc.iter().enumerate().take(cols) {
            // SAFETY: column j < cols of row r lies inside y and the bias.
            unsafe { *y.add(r * n + j) = if bias.is_null() { *a } else { *a + *bias.add(j) } };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{AHEAD, PANEL, ROWS};
    use std::arch::x86_64::*;

    const VECTORS: usize = PANEL / 16;

    /// Rows `R` of x (`k` apart) by one panel `w` (`k` steps of PANEL values) into y (rows
    /// `n` apart), its first `cols` columns, plus the bias's (unless null).
    ///
    /// # Safety
    /// AVX-512F must be present; x must address R rows of k values, w k·PANEL values, y R
    /// rows of `cols` writable values and the bias `cols` values.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn rows<const R: usize>(
        k: usize,
        x: *const f32,
        w: *const f32,
        bias: *const f32,
        y: *mut f32,
        n: usize,
        cols: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); VECTORS]; R];
        for kk in 0..k {
            // SAFETY: step kk of the panel and element kk of each row exist.
            unsafe {
                let step = w.add(kk * PANEL);
                // the panel's lines AHEAD steps on (a prefetch past the buffer never faults)
                let next = step.wrapping_add(AHEAD * PANEL) as *const i8;
                _mm_prefetch::<_MM_HINT_T0>(next);
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(64));
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(128));
                let b = [_mm512_loadu_ps(step), _mm512_loadu_ps(step.add(16)), _mm512_loadu_ps(step.add(32))];
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a = _mm512_set1_ps(*x.add(r * k + kk));
                    for (acc, b) in acc.iter_mut().zip(b) {
                        *acc = _mm512_fmadd_ps(a, b, *acc);
                    }
                }
            }
        }
        for v in 0..VECTORS {
            let valid = cols.saturating_sub(16 * v).min(16);
            let mask: __mmask16 = ((1u32 << valid) - 1) as u16;
            // SAFETY: only the first `cols` columns are read from the bias and written to y.
            unsafe {
                let b =
                    if bias.is_null() { _mm512_setzero_ps() } else { _mm512_maskz_loadu_ps(mask, bias.add(16 * v)) };
                for (r, acc) in acc.iter().enumerate() {
                    let out = if bias.is_null() { acc[v] } else { _mm512_add_ps(acc[v], b) };
                    _mm512_mask_storeu_ps(y.add(r * n + 16 * v), mask, out);
                }
            }
        }
    }

    /// `rows` (1 ..= ROWS) rows of x by one panel: [`rows`] instantiated for that count.
    ///
    /// # Safety
    /// As [`rows`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn tile(
        count: usize,
        k: usize,
        x: *const f32,
        w: *const f32,
        bias: *const f32,
        y: *mut f32,
        n: usize,
        cols: usize,
    ) {
        const _: () = assert!(PANEL == 48 && ROWS == 8, "the tile holds 8 rows of three vectors");
        // SAFETY: as the caller guarantees.
        unsafe {
            match count {
                8 => rows::<8>(k, x, w, bias, y, n, cols),
                7 => rows::<7>(k, x, w, bias, y, n, cols),
                6 => rows::<6>(k, x, w, bias, y, n, cols),
                5 => rows::<5>(k, x, w, bias, y, n, cols),
                4 => rows::<4>(k, x, w, bias, y, n, cols),
                3 => rows::<3>(k, x, w, bias, y, n, cols),
                2 => rows::<2>(k, x, w, bias, y, n, cols),
                _ => rows::<1>(k, x, w, bias, y, n, cols),
            }
        }
    }
}

fn run_product(spec: &LinearPacked, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let x = read::<f32>(&launch.inputs[0])?;
    let panels = read::<f32>(&launch.inputs[1])?;
    let bias = if z.bias { Some(read::<f32>(&launch.inputs[2])?) } else { None };
    // SAFETY: the output is this launch's own buffer.
    let y = unsafe { write::<f32>(&launch.outputs[0])? };
    if y.is_empty() {
        return Ok(());
    }
    let shared = Shared {
        x: x.as_ptr(),
        panels: panels.as_ptr(),
        bias: bias.as_ref().map_or(std::ptr::null(), |b| b.as_ptr()),
        y: y.as_mut_ptr(),
    };
    let (sizes, count, avx512) = ((z.m, z.n, z.k), z.n.div_ceil(PANEL), native());
    // SAFETY (both arms): the buffers hold the spec's checked shapes; each panel writes its own
    // columns of y.
    let one = move |p: usize| unsafe { panel(shared, sizes, p, avx512) };
    let threads = threads::threads();
    let work = z.m.saturating_mul(z.n).saturating_mul(z.k);
    if threads > 1 && count > 1 && work > tiling::tiling_table().host_product_inline_work {
        let parts = threads::split(count, threads);
        threads::install(|| parts.into_par_iter().for_each(|part| part.for_each(&one)));
    } else {
        (0..count).for_each(one);
    }
    Ok(())
}

fn run_pack(spec: &PackLinear, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let (n, k) = spec.sizes(&metas)?;
    let weight = read::<f32>(&launch.inputs[0])?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<f32>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    threads::install(|| {
        out.par_chunks_mut(k * PANEL).enumerate().for_each(|(p, panel)| {
            for (kk, step) in panel.chunks_mut(PANEL).enumerate() {
                for (j, v) in step.iter_mut().enumerate() {
                    let row = p * PANEL + j;
                    *v = if row < n { weight[row * k + kk] } else { 0.0 };
                }
            }
        })
    });
    Ok(())
}

/// Registers `pack_linear` and `linear_packed` on float32.
pub fn register(table: &mut LaunchTable) {
    table.register("pack_linear", &[DType::Float32], run_pack);
    table.register("linear_packed", &[DType::Float32], run_product);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::Generator;
    use crate::tensor::Tensor;

    fn random(shape: &[i64], seed: u64) -> Tensor {
        let n = shape.iter().product::<i64>() as usize;
        Tensor::from_vec(Generator::new(seed).normal_f32(n, 0.0, 1.0).unwrap(), shape).unwrap()
    }

    /// `x · wᵀ + bias` in float64.
    fn reference(x: &[f32], w: &[f32], bias: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
        let mut y = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k).map(|kk| f64::from(x[i * k + kk]) * f64::from(w[j * k + kk])).sum();
                y[i * n + j] = dot + f64::from(bias[j]);
            }
        }
        y
    }

    #[test]
    fn the_panels_hold_the_weight_columns_padded_with_zeros() {
        let (n, k) = (50, 3);
        let w = random(&[n, k], 1);
        let panels = w.pack_linear().unwrap();
        assert_eq!(panels.shape(), &[2, k, PANEL as i64]);
        let (w, p) = (w.to_vec::<f32>().unwrap(), panels.to_vec::<f32>().unwrap());
        for panel in 0..2 {
            for kk in 0..k as usize {
                for j in 0..PANEL {
                    let row = panel * PANEL + j;
                    let want = if row < n as usize { w[row * k as usize + kk] } else { 0.0 };
                    assert_eq!(p[(panel * k as usize + kk) * PANEL + j], want, "panel {panel}, k {kk}, column {j}");
                }
            }
        }
    }

    #[test]
    fn the_product_is_linear_s_within_float32_rounding_at_ragged_sizes() {
        // rows past a tile of 8, columns past a panel, a depth of one, an empty depth
        for (m, n, k) in [(1, 1, 1), (13, 50, 37), (8, 96, 384), (19, 100, 5), (3, 7, 0), (0, 48, 4)] {
            let (x, w, b) = (random(&[m, k], 2), random(&[n, k], 3), random(&[n], 4));
            let panels = w.pack_linear().unwrap();
            let sizes = (m as usize, n as usize, k as usize);
            let [xs, ws, bs] = [&x, &w, &b].map(|t| t.to_vec::<f32>().unwrap());
            for bias in [Some(&b), None] {
                let got = x.linear_packed(&panels, bias, n as usize).unwrap();
                assert_eq!(got.shape(), &[m, n]);
                let zeros = vec![0.0f32; n as usize];
                let want = reference(&xs, &ws, if bias.is_some() { &bs } else { &zeros }, sizes);
                for (e, (&g, &r)) in got.to_vec::<f32>().unwrap().iter().zip(&want).enumerate() {
                    // float32 rounding of k products and sums of normal values, and of the bias
                    let bound = 1e-6 * (k as f64 + 2.0) * (r.abs() + 4.0);
                    assert!((f64::from(g) - r).abs() <= bound, "({m}, {n}, {k}) element {e}: {g} against {r}");
                }
            }
        }
    }

    #[test]
    fn the_bits_do_not_depend_on_the_kernel_or_the_threads() {
        // past host_product_inline_work: the pool splits the panels
        let (m, n, k) = (21usize, 150usize, 400usize);
        let (x, w) = (random(&[m as i64, k as i64], 5), random(&[n as i64, k as i64], 6));
        let panels = w.pack_linear().unwrap();
        let expected = x.linear_packed(&panels, None, n).unwrap().to_vec::<f32>().unwrap();
        // each panel by the portable loop, then (where the CPU has it) by the AVX-512 kernel
        let (xs, ps) = (x.to_vec::<f32>().unwrap(), panels.to_vec::<f32>().unwrap());
        for avx512 in [false, native()] {
            let mut y = vec![f32::NAN; m * n];
            let s = Shared { x: xs.as_ptr(), panels: ps.as_ptr(), bias: std::ptr::null(), y: y.as_mut_ptr() };
            // SAFETY: the buffers hold the sizes given; one thread writes every panel.
            (0..n.div_ceil(PANEL)).for_each(|p| unsafe { panel(s, (m, n, k), p, avx512) });
            let same = y.iter().zip(&expected).all(|(a, b)| a.to_bits() == b.to_bits());
            assert!(same, "avx512 = {avx512}: other bits than the pool's run");
        }
    }

    #[test]
    fn operands_that_do_not_fit_are_refused_by_name() {
        let (x, w) = (random(&[2, 8], 7), random(&[5, 8], 8));
        let panels = w.pack_linear().unwrap();
        let err = |r: Result<Tensor>| r.unwrap_err().to_string();
        let text = err(x.linear_packed(&panels, None, 49));
        assert!(text.contains("linear_packed") && text.contains("panels must be [2, 8, 48]"), "{text}");
        let text = err(random(&[2, 9], 9).linear_packed(&panels, None, 5));
        assert!(text.contains("panels must be [1, 9, 48]"), "{text}");
        let text = err(x.linear_packed(&panels, Some(&random(&[4], 1)), 5));
        assert!(text.contains("bias [5]"), "{text}");
        let text = err(random(&[3], 1).cast(crate::DType::Float64).unwrap().pack_linear());
        assert!(text.contains("pack_linear") && text.contains("float64"), "{text}");
    }
}
