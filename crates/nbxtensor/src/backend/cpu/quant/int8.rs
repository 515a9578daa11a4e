//! The int8 ops on the host: `pack_int8` and the dynamically quantized `matmul_int8`.
//!
//! `matmul_int8` first quantizes each row of x to unsigned codes over the range of its
//! elements within the threshold, marking the others (the outliers) in a bit mask; then each
//! task takes a block of rows × weight panels (16 weight rows each): per group of 64 it sums the
//! code products exactly in 32-bit integers, on a CPU with AVX-512 VNNI by `vpdpbusd`
//! ([`super::vnni`]), elsewhere by a portable loop with the same sums, and carries them into
//! float32 in the order `ops::spec::quant` gives, so both paths give the same bits at any
//! thread count. The outliers are added in float32 from the dequantized weight.
//!
//! Workspace (`8·M·⌈K/64⌉ + 8·M + M·K` bytes): each row's outlier mask, step and zero code,
//! and x's codes. Each task sums the codes of its own weight panels per group as it starts on
//! them (no pass over the whole weight).

use super::vnni;
use crate::backend::cpu::buffers::{read, write, Float};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta, Workspace};
use crate::ops::spec::quant::{Int8Layout, Int8Shape, MatmulInt8, PackInt8};
use crate::settings::{threads, tiling};
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows of x one task takes (their codes stay in the core's cache while the task's weight
/// panels pass over them).
const ROWS_PER_TASK: usize = 64;

/// Weight panels (of [`Int8Layout::TILE_ROWS`] rows) one task takes.
const PANELS_PER_TASK: usize = 4;

/// The largest unsigned code of x.
pub(super) const X_LEVELS: f32 = 255.0;

/// Weight rows in a panel of tiles.
const PANEL: usize = Int8Layout::TILE_ROWS;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The 64-bit outlier mask words of a row.
fn words(plan: &Int8Shape) -> usize {
    plan.k.div_ceil(64)
}

/// The workspace bytes of a call: the outlier masks (8 bytes a word), steps and zeros (4 bytes
/// a row each) and x's codes (a byte an element). Saturating: declared before the output is
/// allocated, when the extents of a call the allocation will refuse may multiply past 64 bits.
fn workspace_bytes(plan: &Int8Shape) -> u64 {
    let (m, k, words) = (plan.m as u64, plan.k as u64, words(plan) as u64);
    m.saturating_mul(words.saturating_mul(8).saturating_add(8).saturating_add(k))
}

fn workspace(spec: &MatmulInt8, inputs: &[TensorMeta]) -> Result<u64> {
    Ok(workspace_bytes(&spec.sizes(inputs)?))
}

/// The workspace cut into its parts.
struct Scratch<'w> {
    masks: &'w mut [u64],
    steps: &'w mut [f32],
    zeros: &'w mut [f32],
    codes: &'w mut [u8],
}

fn scratch<'w>(workspace: Workspace<'w>, plan: &Int8Shape) -> Result<Scratch<'w>> {
    let bytes = workspace.into_host("matmul_int8")?;
    let (m, words) = (plan.m, words(plan));
    if (bytes.len() as u64) < workspace_bytes(plan) || bytes.as_ptr() as usize % 8 != 0 {
        return Err(invalid(format!(
            "matmul_int8: the workspace ({} bytes) is not the {} aligned bytes declared",
            bytes.len(),
            workspace_bytes(plan)
        )));
    }
    let (masks, rest) = bytes.split_at_mut(m * words * 8);
    let (floats, codes) = rest.split_at_mut(m * 8);
    // SAFETY: `masks` starts 8-byte aligned (checked) and `floats` 8 bytes a row after it; every
    // bit pattern is a valid u64 and f32.
    let (masks, floats) = unsafe {
        (
            std::slice::from_raw_parts_mut(masks.as_mut_ptr().cast::<u64>(), m * words),
            std::slice::from_raw_parts_mut(floats.as_mut_ptr().cast::<f32>(), 2 * m),
        )
    };
    let (steps, zeros) = floats.split_at_mut(m);
    Ok(Scratch { masks, steps, zeros, codes: &mut codes[..m * plan.k] })
}

