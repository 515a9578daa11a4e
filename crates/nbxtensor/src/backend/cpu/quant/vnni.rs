//! The blocks of `matmul_int8` on AVX-512 VNNI. A tile of the weight's codes (16 weight rows
//! × 4 codes) is one 64-byte vector; `vpdpbusd` multiplies it by 4 codes of a row of x
//! broadcast to every lane and adds each lane's 4 products into its 32-bit sum, so a vector of
//! sums holds 16 outputs of one row. A block is up to 4 rows × 2 panels (8 such vectors); at
//! each group's end its integer sums become float32 (`sum − zero·Σcode`, exact) and are
//! scaled by the group's 16 scales into the float sums, in the order the portable loop
//! ([`super::int8::output`]) takes element by element, so the same bits. A task's panels are
//! taken [`PASS_CODES`] codes of a row at a time, over all its rows, so that their tiles stay
//! in the core's first-level cache; the float sums wait in the task's buffer between passes.

use super::int8::{Operands, PanelSums};
use std::ops::Range;

/// Codes of a row one pass over a task takes: two panels' tiles, 2 × 16 × 512 bytes, stay in
/// a 48 KiB first-level cache beside the rows' codes, whatever K (measured within the VM's
/// noise of one pass over the whole row at MiniLM's K = 1536: 436 against 452 µs for
/// 128 × 1536 → 384, 3277 against 3475 µs for 1024 rows).
pub const PASS_CODES: usize = 512;

/// A task's float sums between passes: `[rows, 16·panels]` from its first row and panel.
pub struct Partial<'a> {
    /// The sums.
    pub sums: &'a mut [f32],
    /// The task's first row.
    pub first_row: usize,
    /// The task's first panel.
    pub first_panel: usize,
    /// Floats a row.
    pub width: usize,
}

/// Whether the CPU runs [`products`] and [`panel_sums`] (AVX-512 F, BW and VNNI).
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

/// [`super::int8::quantize_row`] compiled for AVX-512, where its loops vectorize 16 wide: the
/// same operations in the same order, so the same codes, step and zero.
///
/// # Safety
/// [`available`] must hold.
pub unsafe fn quantize_row(x: &[f32], threshold: f32, codes: &mut [u8], mask: &mut [u64]) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as the caller guarantees.
    unsafe {
        avx512::quantize_row(x, threshold, codes, mask)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (x, threshold, codes, mask);
        unreachable!("vnni::quantize_row without AVX-512: available() is false here")
    }
}

/// The code sums of weight panels `p0..p1` per group into `sums` (`[groups, 16·(p1 − p0)]`).
///
/// # Safety
/// [`available`] must hold; the panels must lie inside the weight's tiles.
pub unsafe fn panel_sums(op: &Operands, p0: usize, p1: usize, sums: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as the caller guarantees.
    unsafe {
        avx512::panel_sums(op, p0, p1, sums)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, p0, p1, sums);
        unreachable!("vnni::panel_sums without AVX-512 VNNI: available() is false here")
    }
}

