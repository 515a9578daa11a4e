//! The int8 ops on the host: `pack_int8` and the dynamically quantized `matmul_int8`.
//!
//! `matmul_int8` quantizes each row of x to unsigned codes over its own range, then sums the
//! products of those codes with the weight's signed codes exactly in 32-bit integers: on a CPU
//! with AVX-512 VNNI by `vpdpbusd` (64 products an instruction, [`super::vnni`]), elsewhere by
//! a portable loop with the same sums. The result is the same on either path and at any thread
//! count (integer sums; the float scaling after them is one expression per element).
//!
//! Workspace (`8·M + M·K` bytes): each row's step and zero code, and x's codes. Each task sums
//! the codes of its own weight rows as it starts on them (no pass over the whole weight).

use super::vnni;
use crate::backend::cpu::buffers::{read, write, Float};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta, Workspace};
use crate::ops::spec::quant::{Int8Shape, MatmulInt8, PackInt8};
use crate::settings::{threads, tiling};
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows of x one task takes (their codes stay in the core's cache while the task's weight
/// rows pass over them).
const ROWS_PER_TASK: usize = 64;

/// Weight rows (output columns) one task takes.
const COLUMNS_PER_TASK: usize = 64;

/// The largest unsigned code of x.
const X_LEVELS: f32 = 255.0;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The workspace bytes of a call: steps and zeros (4 bytes a row each) and x's codes (a byte an
/// element). Saturating: declared before the output is allocated, when the extents of a call
/// the allocation will refuse may multiply past 64 bits.
fn workspace_bytes(plan: &Int8Shape) -> u64 {
    let (m, k) = (plan.m as u64, plan.k as u64);
    m.saturating_mul(8).saturating_add(m.saturating_mul(k))
}

fn workspace(spec: &MatmulInt8, inputs: &[TensorMeta]) -> Result<u64> {
    Ok(workspace_bytes(&spec.sizes(inputs)?))
}

/// The workspace cut into its parts.
struct Scratch<'w> {
    steps: &'w mut [f32],
    zeros: &'w mut [i32],
    codes: &'w mut [u8],
}

fn scratch<'w>(workspace: Workspace<'w>, plan: &Int8Shape) -> Result<Scratch<'w>> {
    let bytes = workspace.into_host("matmul_int8")?;
    let m = plan.m;
    if (bytes.len() as u64) < workspace_bytes(plan) || bytes.as_ptr() as usize % 4 != 0 {
        return Err(invalid(format!(
            "matmul_int8: the workspace ({} bytes) is not the {} aligned bytes declared",
            bytes.len(),
            workspace_bytes(plan)
        )));
    }
    let (words, codes) = bytes.split_at_mut(2 * m * 4);
    // SAFETY: `words` starts 4-byte aligned (checked) and every bit pattern is a valid i32.
    let words = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<i32>(), 2 * m) };
    let (steps, zeros) = words.split_at_mut(m);
    // SAFETY: f32 and i32 have one size and alignment, and every bit pattern is a valid f32.
    let steps = unsafe { std::slice::from_raw_parts_mut(steps.as_mut_ptr().cast::<f32>(), m) };
    Ok(Scratch { steps, zeros, codes: &mut codes[..m * plan.k] })
}

/// Quantizes one row of x: its codes, and its step and zero code (`x ≈ (q − zero)·step`), the
/// range widened to include 0 so that 0 is a code. A row with a value that is not finite has
/// a NaN step: its outputs are NaN, as a float product's.
fn quantize_row(x: &[f32], codes: &mut [u8]) -> (f32, i32) {
    let (low, high) = x.iter().fold((0.0f32, 0.0f32), |(l, h), &v| (l.min(v), h.max(v)));
    if !x.iter().all(|v| v.is_finite()) {
        codes.fill(0);
        return (f32::NAN, 0);
    }
    // each end divided first: a range wider than float32's largest value still has a step
    let step = high / X_LEVELS - low / X_LEVELS;
    if step == 0.0 {
        // all zeros: every code 0, and any step
        codes.fill(0);
        return (1.0, 0);
    }
    let zero = nearest(-low / step).clamp(0.0, X_LEVELS);
    let inverse = 1.0 / step;
    for (q, &v) in codes.iter_mut().zip(x) {
        *q = nearest(v * inverse + zero).clamp(0.0, X_LEVELS) as u8;
    }
    (step, zero as i32)
}