/// Quantizes one row of x: its codes and its outlier mask
/// (bit `j % 64` of word `j / 64` for element `j` over `threshold` in magnitude, whose code is
/// the zero code), and its step and zero code (`x ≈ (q − zero)·step`), the range of the other
/// elements widened to include 0 so that 0 is a code. A row with a value that is not finite
/// has a NaN step (its outputs are NaN, as a float product's) and no outliers.
pub(super) fn quantize_row(x: &[f32], threshold: f32, codes: &mut [u8], mask: &mut [u64]) -> (f32, f32) {
    let inside = |v: f32| if v.abs() > threshold { 0.0 } else { v };
    // one pass in 16 lanes (the loop vectorizes on the baseline x86-64; `vnni::quantize_row`
    // is these steps in AVX-512): whether every value is finite, and the range of those within
    // the threshold
    let (mut low, mut high, mut bad) = ([0.0f32; 16], [0.0f32; 16], [false; 16]);
    let mut take = |i: usize, v: f32| {
        bad[i] |= !v.is_finite();
        low[i] = low[i].min(inside(v));
        high[i] = high[i].max(inside(v));
    };
    let chunks = x.chunks_exact(16);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (i, &v) in chunk.iter().enumerate() {
            take(i, v);
        }
    }
    for (i, &v) in rest.iter().enumerate() {
        take(i, v);
    }
    if bad.contains(&true) {
        mask.fill(0);
        codes.fill(0);
        return (f32::NAN, 0.0);
    }
    let (low, high) = (low.iter().fold(0.0f32, |a, &v| a.min(v)), high.iter().fold(0.0f32, |a, &v| a.max(v)));
    // each end divided first: a range wider than float32's largest value still has a step
    let step = high / X_LEVELS - low / X_LEVELS;
    // no element but the outliers other than 0: every code 0, and any step
    let (step, zero, inverse) =
        if step == 0.0 { (1.0, 0.0, 0.0) } else { (step, nearest(-low / step).clamp(0.0, X_LEVELS), 1.0 / step) };
    // an outlier counts as 0 here: its code is the zero code
    for (q, &v) in codes.iter_mut().zip(x) {
        *q = nearest(inside(v) * inverse + zero).clamp(0.0, X_LEVELS) as u8;
    }
    for (word, chunk) in mask.iter_mut().zip(x.chunks(64)) {
        *word = chunk.iter().enumerate().fold(0u64, |w, (i, &v)| w | (u64::from(v.abs() > threshold) << i));
    }
    (step, zero)
}

/// `v` rounded to the nearest integer, ties to even, for `|v| < 2²²` (x's codes lie in
/// −1..=256): adding and taking away 1.5·2²³ leaves no fraction bits, and float32's own
/// rounding does the rest. Unlike `f32::round_ties_even`, which is a library call on the
/// baseline x86-64, the loop over a row vectorizes.
#[inline(always)]
pub(super) fn nearest(v: f32) -> f32 {
    (v + SHIFT) - SHIFT
}

/// 1.5·2²³: added to a float32 below 2²², it leaves no fraction bits ([`nearest`]).
pub(super) const SHIFT: f32 = 12_582_912.0;

/// The index in the tiled codes of weight row `c`, element `j`, for rows of `k` codes: panel
/// `c / 16`, its tiles along the row, 16 rows × 4 codes a tile.
#[inline(always)]
pub(super) fn tile_index(c: usize, j: usize, k: usize) -> usize {
    let tile = (c / PANEL) * (k / Int8Layout::TILE_DEPTH) + j / Int8Layout::TILE_DEPTH;
    (tile * PANEL + c % PANEL) * Int8Layout::TILE_DEPTH + j % Int8Layout::TILE_DEPTH
}