/// Writes the outputs of rows `rows` × weight panels `panels` (the columns past `n` left out);
/// `partial` holds `rows.len() × 16·panels.len()` floats.
///
/// # Safety
/// [`available`] must hold; the rows and panels must lie inside the operands, `sums` hold the
/// panels' code sums, and no other task write this block of the output.
pub unsafe fn products(
    op: &Operands,
    rows: Range<usize>,
    panels: Range<usize>,
    sums: &PanelSums<'_>,
    partial: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    {
        let per_pass = (PASS_CODES / op.group).max(1);
        let mut partial =
            Partial { sums: partial, first_row: rows.start, first_panel: panels.start, width: panels.len() * 16 };
        // at least one pass: with no groups (K = 0) it writes the bias
        for pass in 0..op.groups.div_ceil(per_pass).max(1) {
            let groups = pass * per_pass..((pass + 1) * per_pass).min(op.groups);
            // panels 2 at a time, over every block of 4 rows of x, fewer at the edges
            let mut p = panels.start;
            while p < panels.end {
                let two = panels.end - p >= 2;
                let mut r = rows.start;
                while r < rows.end {
                    let take = (rows.end - r).min(4);
                    let (at, g, part) = ((r, p), groups.clone(), &mut partial);
                    // SAFETY: as the caller guarantees, rows r..r+take and the panels exist.
                    unsafe {
                        match (take, two) {
                            (4, true) => avx512::block::<4, 2>(op, at, g, sums, part),
                            (3, true) => avx512::block::<3, 2>(op, at, g, sums, part),
                            (2, true) => avx512::block::<2, 2>(op, at, g, sums, part),
                            (_, true) => avx512::block::<1, 2>(op, at, g, sums, part),
                            (4, false) => avx512::block::<4, 1>(op, at, g, sums, part),
                            (3, false) => avx512::block::<3, 1>(op, at, g, sums, part),
                            (2, false) => avx512::block::<2, 1>(op, at, g, sums, part),
                            (_, false) => avx512::block::<1, 1>(op, at, g, sums, part),
                        }
                    }
                    r += take;
                }
                p += if two { 2 } else { 1 };
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (op, rows, panels, sums, partial);
        unreachable!("vnni::products without AVX-512 VNNI: available() is false here")
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::super::int8::{nearest, SHIFT, X_LEVELS};
    use super::{Operands, PanelSums, Partial};
    use crate::ops::spec::quant::Int8Layout;
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// Bytes of a tile.
    const TILE: usize = Int8Layout::TILE_ROWS * Int8Layout::TILE_DEPTH;

    /// The first byte of panel `p`'s tile `t`.
    ///
    /// # Safety
    /// The tile must lie inside the weight's codes.
    #[inline(always)]
    unsafe fn tile(op: &Operands, p: usize, t: usize) -> *const i8 {
        // SAFETY: as the caller guarantees.
        unsafe { op.tiles.add((p * (op.k / Int8Layout::TILE_DEPTH) + t) * TILE) }
    }

    /// Which of panel `p`'s 16 weight rows are inside the output's `n` columns.
    #[inline(always)]
    fn columns(op: &Operands, p: usize) -> __mmask16 {
        let inside = op.n.saturating_sub(p * 16).min(16);
        ((1u32 << inside) - 1) as __mmask16
    }

    /// As [`super::quantize_row`].
    ///
    /// # Safety
    /// As [`super::quantize_row`].
    #[target_feature(enable = "avx512f,avx512bw")]
    pub unsafe fn quantize_row(x: &[f32], threshold: f32, codes: &mut [u8], mask: &mut [u64]) -> (f32, f32) {
        let k = x.len();
        // the last 16 masked: the lanes past the row read as 0, which neither widens the range
        // (it includes 0) nor is an outlier (the threshold is ≥ 0)
        let lanes = |at: usize| -> __mmask16 { ((1u32 << (k - at).min(16)) - 1) as __mmask16 };
        let (limit, infinity) = (_mm512_set1_ps(threshold), _mm512_set1_ps(f32::INFINITY));
        // SAFETY: every load is masked to the row's k values.
        let load = |at: usize| unsafe { _mm512_maskz_loadu_ps(lanes(at), x.as_ptr().add(at)) };
        let outliers = |v: __m512| _mm512_cmp_ps_mask::<_CMP_GT_OQ>(_mm512_abs_ps(v), limit);
        let (mut low, mut high, mut bad) = (_mm512_setzero_ps(), _mm512_setzero_ps(), 0 as __mmask16);
        for at in (0..k).step_by(16) {
            let v = load(at);
            bad |= _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(_mm512_abs_ps(v), infinity);
            let inside = _mm512_maskz_mov_ps(!outliers(v), v);
            low = _mm512_min_ps(low, inside);
            high = _mm512_max_ps(high, inside);
        }
        if bad != 0 {
            mask.fill(0);
            codes.fill(0);
            return (f32::NAN, 0.0);
        }
        let (low, high) = (_mm512_reduce_min_ps(low), _mm512_reduce_max_ps(high));
        let step = high / X_LEVELS - low / X_LEVELS;
        let (step, zero, inverse) =
            if step == 0.0 { (1.0, 0.0, 0.0) } else { (step, nearest(-low / step).clamp(0.0, X_LEVELS), 1.0 / step) };
        let (scale, offset, shift) = (_mm512_set1_ps(inverse), _mm512_set1_ps(zero), _mm512_set1_ps(SHIFT));
        let (bottom, top) = (_mm512_setzero_ps(), _mm512_set1_ps(X_LEVELS));
        for (word, at) in mask.iter_mut().zip((0..k).step_by(64)) {
            let mut bits = 0u64;
            for part in 0..4 {
                let from = at + 16 * part;
                if from >= k {
                    break;
                }
                let v = load(from);
                let out = outliers(v);
                bits |= u64::from(out) << (16 * part);
                // as the portable loop: the outliers as 0, times the inverse, plus the zero code,
                // rounded to nearest by the shift, clamped
                let scaled = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_mov_ps(!out, v), scale), offset);
                let rounded = _mm512_sub_ps(_mm512_add_ps(scaled, shift), shift);
                let clamped = _mm512_min_ps(_mm512_max_ps(rounded, bottom), top);
                // SAFETY: the store is masked to the row's k codes.
                unsafe {
                    _mm512_mask_cvtepi32_storeu_epi8(
                        codes.as_mut_ptr().add(from).cast(),
                        lanes(from),
                        _mm512_cvtps_epi32(clamped),
                    )
                };
            }
            *word = bits;
        }
        (step, zero)
    }

    /// As [`super::panel_sums`].
    ///
    /// # Safety
    /// As [`super::panel_sums`].
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub unsafe fn panel_sums(op: &Operands, p0: usize, p1: usize, sums: &mut [f32]) {
        let ones = _mm512_set1_epi8(1);
        let (width, tiles) = ((p1 - p0) * 16, op.group / Int8Layout::TILE_DEPTH);
        let row_tiles = op.k / Int8Layout::TILE_DEPTH;
        for p in p0..p1 {
            for g in 0..op.groups {
                let mut acc = _mm512_setzero_si512();
                for t in g * tiles..((g + 1) * tiles).min(row_tiles) {
                    // SAFETY: as the caller guarantees, the panel's tiles exist.
                    acc = _mm512_dpbusd_epi32(acc, ones, unsafe { _mm512_loadu_si512(tile(op, p, t).cast()) });
                }
                let at = g * width + (p - p0) * 16;
                // SAFETY: `sums` holds [groups, width] floats.
                unsafe { _mm512_storeu_ps(sums[at..at + 16].as_mut_ptr(), _mm512_cvtepi32_ps(acc)) };
            }
        }
    }

    /// Groups `groups` of the block of `R` rows from row `r` × `P` panels from panel `p`: its
    /// float sums from `partial` (zeros at the first group), back to it, or at the last group
    /// into the output.
    ///
    /// # Safety
    /// As [`super::products`], the block inside the operands and `partial`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    pub unsafe fn block<const R: usize, const P: usize>(
        op: &Operands,
        (r, p): (usize, usize),
        groups: Range<usize>,
        sums: &PanelSums<'_>,
        partial: &mut Partial<'_>,
    ) {
        let (tiles, row_tiles) = (op.group / Int8Layout::TILE_DEPTH, op.k / Int8Layout::TILE_DEPTH);
        let masks: [__mmask16; P] = std::array::from_fn(|j| columns(op, p + j));
        // SAFETY: every pointer below addresses the block's rows, panels and groups, which the
        // caller guarantees exist; the loads of scales and bias are masked to the n columns.
        unsafe {
            let rows: [*const u8; R] = std::array::from_fn(|i| op.codes.add((r + i) * op.k));
            let zeros: [__m512; R] = std::array::from_fn(|i| _mm512_set1_ps(*op.zeros.add(r + i)));
            let kept =
                |i: usize, j: usize| (r + i - partial.first_row) * partial.width + (p + j - partial.first_panel) * 16;
            let mut acc = [[_mm512_setzero_ps(); P]; R];
            if groups.start > 0 {
                for (i, row) in acc.iter_mut().enumerate() {
                    for (j, a) in row.iter_mut().enumerate() {
                        *a = _mm512_loadu_ps(partial.sums[kept(i, j)..][..16].as_ptr());
                    }
                }
            }
            for g in groups.clone() {
                let mut total = [[_mm512_setzero_si512(); P]; R];
                for t in g * tiles..((g + 1) * tiles).min(row_tiles) {
                    let w: [__m512i; P] = std::array::from_fn(|j| _mm512_loadu_si512(tile(op, p + j, t).cast()));
                    for i in 0..R {
                        let x = _mm512_set1_epi32(rows[i].add(t * 4).cast::<i32>().read_unaligned());
                        for j in 0..P {
                            total[i][j] = _mm512_dpbusd_epi32(total[i][j], x, w[j]);
                        }
                    }
                }
                for j in 0..P {
                    let at = g * sums.width + (p + j - sums.first_panel) * 16;
                    let code_sums = _mm512_loadu_ps(sums.sums[at..at + 16].as_ptr());
                    let scales = _mm512_maskz_loadu_ps(masks[j], op.scales.add(g * op.n + (p + j) * 16));
                    for i in 0..R {
                        // exact: both are whole numbers below 2²⁴, and so is their difference
                        let exact = _mm512_fnmadd_ps(zeros[i], code_sums, _mm512_cvtepi32_ps(total[i][j]));
                        acc[i][j] = _mm512_fmadd_ps(exact, scales, acc[i][j]);
                    }
                }
            }
            if groups.end < op.groups {
                for (i, row) in acc.iter().enumerate() {
                    for (j, a) in row.iter().enumerate() {
                        _mm512_storeu_ps(partial.sums[kept(i, j)..][..16].as_mut_ptr(), *a);
                    }
                }
                return;
            }
            for i in 0..R {
                let row = r + i;
                let step = _mm512_set1_ps(*op.steps.add(row));
                let mut y: [__m512; P] = std::array::from_fn(|j| _mm512_mul_ps(acc[i][j], step));
                for word in 0..op.words {
                    let mut bits = *op.masks.add(row * op.words + word);
                    while bits != 0 {
                        let e = word * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let x = _mm512_set1_ps(*op.x.add(row * op.k + e));
                        let shift = _mm_cvtsi32_si128((24 - 8 * (e % 4)) as i32);
                        for j in 0..P {
                            let raw = _mm512_loadu_si512(tile(op, p + j, e / 4).cast());
                            let codes = _mm512_cvtepi32_ps(_mm512_srai_epi32::<24>(_mm512_sll_epi32(raw, shift)));
                            let scales =
                                _mm512_maskz_loadu_ps(masks[j], op.scales.add((e / op.group) * op.n + (p + j) * 16));
                            y[j] = _mm512_fmadd_ps(_mm512_mul_ps(x, scales), codes, y[j]);
                        }
                    }
                }
                for j in 0..P {
                    let c = (p + j) * 16;
                    let out = if op.bias.is_null() {
                        y[j]
                    } else {
                        _mm512_add_ps(y[j], _mm512_maskz_loadu_ps(masks[j], op.bias.add(c)))
                    };
                    _mm512_mask_storeu_ps(op.out.add(row * op.n + c), masks[j], out);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{available, panel_sums, products, quantize_row};
    use crate::backend::cpu::quant::int8::{output, panel_sums as portable_sums, Operands, PanelSums};

    #[test]
    fn quantized_rows_equal_the_portable_ones() {
        if !available() {
            eprintln!("skipped: no AVX-512 VNNI on this CPU (the portable loop serves)");
            return;
        }
        for k in [1usize, 15, 16, 17, 64, 100, 1536] {
            let mut rows: Vec<Vec<f32>> = vec![
                (0..k).map(|i| ((i * 37 % 101) as f32 - 40.0) / 9.0).collect(),
                (0..k).map(|i| if i % 7 == 3 { -9.5 } else { (i % 5) as f32 * 0.3 }).collect(),
                vec![0.0; k],
            ];
            let mut bad = rows[0].clone();
            bad[k / 2] = f32::INFINITY;
            rows.push(bad);
            for (n, row) in rows.iter().enumerate() {
                let run = |simd: bool| {
                    let (mut codes, mut mask) = (vec![7u8; k], vec![u64::MAX; k.div_ceil(64)]);
                    let got = if simd {
                        // SAFETY: available() holds.
                        unsafe { quantize_row(row, 6.0, &mut codes, &mut mask) }
                    } else {
                        crate::backend::cpu::quant::int8::quantize_row(row, 6.0, &mut codes, &mut mask)
                    };
                    (got.0.to_bits(), got.1.to_bits(), codes, mask)
                };
                assert_eq!(run(true), run(false), "k = {k}, row {n}");
            }
        }
    }

    #[test]
    fn products_equal_the_portable_loop_bit_for_bit_at_every_edge() {
        if !available() {
            eprintln!("skipped: no AVX-512 VNNI on this CPU (the portable loop serves)");
            return;
        }
        let group = 64;
        for (m, n, k) in
            [(1usize, 2usize, 4usize), (4, 16, 64), (5, 9, 60), (8, 45, 132), (13, 17, 1000), (6, 40, 1540)]
        {
            let (groups, panels) = (k.div_ceil(group), n.div_ceil(16));
            let words = k.div_ceil(64);
            // the extremes of both code ranges among the values; the padding's codes 0
            let x: Vec<f32> = (0..m * k).map(|i| (i % 19) as f32 - 9.0).collect();
            let q: Vec<u8> = (0..m * k).map(|i| if i % 11 == 0 { 255 } else { (i * 37 % 256) as u8 }).collect();
            let tiles: Vec<i8> =
                (0..panels * 16 * k).map(|i| if i % 13 == 0 { -127 } else { (i * 53 % 255) as i8 }).collect();
            // outliers at every 37th element of a row from its 5th (row 2: none)
            let mut masks = vec![0u64; m * words];
            for r in (0..m).filter(|&r| r != 2) {
                for e in (5..k).step_by(37) {
                    masks[r * words + e / 64] |= 1 << (e % 64);
                }
            }
            let steps: Vec<f32> = (0..m).map(|r| 0.01 + r as f32 / 64.0).collect();
            let zeros: Vec<f32> = (0..m).map(|r| (r * 29 % 256) as f32).collect();
            let scales: Vec<f32> = (0..groups * n).map(|c| 0.003 * (1 + c % 5) as f32).collect();
            let bias: Vec<f32> = (0..n).map(|c| c as f32 - 3.5).collect();
            let run = |simd: bool| {
                let mut out = vec![f32::NAN; m * n];
                let op = Operands {
                    x: x.as_ptr(),
                    k,
                    codes: q.as_ptr(),
                    masks: masks.as_ptr(),
                    words,
                    steps: steps.as_ptr(),
                    zeros: zeros.as_ptr(),
                    tiles: tiles.as_ptr(),
                    group,
                    groups,
                    scales: scales.as_ptr(),
                    bias: bias.as_ptr(),
                    out: out.as_mut_ptr(),
                    n,
                };
                // the panels in two ranges, each with the code sums of its own panels only (as
                // the pool's tasks hold them)
                for (p0, p1) in [(0, panels / 2), (panels / 2, panels)] {
                    let width = (p1 - p0) * 16;
                    let mut sums = vec![0.0f32; groups * width];
                    // SAFETY: the buffers hold the operands' rows, panels and groups.
                    unsafe {
                        if simd {
                            panel_sums(&op, p0, p1, &mut sums);
                        } else {
                            portable_sums(&op, p0, p1, &mut sums);
                        }
                        let sums = PanelSums { sums: &sums, first_panel: p0, width };
                        if simd {
                            products(&op, 0..m, p0..p1, &sums, &mut vec![0.0; m * width]);
                        } else {
                            for r in 0..m {
                                for c in p0 * 16..(p1 * 16).min(n) {
                                    *op.out.add(r * n + c) = output(&op, &sums, r, c);
                                }
                            }
                        }
                    }
                }
                out
            };
            let (fast, portable) = (run(true), run(false));
            assert!(fast.iter().all(|v| v.is_finite()), "{m}x{n}x{k}: every output written");
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&fast), bits(&portable), "{m}x{n}x{k}");
        }
    }
}