/// `v` rounded to the nearest integer, ties to even, for `|v| < 2²²` (x's codes lie in
/// −1..=256): adding and taking away 1.5·2²³ leaves no fraction bits, and float32's own
/// rounding does the rest. Unlike `f32::round_ties_even`, which is a library call on the
/// baseline x86-64, the loop over a row vectorizes.
#[inline(always)]
fn nearest(v: f32) -> f32 {
    const SHIFT: f32 = 12_582_912.0;
    (v + SHIFT) - SHIFT
}

/// `Σ q·code` of a row of x's codes and a row of the weight's (the portable loop).
pub(super) fn dot(q: &[u8], w: &[i8]) -> i32 {
    q.iter().zip(w).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum()
}

/// What turns the integer sum of row `r` and weight row `c` into the output: each row's step
/// and zero code, each weight row's code sum (from `first_column` on), scale and bias, and the
/// output (rows `n` apart).
#[derive(Clone, Copy)]
pub(super) struct Scaling {
    /// x's rows' steps (NaN for a row that is not finite).
    pub steps: *const f32,
    /// x's rows' zero codes.
    pub zeros: *const i32,
    /// The code sums of weight rows `first_column..`.
    pub sums: *const i32,
    /// The weight row of `sums[0]`.
    pub first_column: usize,
    /// The weight rows' scales.
    pub scales: *const f32,
    /// The bias, or null.
    pub bias: *const f32,
    /// The output, row-major.
    pub out: *mut f32,
    /// The output's row stride.
    pub n: usize,
}
// SAFETY: the inputs are only read; tasks write disjoint blocks of the output.
unsafe impl Send for Scaling {}
unsafe impl Sync for Scaling {}

impl Scaling {
    /// Writes output `(r, c)` from its integer sum `total`: `step·scale·(total − zero·Σcode)
    /// + bias`, the difference exact in wrapping int32 (it is at most `255·128·K` < 2³¹).
    ///
    /// # Safety
    /// `r` and `c` must lie inside the call's rows and weight rows, in a block of the output
    /// that only this task writes.
    #[inline(always)]
    pub unsafe fn write(&self, r: usize, c: usize, total: i32) {
        // SAFETY: as the caller guarantees.
        unsafe {
            let exact = total.wrapping_sub((*self.zeros.add(r)).wrapping_mul(*self.sums.add(c - self.first_column)));
            let bias = if self.bias.is_null() { 0.0 } else { *self.bias.add(c) };
            *self.out.add(r * self.n + c) = exact as f32 * (*self.steps.add(r) * *self.scales.add(c)) + bias;
        }
    }
}