/// What every block of a call reads and writes. Rows of x are `k` floats (and codes) apart, its
/// masks `words` apart; the weight's codes are tiled ([`tile_index`]), its scales
/// `[groups, n]`; the output is row-major `[m, n]`.
#[derive(Clone, Copy)]
pub(super) struct Operands {
    /// x, for its outliers' values.
    pub x: *const f32,
    /// x's row length (a multiple of 4).
    pub k: usize,
    /// x's codes.
    pub codes: *const u8,
    /// x's outlier masks.
    pub masks: *const u64,
    /// Mask words a row.
    pub words: usize,
    /// x's rows' steps (NaN for a row that is not finite).
    pub steps: *const f32,
    /// x's rows' zero codes (whole numbers).
    pub zeros: *const f32,
    /// The weight's tiled codes.
    pub tiles: *const i8,
    /// Elements of a group (a multiple of 4; the last group of a row may be shorter).
    pub group: usize,
    /// Groups along a row.
    pub groups: usize,
    /// The weight's scales, `[groups, n]`.
    pub scales: *const f32,
    /// The bias, or null.
    pub bias: *const f32,
    /// The output.
    pub out: *mut f32,
    /// Output columns (weight rows).
    pub n: usize,
}
// SAFETY: the inputs are only read; tasks write disjoint blocks of the output.
unsafe impl Send for Operands {}
unsafe impl Sync for Operands {}

/// A task's code sums: per group, the sums of the codes of each weight row of panels
/// `first_panel..` (`width` rows a group, as exact whole numbers in float32).
#[derive(Clone, Copy)]
pub(super) struct PanelSums<'a> {
    /// The sums, `[groups, width]`.
    pub sums: &'a [f32],
    /// The panel of the first row.
    pub first_panel: usize,
    /// Weight rows a group.
    pub width: usize,
}

impl PanelSums<'_> {
    /// The code sum of weight row `c` over group `g`.
    fn of(&self, g: usize, c: usize) -> f32 {
        self.sums[g * self.width + c - self.first_panel * PANEL]
    }
}

/// Output `(r, c)` by the portable loop, in the spec's float order.
///
/// # Safety
/// `r` and `c` must lie inside the call's rows and weight rows, the task's sums hold `c`.
pub(super) unsafe fn output(op: &Operands, sums: &PanelSums<'_>, r: usize, c: usize) -> f32 {
    // SAFETY: as the caller guarantees, every index below lies inside its array.
    unsafe {
        let codes = std::slice::from_raw_parts(op.codes.add(r * op.k), op.k);
        let weight = |j: usize| i32::from(*op.tiles.add(tile_index(c, j, op.k)));
        let (step, zero) = (*op.steps.add(r), *op.zeros.add(r));
        let mut acc = 0.0f32;
        for g in 0..op.groups {
            let span = g * op.group..((g + 1) * op.group).min(op.k);
            let total: i32 = span.map(|j| i32::from(codes[j]) * weight(j)).sum();
            // exact: both are whole numbers below 2²⁴, and so is their difference
            let exact = total as f32 - zero * sums.of(g, c);
            acc = exact.mul_add(*op.scales.add(g * op.n + c), acc);
        }
        let mut y = acc * step;
        for word in 0..op.words {
            let mut bits = *op.masks.add(r * op.words + word);
            while bits != 0 {
                let j = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let scale = *op.scales.add((j / op.group) * op.n + c);
                y = (*op.x.add(r * op.k + j) * scale).mul_add(weight(j) as f32, y);
            }
        }
        if op.bias.is_null() {
            y
        } else {
            y + *op.bias.add(c)
        }
    }
}

/// The portable loop's code sums of panels `p0..p1` into `sums` (`[groups, 16·(p1 − p0)]`).
///
/// # Safety
/// The panels must lie inside the weight's tiles.
pub(super) unsafe fn panel_sums(op: &Operands, p0: usize, p1: usize, sums: &mut [f32]) {
    let width = (p1 - p0) * PANEL;
    for g in 0..op.groups {
        for c in p0 * PANEL..p1 * PANEL {
            let span = g * op.group..((g + 1) * op.group).min(op.k);
            // SAFETY: as the caller guarantees, the panel's tiles exist.
            let total: i32 = span.map(|j| i32::from(unsafe { *op.tiles.add(tile_index(c, j, op.k)) })).sum();
            sums[g * width + c - p0 * PANEL] = total as f32;
        }
    }
}

