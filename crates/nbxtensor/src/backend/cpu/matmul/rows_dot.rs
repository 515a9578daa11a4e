//! The float32 product of a few rows by a transposed weight, `y = x · Wᵀ` for `x` `m × k` with
//! rows contiguous and `W` `n × k` with rows contiguous (`linear`'s layout), for `m` up to
//! [`MAX_ROWS`]: every output element a dot product of two contiguous rows, read where they lie.
//! A general product packs the weight into panels first; at a few rows that packing is most of
//! the work (a MiniLM batch of 16 tokens spent 44% of its time in faer packing the weights),
//! while here each weight row is read once per four rows of `x`.
//!
//! Blocks of 4 rows × 4 weight rows keep 16 AVX-512 accumulators of 16 lanes; the depth goes
//! 16 values at a time (the last part masked), then the 16 accumulators are summed across their
//! lanes together, as one transposition-like tree (edge blocks sum each alone).
//! An element's value depends only on its two rows, never on the block or thread that
//! computed it: columns are shared among threads in panels, the bits the same at any count.

use crate::settings::threads;
use rayon::prelude::*;

/// The most rows of `x` this kernel takes; above it the general product's packing pays
/// (MiniLM at 1 × 64 tokens: 10.1 ms with this kernel, 11.05 ms through faer; at 1 × 128: 23.7
/// against 19.2, docs/BENCHMARKS.md).
pub const MAX_ROWS: usize = 64;

/// Weight rows (output columns) a task takes.
const PANEL: usize = 64;

/// Whether the CPU runs this kernel (AVX-512F).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `y[i, j] (+)= scale · (x[i, :] · w[j, :])` for `i < m`, `j < n`: `x` rows `x_stride` apart,
/// `w` rows `w_stride` apart, `y` row-major with row stride `n`; split over the pool when
/// `parallel`.
///
/// # Safety
/// [`available`] must hold; `x` must address `m` readable rows of `k` values, `w` `n` of them,
/// `y` `m·n` writable values that nothing else touches during the call.
#[allow(clippy::too_many_arguments)]
pub unsafe fn product(
    (m, n, k): (usize, usize, usize),
    x: (*const f32, usize),
    w: (*const f32, usize),
    y: *mut f32,
    accumulate: bool,
    scale: f32,
    parallel: bool,
) {
    #[cfg(target_arch = "x86_64")]
    {
        let (x, w, y) = (Shared(x.0, x.1), Shared(w.0, w.1), Shared(y as *const f32, n));
        let panel = move |first: usize| {
            let (x, w, y) = (x, w, y);
            // SAFETY: as the caller guarantees; panels cover disjoint columns of y.
            unsafe { avx512::columns(m, k, x, w, y, first, (first + PANEL).min(n), accumulate, scale) }
        };
        let panels = n.div_ceil(PANEL);
        if parallel && panels > 1 {
            threads::install(|| (0..panels).into_par_iter().for_each(|p| panel(p * PANEL)));
        } else {
            (0..panels).for_each(|p| panel(p * PANEL));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, n, k, x, w, y, accumulate, scale, parallel);
        unreachable!("rows_dot::product without AVX-512: available() is false here")
    }
}