fn run_matmul(spec: &MatmulInt8, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let plan = spec.sizes(&metas)?;
    let x = read::<f32>(&launch.inputs[0])?;
    let weight = read::<i8>(&launch.inputs[1])?;
    let scales = read::<f32>(&launch.inputs[2])?;
    let bias = if plan.bias { Some(read::<f32>(&launch.inputs[3])?) } else { None };
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<f32>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    let s = scratch(launch.workspace, &plan)?;
    let (m, n, k) = (plan.m, plan.n, plan.k);
    let parallel = m.saturating_mul(n).saturating_mul(k) > tiling::tiling_table().host_product_inline_work;
    let quantize = |(r, codes): (usize, &mut [u8])| quantize_row(&x[r * k..][..k], codes);
    let (steps, zeros) = (&mut *s.steps, &mut *s.zeros);
    if k == 0 {
        steps.fill(1.0);
        zeros.fill(0);
    } else if parallel {
        threads::install(|| {
            let rows: Vec<(f32, i32)> = s.codes.par_chunks_mut(k).enumerate().map(quantize).collect();
            for (r, (step, zero)) in rows.into_iter().enumerate() {
                (steps[r], zeros[r]) = (step, zero);
            }
        });
    } else {
        for (r, codes) in s.codes.chunks_mut(k).enumerate() {
            (steps[r], zeros[r]) = quantize((r, codes));
        }
    }
    let codes = &*s.codes;
    // every task's scaling but its weight rows' code sums
    let base = Scaling {
        steps: s.steps.as_ptr(),
        zeros: s.zeros.as_ptr(),
        sums: std::ptr::null(),
        first_column: 0,
        scales: scales.as_ptr(),
        bias: bias.as_deref().map_or(std::ptr::null(), <[f32]>::as_ptr),
        out: out.as_mut_ptr(),
        n,
    };
    let use_vnni = vnni::available();
    let task = |t: usize| {
        // the whole scaling, not its pointer fields one by one (those alone are not Sync)
        let base = base;
        let (rows, cols) = (t / n.div_ceil(COLUMNS_PER_TASK), t % n.div_ceil(COLUMNS_PER_TASK));
        let (r0, r1) = (rows * ROWS_PER_TASK, ((rows + 1) * ROWS_PER_TASK).min(m));
        let (c0, c1) = (cols * COLUMNS_PER_TASK, ((cols + 1) * COLUMNS_PER_TASK).min(n));
        // this task's weight rows' code sums, while they come into the cache for the products
        let mut sums = [0i32; COLUMNS_PER_TASK];
        for (c, sum) in (c0..c1).zip(&mut sums) {
            *sum = weight[c * k..][..k].iter().map(|&v| i32::from(v)).sum();
        }
        let scaling = Scaling { sums: sums.as_ptr(), first_column: c0, ..base };
        if use_vnni {
            // SAFETY: available() holds; the rows and columns lie inside x's codes, the weight
            // and the scaling's arrays; this task alone writes their block of the output.
            unsafe { vnni::products(k, (codes.as_ptr(), r0, r1), (weight.as_ptr(), c0, c1), scaling) };
        } else {
            for r in r0..r1 {
                for c in c0..c1 {
                    // SAFETY: as above.
                    unsafe { scaling.write(r, c, dot(&codes[r * k..][..k], &weight[c * k..][..k])) };
                }
            }
        }
    };
    let tasks = m.div_ceil(ROWS_PER_TASK) * n.div_ceil(COLUMNS_PER_TASK);
    if parallel && tasks > 1 {
        threads::install(|| (0..tasks).into_par_iter().for_each(task));
    } else {
        (0..tasks).for_each(task);
    }
    Ok(())
}