fn run_matmul(spec: &MatmulInt8, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let plan = spec.sizes(&metas)?;
    let x = read::<f32>(&launch.inputs[0])?;
    let tiles = read::<i8>(&launch.inputs[1])?;
    let scales = read::<f32>(&launch.inputs[2])?;
    let bias = if plan.bias { Some(read::<f32>(&launch.inputs[3])?) } else { None };
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<f32>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    let s = scratch(launch.workspace, &plan)?;
    let (m, n, k, words) = (plan.m, plan.n, plan.k, words(&plan));
    let parallel = m.saturating_mul(n).saturating_mul(k) > tiling::tiling_table().host_product_inline_work;
    let threshold = spec.threshold;
    // each row's codes, mask, step and zero written in place
    let use_vnni = vnni::available();
    let quantize = |(r, (((codes, mask), step), zero)): (usize, (((&mut [u8], &mut [u64]), &mut f32), &mut f32))| {
        let row = &x[r * k..][..k];
        (*step, *zero) = if use_vnni {
            // SAFETY: available() holds.
            unsafe { vnni::quantize_row(row, threshold, codes, mask) }
        } else {
            quantize_row(row, threshold, codes, mask)
        };
    };
    if k == 0 {
        s.steps.fill(1.0);
        s.zeros.fill(0.0);
    } else if parallel && m.saturating_mul(k) > tiling::tiling_table().host_chunk_elements {
        // rows in parallel only where they are more than a chunk: a hand-off to the pool costs
        // more than quantizing a few rows
        let rows = s.codes.par_chunks_mut(k).zip(s.masks.par_chunks_mut(words));
        let rows = rows.zip(s.steps.par_iter_mut()).zip(s.zeros.par_iter_mut());
        threads::install(|| rows.enumerate().for_each(quantize));
    } else {
        let rows = s.codes.chunks_mut(k).zip(s.masks.chunks_mut(words));
        rows.zip(s.steps.iter_mut()).zip(s.zeros.iter_mut()).enumerate().for_each(quantize);
    }
    let op = Operands {
        x: x.as_ptr(),
        k,
        codes: s.codes.as_ptr(),
        masks: s.masks.as_ptr(),
        words,
        steps: s.steps.as_ptr(),
        zeros: s.zeros.as_ptr(),
        tiles: tiles.as_ptr(),
        group: spec.layout.group,
        groups: plan.groups,
        scales: scales.as_ptr(),
        bias: bias.as_deref().map_or(std::ptr::null(), <[f32]>::as_ptr),
        out: out.as_mut_ptr(),
        n,
    };
    let panels = n.div_ceil(PANEL);
    let column_tasks = panels.div_ceil(PANELS_PER_TASK);
    let task = |t: usize| {
        // the whole operands, not their pointer fields one by one (those alone are not Sync)
        let op = op;
        let (rows, cols) = (t / column_tasks, t % column_tasks);
        let (r0, r1) = (rows * ROWS_PER_TASK, ((rows + 1) * ROWS_PER_TASK).min(m));
        let (p0, p1) = (cols * PANELS_PER_TASK, ((cols + 1) * PANELS_PER_TASK).min(panels));
        // this task's panels' code sums, while their tiles come into the cache for the products
        let width = (p1 - p0) * PANEL;
        let mut sums = vec![0.0f32; op.groups * width];
        // SAFETY: available() holds where taken; the rows and panels lie inside x's codes,
        // the weight's tiles and the other operands; this task alone writes their block of the
        // output.
        unsafe {
            if use_vnni {
                vnni::panel_sums(&op, p0, p1, &mut sums);
                let sums = PanelSums { sums: &sums, first_panel: p0, width };
                vnni::products(&op, r0..r1, p0..p1, &sums, &mut vec![0.0; (r1 - r0) * width]);
            } else {
                panel_sums(&op, p0, p1, &mut sums);
                let sums = PanelSums { sums: &sums, first_panel: p0, width };
                for r in r0..r1 {
                    for c in p0 * PANEL..(p1 * PANEL).min(n) {
                        *op.out.add(r * n + c) = output(&op, &sums, r, c);
                    }
                }
            }
        }
    };
    let tasks = m.div_ceil(ROWS_PER_TASK) * column_tasks;
    if parallel && tasks > 1 {
        threads::install(|| (0..tasks).into_par_iter().for_each(task));
    } else {
        (0..tasks).for_each(task);
    }
    Ok(())
}