/// A pointer and the row stride of the matrix it starts, shared by the pool's tasks.
#[derive(Clone, Copy)]
struct Shared(*const f32, usize);
// SAFETY: the inputs are only read; each task writes its own columns of the output.
unsafe impl Send for Shared {}
unsafe impl Sync for Shared {}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Shared;
    use std::arch::x86_64::*;

    /// Columns `first..last` of the output, every row.
    ///
    /// # Safety
    /// As [`super::product`].
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn columns(
        m: usize,
        k: usize,
        x: Shared,
        w: Shared,
        y: Shared,
        first: usize,
        last: usize,
        accumulate: bool,
        scale: f32,
    ) {
        // blocks of 4 × 4, then single rows and columns at the edges
        // the next columns' weight rows are fetched into the cache while this one's blocks
        // run: the passes over rows after the first read the weights from L1 and would leave
        // the memory idle (each pass fetches its share of the next four rows)
        let groups = m.div_ceil(4);
        let mut j = first;
        while j < last {
            let c = if last - j >= 4 { 4 } else { 1 };
            let next = j + c;
            let mut i = 0;
            while i < m {
                let r = if m - i >= 4 { 4 } else { 1 };
                let ahead = Ahead { w, first: next, rows: last.min(next + 4) - next, pass: i / 4, groups };
                // SAFETY: rows i..i+r of x and j..j+c of w exist; the block lies inside y.
                unsafe {
                    match (r, c) {
                        (4, 4) => block::<4, 4>(k, x, w, y, i, j, accumulate, scale, ahead),
                        (4, _) => block::<4, 1>(k, x, w, y, i, j, accumulate, scale, ahead),
                        (_, 4) => block::<1, 4>(k, x, w, y, i, j, accumulate, scale, ahead),
                        _ => block::<1, 1>(k, x, w, y, i, j, accumulate, scale, ahead),
                    }
                }
                i += r;
            }
            j += c;
        }
    }

    /// The weight rows to fetch ahead during one pass: `rows` (at most 4) rows from `first`, of
    /// which pass `pass` of `groups` fetches those with `row % groups == pass`.
    #[derive(Clone, Copy)]
    struct Ahead {
        w: Shared,
        first: usize,
        rows: usize,
        pass: usize,
        groups: usize,
    }

    impl Ahead {
        /// Hints the cache lines of this pass's rows at depth `p` (a line of 16 values).
        #[inline(always)]
        fn fetch(&self, p: usize) {
            let mut row = self.pass;
            while row < self.rows {
                let at = self.w.0.wrapping_add((self.first + row) * self.w.1 + p);
                // SAFETY: a prefetch never faults; `at` lies inside the weight rows.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(at as *const i8) };
                row += self.groups;
            }
        }
    }

    /// The `R × C` block of the output at row `i`, column `j`.
    ///
    /// # Safety
    /// As [`super::product`], the block inside the output.
    #[target_feature(enable = "avx512f")]
    #[inline]
    #[allow(clippy::too_many_arguments)]
    unsafe fn block<const R: usize, const C: usize>(
        k: usize,
        x: Shared,
        w: Shared,
        y: Shared,
        i: usize,
        j: usize,
        accumulate: bool,
        scale: f32,
        ahead: Ahead,
    ) {
        let mut acc = [[_mm512_setzero_ps(); C]; R];
        let rows: [*const f32; R] = std::array::from_fn(|r| x.0.wrapping_add((i + r) * x.1));
        let cols: [*const f32; C] = std::array::from_fn(|c| w.0.wrapping_add((j + c) * w.1));
        let mut p = 0;
        while p + 16 <= k {
            ahead.fetch(p);
            // SAFETY: p + 16 ≤ k values of each row.
            unsafe {
                let wv: [__m512; C] = std::array::from_fn(|c| _mm512_loadu_ps(cols[c].add(p)));
                for r in 0..R {
                    let xv = _mm512_loadu_ps(rows[r].add(p));
                    for c in 0..C {
                        acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
                    }
                }
            }
            p += 16;
        }
        if p < k {
            let mask: __mmask16 = (1u32 << (k - p)).wrapping_sub(1) as __mmask16;
            // SAFETY: the mask reads the k - p values left of each row, nothing past them.
            unsafe {
                let wv: [__m512; C] = std::array::from_fn(|c| _mm512_maskz_loadu_ps(mask, cols[c].add(p)));
                for r in 0..R {
                    let xv = _mm512_maskz_loadu_ps(mask, rows[r].add(p));
                    for c in 0..C {
                        acc[r][c] = _mm512_fmadd_ps(xv, wv[c], acc[r][c]);
                    }
                }
            }
        }
        let mut sums = [[0.0f32; C]; R];
        if R == 4 && C == 4 {
            let ints = std::array::from_fn(|r| std::array::from_fn(|c| _mm512_castps_si512(acc[r][c])));
            let float_add = |a: __m512i, b: __m512i| {
                _mm512_castps_si512(_mm512_add_ps(_mm512_castsi512_ps(a), _mm512_castsi512_ps(b)))
            };
            let sixteen = _mm512_castsi512_ps(crate::backend::cpu::lane_sums::four_by_four(ints, float_add));
            // SAFETY: 16 values fit the 4 × 4 array, row after row.
            unsafe { _mm512_storeu_ps(sums.as_mut_ptr() as *mut f32, sixteen) };
        } else {
            for (r, row) in acc.iter().enumerate() {
                for (c, lanes) in row.iter().enumerate() {
                    sums[r][c] = _mm512_reduce_add_ps(*lanes);
                }
            }
        }
        let out = y.0 as *mut f32;
        for (r, row) in sums.iter().enumerate() {
            for (c, sum) in row.iter().enumerate() {
                let value = scale * sum;
                // SAFETY: (i + r, j + c) lies inside the output, which this task alone writes.
                unsafe {
                    let at = out.add((i + r) * y.1 + j + c);
                    *at = if accumulate { *at + value } else { value };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shape_with_tails_matches_a_float64_reference_and_any_thread_count() {
        if !available() {
            eprintln!("skipped: no AVX-512F on this CPU");
            return;
        }
        let value = |s: usize| ((s * 2654435761) % 1000) as f32 / 500.0 - 1.0;
        for (m, n, k) in
            [(1, 1, 1), (3, 5, 7), (4, 4, 16), (5, 67, 33), (16, 130, 384), (32, 9, 100), (7, 64, 15), (63, 21, 130)]
        {
            // x and w with row strides larger than k (views), y pre-filled for the accumulation
            let (xs, ws) = (k + 3, k + 1);
            let x: Vec<f32> = (0..m * xs).map(value).collect();
            let w: Vec<f32> = (0..n * ws).map(|s| value(s + 7)).collect();
            for accumulate in [false, true] {
                let start: Vec<f32> = (0..m * n).map(|s| value(s + 11)).collect();
                let mut results = Vec::new();
                for parallel in [false, true] {
                    let mut y = start.clone();
                    // SAFETY: the buffers hold the rows and outputs the shapes address.
                    unsafe {
                        product(
                            (m, n, k),
                            (x.as_ptr(), xs),
                            (w.as_ptr(), ws),
                            y.as_mut_ptr(),
                            accumulate,
                            0.5,
                            parallel,
                        )
                    };
                    for i in 0..m {
                        for j in 0..n {
                            let dot: f64 = (0..k).map(|p| f64::from(x[i * xs + p]) * f64::from(w[j * ws + p])).sum();
                            let want = 0.5 * dot + if accumulate { f64::from(start[i * n + j]) } else { 0.0 };
                            let got = f64::from(y[i * n + j]);
                            assert!(
                                (got - want).abs() <= 1e-5 * (1.0 + want.abs() + k as f64),
                                "{m}x{n}x{k} ({i}, {j}): {got} vs {want}"
                            );
                        }
                    }
                    results.push(y);
                }
                assert_eq!(results[0], results[1], "{m}x{n}x{k}: the same bits on one thread and on the pool");
            }
        }
    }
}