fn run_pack<T: Float>(spec: &PackInt8, launch: Launch<'_>) -> Result<()> {
    let (_, k) = spec.sizes(&[TensorMeta::new(launch.inputs[0].dtype(), launch.inputs[0].shape())])?;
    let weight = read::<T>(&launch.inputs[0])?;
    let largest = spec.layout.largest as f32;
    // SAFETY: the two outputs are this launch's own, distinct buffers.
    let (codes, scales) = unsafe { (write::<i8>(&launch.outputs[0])?, write::<f32>(&launch.outputs[1])?) };
    if k == 0 {
        scales.fill(0.0);
        return Ok(());
    }
    let rows = codes.par_chunks_mut(k).zip(scales.par_iter_mut()).zip(weight.par_chunks(k)).enumerate();
    // rows in parallel; a row with a value that is not finite refuses the call, the first such
    // row (in order) named
    let refused = threads::install(|| {
        rows.find_map_first(|(row, ((codes, scale), values))| {
            let magnitude = values.iter().fold(0.0f32, |a, v| a.max(v.to_f32().abs()));
            if !values.iter().all(|v| v.to_f32().is_finite()) {
                return Some(invalid(format!("pack_int8: row {row} of the weight holds a value that is not finite")));
            }
            *scale = magnitude / largest;
            let inverse = if magnitude > 0.0 { largest / magnitude } else { 0.0 };
            for (code, v) in codes.iter_mut().zip(values) {
                *code = (v.to_f32() * inverse).round_ties_even().clamp(-largest, largest) as i8;
            }
            None
        })
    });
    refused.map_or(Ok(()), Err)
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
    use super::quantize_row;
    use crate::tensor::Tensor;

    #[test]
    fn a_quantized_row_is_within_half_a_step_of_its_values_and_zero_is_a_code() {
        let x: Vec<f32> = (0..300).map(|i| ((i * 37 % 101) as f32 - 30.0) / 7.0).collect();
        let mut q = vec![0u8; x.len()];
        let (step, zero) = quantize_row(&x, &mut q);
        for (v, &c) in x.iter().zip(&q) {
            let back = (f32::from(c) - zero as f32) * step;
            assert!((back - v).abs() <= step * 0.5001, "{v} came back as {back}");
        }
        let (_, zero_of_positive) = quantize_row(&[0.5, 2.0], &mut [0, 0]);
        assert_eq!(zero_of_positive, 0, "a range widened to 0 starts at code 0");
    }

    #[test]
    fn products_match_the_dequantized_operands_in_float64() {
        // sizes crossing the 64-deep steps, the 4 × 4 blocks and the tasks' edges
        for (m, n, k) in [(1, 1, 1), (3, 5, 70), (4, 4, 64), (9, 67, 130), (65, 3, 384)] {
            let x: Vec<f32> = (0..m * k).map(|i| ((i * 13 % 29) as f32 - 9.0) / 3.0).collect();
            let w: Vec<f32> = (0..n * k).map(|i| ((i * 7 % 23) as f32 - 11.0) / 5.0).collect();
            let bias: Vec<f32> = (0..n).map(|i| i as f32 / 4.0).collect();
            let xt = Tensor::from_vec(x.clone(), &[m as i64, k as i64]).unwrap();
            let wt = Tensor::from_vec(w.clone(), &[n as i64, k as i64]).unwrap();
            let (codes, scales) = wt.pack_int8().unwrap();
            let bt = Tensor::from_vec(bias.clone(), &[n as i64]).unwrap();
            let y = xt.matmul_int8(&codes, &scales, Some(&bt)).unwrap().to_vec::<f32>().unwrap();
            let (c, s) = (codes.to_vec::<i8>().unwrap(), scales.to_vec::<f32>().unwrap());
            for r in 0..m {
                let row = &x[r * k..][..k];
                let mut q = vec![0u8; k];
                let (step, zero) = quantize_row(row, &mut q);
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|i| (f64::from(q[i]) - f64::from(zero)) * f64::from(step) * f64::from(c[j * k + i]))
                        .sum::<f64>()
                        * f64::from(s[j])
                        + f64::from(bias[j]);
                    let got = f64::from(y[r * n + j]);
                    assert!((got - want).abs() <= 1e-5 * (1.0 + want.abs()), "{m}x{n}x{k} ({r}, {j}): {got} vs {want}");
                }
            }
        }
    }

    #[test]
    fn a_row_that_is_not_finite_gives_nan_and_the_others_their_values() {
        let xt = Tensor::from_vec(vec![1.0f32, f32::NAN, 2.0, 0.5], &[2, 2]).unwrap();
        let wt = Tensor::from_vec(vec![1.0f32, 1.0], &[1, 2]).unwrap();
        let (codes, scales) = wt.pack_int8().unwrap();
        let y = xt.matmul_int8(&codes, &scales, None).unwrap().to_vec::<f32>().unwrap();
        assert!(y[0].is_nan(), "{y:?}");
        assert!((y[1] - 2.5).abs() < 0.02, "{y:?}");
        let bad = Tensor::from_vec(vec![1.0f32, f32::INFINITY], &[1, 2]).unwrap();
        let err = bad.pack_int8().unwrap_err().to_string();
        assert!(err.contains("pack_int8") && err.contains("row 0") && err.contains("not finite"), "{err}");
    }
}