fn run_pack<T: Float>(spec: &PackInt8, launch: Launch<'_>) -> Result<()> {
    let (n, k) = spec.sizes(&[TensorMeta::new(launch.inputs[0].dtype(), launch.inputs[0].shape())])?;
    let weight = read::<T>(&launch.inputs[0])?;
    let (largest, group, groups) = (spec.layout.largest as f32, spec.layout.group, spec.layout.groups(k));
    // SAFETY: the two outputs are this launch's own, distinct buffers.
    let (tiles, scales) = unsafe { (write::<i8>(&launch.outputs[0])?, write::<f32>(&launch.outputs[1])?) };
    // the padding (the last panel's rows past n) stays 0
    tiles.fill(0);
    // over the values, not the rows: a weight of K = 0 holds none, however many rows it has
    if let Some(at) = weight.iter().position(|v| !v.to_f32().is_finite()) {
        return Err(invalid(format!("pack_int8: row {} of the weight holds a value that is not finite", at / k)));
    }
    // panels in parallel: each writes its own tiles and its rows' scales (kept per panel, then
    // placed, as the scales run [groups, n])
    let panel_scales: Vec<Vec<f32>> = threads::install(|| {
        tiles
            .par_chunks_mut((PANEL * k).max(1))
            .enumerate()
            .map(|(p, panel)| {
                let rows = p * PANEL..((p + 1) * PANEL).min(n);
                let mut found = vec![0.0f32; rows.len() * groups];
                for (i, c) in rows.enumerate() {
                    let values = &weight[c * k..][..k];
                    for g in 0..groups {
                        let span = g * group..((g + 1) * group).min(k);
                        let magnitude = values[span.clone()].iter().fold(0.0f32, |a, v| a.max(v.to_f32().abs()));
                        let inverse = if magnitude > 0.0 { largest / magnitude } else { 0.0 };
                        found[i * groups + g] = magnitude / largest;
                        for j in span {
                            let code = (values[j].to_f32() * inverse).round_ties_even().clamp(-largest, largest);
                            panel[tile_index(c, j, k) - p * PANEL * k] = code as i8;
                        }
                    }
                }
                found
            })
            .collect()
    });
    for (p, found) in panel_scales.iter().enumerate() {
        for (i, row) in found.chunks(groups.max(1)).enumerate() {
            for (g, &scale) in row.iter().enumerate() {
                scales[g * n + p * PANEL + i] = scale;
            }
        }
    }
    Ok(())
}

fn launch_pack(spec: &PackInt8, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run_pack::<f32>(spec, launch),
        DType::Float16 => run_pack::<f16>(spec, launch),
        DType::Bfloat16 => run_pack::<bf16>(spec, launch),
        other => Err(invalid(format!("pack_int8: no loop for {other}"))),
    }
}

/// Registers `matmul_int8` (float32 x) and `pack_int8` (on the weight's dtype).
pub fn register(table: &mut LaunchTable) {
    table.register_with_workspace("matmul_int8", &[DType::Float32], run_matmul, workspace);
    table.register("pack_int8", &crate::ops::spec::FLOATS, launch_pack);
}

#[cfg(test)]
mod tests {
    use super::{quantize_row, tile_index};
    use crate::tensor::Tensor;

