//! The integer sums of `matmul_int8` on AVX-512 VNNI: `vpdpbusd` multiplies 64 unsigned codes of
//! x by 64 signed codes of the weight and adds each four neighbours' products into one of 16
//! 32-bit lanes. Both operands are read as they lie (rows `k` bytes long, the weight in the
//! table's `[N, K]` order), blocks of 4 rows × 4 weight rows in 16 accumulators, the depth 64
//! codes at a time (the last part masked); then the 16 accumulators are summed across their
//! lanes together, as one transposition-like tree, and scaled into the output 16 at a time
//! (the same expression as [`Scaling::write`], so the same bits). The sums are exact, so the
//! result does not depend on the blocking.

use super::int8::Scaling;

/// Whether the CPU runs [`products`] (AVX-512 F, BW and VNNI).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Writes through `scaling` the output of every row `r` in `r0..r1` of x's codes and every
/// weight row `c` in `c0..c1` (both `k` bytes a row from their pointers), from `Σ q[r]·w[c]`.
///
/// # Safety
/// [`available`] must hold; `q` must address `r1` rows of `k` bytes and `w` `c1` rows; as
/// [`Scaling::write`] for every `(r, c)` of the block.
pub unsafe fn products(
    k: usize,
    (q, r0, r1): (*const u8, usize, usize),
    (w, c0, c1): (*const i8, usize, usize),
    scaling: Scaling,
) {
    #[cfg(target_arch = "x86_64")]
    {
        // weight rows 4 at a time, over every block of 4 rows of x (whose codes stay in the
        // cache across the weight rows), single rows and columns at the edges
        let mut c = c0;
        while c < c1 {
            let cols = if c1 - c >= 4 { 4 } else { 1 };
            let mut r = r0;
            while r < r1 {
                let rows = if r1 - r >= 4 { 4 } else { 1 };
                // SAFETY: as the caller guarantees, rows r..r+rows and columns c..c+cols exist.
                unsafe {
                    match (rows, cols) {
                        (4, 4) => avx512::block::<4, 4>(k, q, w, r, c, &scaling),
                        (4, _) => avx512::block::<4, 1>(k, q, w, r, c, &scaling),
                        (_, 4) => avx512::block::<1, 4>(k, q, w, r, c, &scaling),
                        _ => avx512::block::<1, 1>(k, q, w, r, c, &scaling),
                    }
                }
                r += rows;
            }
            c += cols;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (k, q, r0, r1, w, c0, c1, scaling);
        unreachable!("vnni::products without AVX-512 VNNI: available() is false here")
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Scaling;
    use std::arch::x86_64::*;

    /// The `R × C` block at row `r`, weight row `c`.
    ///
    /// # Safety
    /// As [`super::products`], the block inside both operands.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    pub unsafe fn block<const R: usize, const C: usize>(
        k: usize,
        q: *const u8,
        w: *const i8,
        r: usize,
        c: usize,
        scaling: &Scaling,
    ) {
        let mut acc = [[_mm512_setzero_si512(); C]; R];
        let rows: [*const u8; R] = std::array::from_fn(|i| q.wrapping_add((r + i) * k));
        let cols: [*const i8; C] = std::array::from_fn(|j| w.wrapping_add((c + j) * k));
        let mut p = 0;
        while p + 64 <= k {
            // SAFETY: p + 64 ≤ k bytes of each row.
            unsafe {
                let wv: [__m512i; C] = std::array::from_fn(|j| _mm512_loadu_si512(cols[j].add(p).cast()));
                for i in 0..R {
                    let xv = _mm512_loadu_si512(rows[i].add(p).cast());
                    for j in 0..C {
                        acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], xv, wv[j]);
                    }
                }
            }
            p += 64;
        }
        if p < k {
            let mask: __mmask64 = u64::MAX >> (64 - (k - p));
            // SAFETY: the mask reads the k - p bytes left of each row, nothing past them.
            unsafe {
                let wv: [__m512i; C] = std::array::from_fn(|j| _mm512_maskz_loadu_epi8(mask, cols[j].add(p)));
                for i in 0..R {
                    let xv = _mm512_maskz_loadu_epi8(mask, rows[i].add(p).cast());
                    for j in 0..C {
                        acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], xv, wv[j]);
                    }
                }
            }
        }
        if R == 4 && C == 4 {
            let block = std::array::from_fn(|i| std::array::from_fn(|j| acc[i][j]));
            let sixteen = crate::backend::cpu::lane_sums::four_by_four(block, |a, b| _mm512_add_epi32(a, b));
            // SAFETY: as the caller guarantees for the block's four rows and columns.
            unsafe { write_four_by_four(sixteen, r, c, scaling) };
        } else {
            for (i, row) in acc.iter().enumerate() {
                for (j, lanes) in row.iter().enumerate() {
                    // SAFETY: as the caller guarantees.
                    unsafe { scaling.write(r + i, c + j, _mm512_reduce_add_epi32(*lanes)) };
                }
            }
        }
    }

    /// Writes the 4 × 4 block at `(r, c)` from its sums (element `4i + j`: row `r + i`, weight
    /// row `c + j`), as [`Scaling::write`] does one element: `step·scale·(total − zero·Σcode)
    /// + bias`, multiplied then added (no fused multiply-add), so the same bits.
    ///
    /// # Safety
    /// As [`Scaling::write`] for every element of the block.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn write_four_by_four(sums: __m512i, r: usize, c: usize, s: &Scaling) {
        let by_row = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);
        let by_col = _mm512_set_epi32(3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0, 3, 2, 1, 0);
        // SAFETY: four values from r and from c of each array, as the caller guarantees.
        unsafe {
            let rows_of = |p: *const i32| {
                _mm512_permutexvar_epi32(by_row, _mm512_castsi128_si512(_mm_loadu_si128(p.add(r).cast())))
            };
            let cols_of = |p: *const i32| {
                _mm512_permutexvar_epi32(by_col, _mm512_castsi128_si512(_mm_loadu_si128(p.add(c).cast())))
            };
            // the code sums are the task's own, from its first column
            let code_sums = _mm512_permutexvar_epi32(
                by_col,
                _mm512_castsi128_si512(_mm_loadu_si128(s.sums.add(c - s.first_column).cast())),
            );
            let exact = _mm512_sub_epi32(sums, _mm512_mullo_epi32(rows_of(s.zeros), code_sums));
            let factor = _mm512_mul_ps(
                _mm512_castsi512_ps(rows_of(s.steps.cast())),
                _mm512_castsi512_ps(cols_of(s.scales.cast())),
            );
            let bias = if s.bias.is_null() { _mm512_setzero_ps() } else { _mm512_castsi512_ps(cols_of(s.bias.cast())) };
            let values = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(exact), factor), bias);
            let out = s.out.add(r * s.n + c);
            _mm_storeu_ps(out, _mm512_extractf32x4_ps::<0>(values));
            _mm_storeu_ps(out.add(s.n), _mm512_extractf32x4_ps::<1>(values));
            _mm_storeu_ps(out.add(2 * s.n), _mm512_extractf32x4_ps::<2>(values));
            _mm_storeu_ps(out.add(3 * s.n), _mm512_extractf32x4_ps::<3>(values));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{available, products};
    use crate::backend::cpu::quant::int8::{dot, Scaling};

    #[test]
    fn products_equal_the_portable_loop_bit_for_bit_at_every_edge() {
        if !available() {
            eprintln!("skipped: no AVX-512 VNNI on this CPU (the portable loop serves)");
            return;
        }
        for (m, n, k) in [(1, 2, 1), (4, 8, 64), (5, 9, 63), (8, 13, 129), (13, 17, 1000)] {
            // the extremes of both code ranges among the values
            let q: Vec<u8> = (0..m * k).map(|i| if i % 11 == 0 { 255 } else { (i * 37 % 256) as u8 }).collect();
            let w: Vec<i8> = (0..n * k).map(|i| if i % 13 == 0 { -128 } else { (i * 53 % 255) as i8 }).collect();
            let steps: Vec<f32> = (0..m).map(|r| 0.01 + r as f32 / 64.0).collect();
            let zeros: Vec<i32> = (0..m).map(|r| (r * 29 % 256) as i32).collect();
            let sums: Vec<i32> = (0..n).map(|c| w[c * k..][..k].iter().map(|&v| i32::from(v)).sum()).collect();
            let scales: Vec<f32> = (0..n).map(|c| 0.003 * (1 + c % 5) as f32).collect();
            let bias: Vec<f32> = (0..n).map(|c| c as f32 - 3.5).collect();
            let run = |simd: bool| {
                let mut out = vec![f32::NAN; m * n];
                // the columns in two ranges, each with the code sums of its own columns only (as
                // the pool's tasks hold them)
                for (c0, c1) in [(0, n / 2), (n / 2, n)] {
                    let scaling = Scaling {
                        steps: steps.as_ptr(),
                        zeros: zeros.as_ptr(),
                        sums: sums[c0..].as_ptr(),
                        first_column: c0,
                        scales: scales.as_ptr(),
                        bias: bias.as_ptr(),
                        out: out.as_mut_ptr(),
                        n,
                    };
                    // SAFETY: the buffers hold m and n rows of k codes and their m and n values.
                    unsafe {
                        if simd {
                            products(k, (q.as_ptr(), 0, m), (w.as_ptr(), c0, c1), scaling);
                        } else {
                            for r in 0..m {
                                for c in c0..c1 {
                                    scaling.write(r, c, dot(&q[r * k..][..k], &w[c * k..][..k]));
                                }
                            }
                        }
                    }
                }
                out
            };
            let (fast, portable) = (run(true), run(false));
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "{m}x{n}x{k}");
        }
    }
}