    #[test]
    fn a_quantized_row_is_within_half_a_step_of_its_values_and_zero_is_a_code() {
        let x: Vec<f32> = (0..300).map(|i| ((i * 37 % 101) as f32 - 30.0) / 7.0).collect();
        let (mut q, mut mask) = (vec![0u8; 300], vec![0u64; 5]);
        let (step, zero) = quantize_row(&x, f32::INFINITY, &mut q, &mut mask);
        for (v, &c) in x.iter().zip(&q) {
            let back = (f32::from(c) - zero) * step;
            assert!((back - v).abs() <= step * 0.5001, "{v} came back as {back}");
        }
        assert!(mask.iter().all(|&w| w == 0));
        let (_, zero_of_positive) = quantize_row(&[0.5, 2.0], f32::INFINITY, &mut [0, 0], &mut [0]);
        assert_eq!(zero_of_positive, 0.0, "a range widened to 0 starts at code 0");
    }

    #[test]
    fn outliers_are_marked_and_left_out_of_the_range() {
        // 10.0 and -7.5 are past the threshold: the step is the others' (-1 .. 2), not 17.5's
        let x = [1.0f32, 10.0, -1.0, 2.0, -7.5, 0.25];
        let (mut q, mut mask) = ([9u8; 6], [0u64; 1]);
        let (step, zero) = quantize_row(&x, 6.0, &mut q, &mut mask);
        assert_eq!(mask[0], 0b10010);
        assert!((step - 3.0 / 255.0).abs() < 1e-7, "{step}");
        assert_eq!((f32::from(q[1]), f32::from(q[4])), (zero, zero), "an outlier's code is the zero code");
    }

    #[test]
    fn tiles_hold_sixteen_rows_of_four_codes() {
        // depth 128: 32 tiles a panel
        assert_eq!(tile_index(0, 0, 128), 0);
        assert_eq!(tile_index(0, 3, 128), 3);
        assert_eq!(tile_index(1, 0, 128), 4);
        assert_eq!(tile_index(0, 4, 128), 64);
        assert_eq!(tile_index(17, 5, 128), (32 + 1) * 64 + 4 + 1);
    }

    /// Unpacks codes and scales into the float weight they stand for.
    fn dequantized(codes: &Tensor, scales: &Tensor, n: usize, k: usize) -> Vec<f64> {
        let (c, s) = (codes.to_vec::<i8>().unwrap(), scales.to_vec::<f32>().unwrap());
        let mut w = vec![0.0; n * k];
        for r in 0..n {
            for j in 0..k {
                w[r * k + j] = f64::from(c[tile_index(r, j, k)]) * f64::from(s[(j / 64) * n + r]);
            }
        }
        w
    }

    #[test]
    fn packing_reconstructs_each_weight_within_half_a_step_of_its_group() {
        let (n, k) = (19, 132);
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 31 % 97) as f32 - 48.0) / (1.0 + (i % 64) as f32)).collect();
        let (codes, scales) = Tensor::from_vec(w.clone(), &[n as i64, k as i64]).unwrap().pack_int8().unwrap();
        assert_eq!((codes.shape(), scales.shape()), (&[2i64, 33, 16, 4][..], &[3i64, 19][..]));
        let back = dequantized(&codes, &scales, n, k);
        let s = scales.to_vec::<f32>().unwrap();
        for r in 0..n {
            for j in 0..k {
                let step = f64::from(s[(j / 64) * n + r]);
                assert!((back[r * k + j] - f64::from(w[r * k + j])).abs() <= step * 0.5001, "({r}, {j})");
            }
        }
        // the padding: rows 19..32 are zero codes
        let c = codes.to_vec::<i8>().unwrap();
        assert!((n..32).all(|r| (0..k).all(|j| c[tile_index(r, j, k)] == 0)));
        let odd = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap().pack_int8().unwrap_err().to_string();
        assert!(odd.contains("pack_int8: K = 3 is not a multiple of 4"), "{odd}");
    }

    #[test]
    fn products_match_the_dequantized_operands_in_float64() {
        // sizes crossing the groups, the 4-row blocks, the 16-row panels and the tasks' edges;
        // the values past 6 in magnitude are the outliers
        for (m, n, k) in [(1, 1, 4), (3, 5, 68), (4, 16, 64), (9, 67, 132), (65, 3, 384), (6, 33, 200)] {
            let x: Vec<f32> =
                (0..m * k).map(|i| ((i * 13 % 29) as f32 - 9.0) / if i % 17 == 0 { 1.0 } else { 3.0 }).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 5.0).collect();
            let bias: Vec<f32> = (0..n).map(|i| i as f32 / 4.0).collect();
            let xt = Tensor::from_vec(x.clone(), &[m as i64, k as i64]).unwrap();
            let wt = Tensor::from_vec(w.clone(), &[n as i64, k as i64]).unwrap();
            let (codes, scales) = wt.pack_int8().unwrap();
            let bt = Tensor::from_vec(bias.clone(), &[n as i64]).unwrap();
            let y = xt.matmul_int8(&codes, &scales, Some(&bt)).unwrap().to_vec::<f32>().unwrap();
            let back = dequantized(&codes, &scales, n, k);
            for r in 0..m {
                let row = &x[r * k..][..k];
                let (mut q, mut mask) = (vec![0u8; k], vec![0u64; k.div_ceil(64)]);
                let (step, zero) = quantize_row(row, 6.0, &mut q, &mut mask);
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|i| {
                            let xi = if row[i].abs() > 6.0 {
                                f64::from(row[i])
                            } else {
                                (f64::from(q[i]) - f64::from(zero)) * f64::from(step)
                            };
                            xi * back[j * k + i]
                        })
                        .sum::<f64>()
                        + f64::from(bias[j]);
                    let got = f64::from(y[r * n + j]);
                    assert!((got - want).abs() <= 1e-5 * (1.0 + want.abs()), "{m}x{n}x{k} ({r}, {j}): {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn a_row_that_is_not_finite_gives_nan_and_the_others_their_values() {
        let xt = Tensor::from_vec(vec![1.0f32, f32::NAN, 0.0, 0.0, 2.0, 0.5, 0.0, 0.0], &[2, 4]).unwrap();
        let wt = Tensor::from_vec(vec![1.0f32, 1.0, 1.0, 1.0], &[1, 4]).unwrap();
        let (codes, scales) = wt.pack_int8().unwrap();
        let y = xt.matmul_int8(&codes, &scales, None).unwrap().to_vec::<f32>().unwrap();
        assert!(y[0].is_nan(), "{y:?}");
        assert!((y[1] - 2.5).abs() < 0.02, "{y:?}");
        let bad = Tensor::from_vec(vec![1.0f32, f32::INFINITY, 0.0, 0.0], &[1, 4]).unwrap();
        let err = bad.pack_int8().unwrap_err().to_string();
        assert!(err.contains("pack_int8") && err.contains("row 0") && err.contains("not finite"), "{err}");
        let second = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0, f32::NAN, 7.0], &[2, 4]).unwrap();
        let err = second.pack_int8().unwrap_err().to_string();
        assert!(err.contains("row 1") && err.contains("not finite"), "{err}");
    }

    #[test]
    fn a_weight_of_no_columns_and_two_to_the_forty_rows_packs_at_once_into_empty_outputs() {
        // found by the fuzzer (fuzz/seeds/op_call/pack_int8_of_2_40_empty_rows): the check for
        // values that are not finite walked the rows, 2^40 of them, each empty
        let rows = 1i64 << 40;
        let weight = Tensor::from_bytes(crate::DType::Float32, &[rows, 0], &[]).unwrap();
        let (codes, scales) = weight.pack_int8().unwrap();
        assert_eq!(codes.shape(), &[rows / 16, 0, 16, 4]);
        assert_eq!(scales.shape(), &[0, rows]);
        assert_eq!((codes.numel(), scales.numel()), (0, 0));
    }
}
