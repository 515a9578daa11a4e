//! The int4 ops on the host (`ops::spec::quant` says what they compute). Up to
//! [`DIRECT_ROWS`] rows of x are multiplied straight from the codes (workspace: x widened,
//! `4·M·K` bytes, and its per-group sums, `4·M·K/group`); more rows dequantize W once into
//! float32 (`4·N·K` bytes more, and `4·M·N` for a half-precision output) and run one gemm.

use crate::backend::cpu::buffers::{par_pieces, read, write, Float};
use crate::backend::cpu::matmul::{batched, Dims, Operand};
use crate::backend::cpu::widen::{floats, widen};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::quant::{Int4Layout, Int4Shape, MatmulInt4, PackInt4};
use crate::settings::threads;
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows of x up to which the product reads the codes directly (decoding); more rows
/// dequantize the weight once and use gemm (prefill).
pub const DIRECT_ROWS: usize = 8;

/// Output columns one task of the direct product computes.
const COLUMNS_PER_TASK: usize = 16;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// Float32 values of workspace a call uses: x widened, then its group sums (direct) or W
/// dequantized and, for a half-precision output, the float32 product (gemm).
/// Saturating: declared before the output is allocated, when the extents of a call the
/// allocation will refuse may multiply past 64 bits.
fn workspace_floats(spec: &MatmulInt4, plan: &Int4Shape) -> usize {
    let times = |a: usize, b: usize| a.saturating_mul(b);
    if plan.m <= DIRECT_ROWS {
        times(plan.m, plan.k).saturating_add(times(plan.m, plan.groups))
    } else {
        let product = if spec.dtype == DType::Float32 { 0 } else { times(plan.m, plan.n) };
        times(plan.m, plan.k).saturating_add(times(plan.n, plan.k)).saturating_add(product)
    }
}

fn run_matmul<T: Float>(spec: &MatmulInt4, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let plan = spec.sizes(&metas)?;
    let packed = read::<u8>(&launch.inputs[1])?;
    let (scales, minima) = (read::<f16>(&launch.inputs[2])?, read::<f16>(&launch.inputs[3])?);
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let work = floats("matmul_int4", launch.workspace, workspace_floats(spec, &plan))?;
    let (x, rest) = work.split_at_mut(plan.m * plan.k);
    widen::<T>(&launch.inputs[0], x)?;
    if out.is_empty() {
        return Ok(());
    }
    let weights = Weights {
        layout: spec.layout,
        packed: &packed,
        scales: &scales,
        minima: &minima,
        k: plan.k,
        groups: plan.groups,
    };
    if plan.m <= DIRECT_ROWS {
        weights.direct(x, plan.n, &mut rest[..plan.m * plan.groups], out);
        return Ok(());
    }
    let (w, product) = rest.split_at_mut(plan.n * plan.k);
    weights.dequantize(w);
    let dims = Dims { batch: Vec::new(), m: plan.m, n: plan.n, k: plan.k };
    let a = Operand { ptr: x.as_ptr(), row_stride: plan.k as isize, col_stride: 1, batch_strides: Vec::new() };
    let b = Operand { ptr: w.as_ptr(), row_stride: 1, col_stride: plan.k as isize, batch_strides: Vec::new() };
    if T::DTYPE == DType::Float32 {
        // SAFETY: T is f32 (checked just above).
        let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f32>(), out.len()) };
        // SAFETY: a is x [m, k] and b is w [n, k] read transposed, both in the workspace.
        unsafe { batched(&dims, &a, &b, dst, false) };
    } else {
        // SAFETY: as above.
        unsafe { batched(&dims, &a, &b, product, false) };
        par_pieces(out, |start, piece| piece.iter_mut().zip(&product[start..]).for_each(|(o, v)| *o = T::from_f32(*v)));
    }
    Ok(())
}

/// A packed weight `[N, K]` as the loops read it.
struct Weights<'a> {
    layout: Int4Layout,
    packed: &'a [u8],
    scales: &'a [f16],
    minima: &'a [f16],
    k: usize,
    groups: usize,
}

impl Weights<'_> {
    /// The codes of weight row `c`.
    fn row(&self, c: usize) -> &[u8] {
        let bytes = self.k / self.layout.per_byte;
        &self.packed[c * bytes..][..bytes]
    }

    /// W in float32, row-major `[N, K]`.
    fn dequantize(&self, w: &mut [f32]) {
        let (layout, groups) = (self.layout, self.groups);
        threads::install(|| {
            w.par_chunks_mut(self.k).enumerate().for_each(|(c, row)| {
                let codes = self.row(c);
                for (i, value) in row.iter_mut().enumerate() {
                    let g = c * groups + i / layout.group;
                    *value = layout.code(codes, i) as f32 * self.scales[g].to_f32() + self.minima[g].to_f32();
                }
            })
        });
    }

    /// `out [m, n] = x [m, k] · Wᵀ` from the codes: per group, `scale · Σ x·code + minimum · Σ x`
    /// (`sums` receives the `Σ x` of each row and group).
    fn direct<T: Float>(&self, x: &[f32], n: usize, sums: &mut [f32], out: &mut [T]) {
        let (layout, k, groups) = (self.layout, self.k, self.groups);
        for (r, row_sums) in sums.chunks_mut(groups.max(1)).enumerate() {
            for (g, s) in row_sums.iter_mut().enumerate() {
                *s = x[r * k + g * layout.group..][..layout.group].iter().sum();
            }
        }
        let sums = &*sums;
        for (r, out_row) in out.chunks_mut(n.max(1)).enumerate() {
            let xr = &x[r * k..][..k];
            let row_sums = &sums[r * groups..][..groups];
            let one = |(task, piece): (usize, &mut [T])| {
                for (j, o) in piece.iter_mut().enumerate() {
                    let c = task * COLUMNS_PER_TASK + j;
                    let codes = self.row(c);
                    let mut total = 0.0f32;
                    for g in 0..groups {
                        let xs = &xr[g * layout.group..][..layout.group];
                        let bytes = &codes[g * layout.group / layout.per_byte..][..layout.group / layout.per_byte];
                        let mut dot = 0.0f32;
                        for (chunk, byte) in xs.chunks_exact(layout.per_byte).zip(bytes) {
                            for (s, v) in chunk.iter().enumerate() {
                                let code = (u32::from(*byte) >> (s as u32 * layout.bits)) & layout.levels();
                                dot += v * code as f32;
                            }
                        }
                        let at = c * groups + g;
                        total += self.scales[at].to_f32() * dot + self.minima[at].to_f32() * row_sums[g];
                    }
                    *o = T::from_f32(total);
                }
            };
            threads::install(|| out_row.par_chunks_mut(COLUMNS_PER_TASK).enumerate().for_each(one));
        }
    }
}

/// The scale and minimum of one group, refused by name where a value is not finite or the
/// range does not fit float16 (`index`: the group's place in the weight).
fn group_range<T: Float>(layout: &Int4Layout, groups: usize, index: usize, values: &[T]) -> Result<(f16, f16)> {
    let (low, high) =
        values.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), v| (l.min(v.to_f32()), h.max(v.to_f32())));
    let scale = f16::from_f32((high - low) / layout.levels() as f32);
    // f32::min and max skip NaN: a NaN weight is looked for by itself
    let nan = values.iter().any(|v| v.to_f32().is_nan());
    if nan || !low.is_finite() || !high.is_finite() || !scale.is_finite() || !f16::from_f32(low).is_finite() {
        return Err(invalid(format!(
            "pack_int4: group {} of row {} (values {low}..{high}) is not finite in float16",
            index % groups.max(1),
            index / groups.max(1)
        )));
    }
    Ok((scale, f16::from_f32(low)))
}

fn run_pack<T: Float>(spec: &PackInt4, launch: Launch<'_>) -> Result<()> {
    let (n, k, groups) = spec.sizes(&[TensorMeta::new(launch.inputs[0].dtype(), launch.inputs[0].shape())])?;
    let weight = read::<T>(&launch.inputs[0])?;
    let layout = spec.layout;
    let group = layout.group.max(1);
    // SAFETY: the three outputs are this launch's own, distinct buffers.
    let (packed, scales, minima) = unsafe {
        (write::<u8>(&launch.outputs[0])?, write::<f16>(&launch.outputs[1])?, write::<f16>(&launch.outputs[2])?)
    };
    let bytes_per_group = group / layout.per_byte;
    let rows = packed.par_chunks_mut((k / layout.per_byte).max(1)).zip(scales.par_chunks_mut(groups.max(1)));
    let rows = rows.zip(minima.par_chunks_mut(groups.max(1))).zip(weight.par_chunks(k.max(1))).enumerate().take(n);
    // rows in parallel; a non-finite weight or a range float16 cannot hold refuses the call, the
    // first such group (in order) named
    let refused = threads::install(|| {
        rows.find_map_first(|(row, (((packed, scales), minima), values))| {
            for (g, values) in values.chunks(group).enumerate() {
                let (scale, minimum) = match group_range(&layout, groups, row * groups + g, values) {
                    Ok(range) => range,
                    Err(refused) => return Some(refused),
                };
                scales[g] = scale;
                minima[g] = minimum;
                let (scale, minimum) = (scale.to_f32(), minimum.to_f32());
                let out = &mut packed[g * bytes_per_group..][..bytes_per_group];
                for (byte, chunk) in out.iter_mut().zip(values.chunks_exact(layout.per_byte)) {
                    *byte = chunk.iter().enumerate().fold(0u8, |acc, (s, v)| {
                        let code = if scale > 0.0 {
                            ((v.to_f32() - minimum) / scale).round().clamp(0.0, layout.levels() as f32)
                        } else {
                            0.0
                        };
                        acc | ((code as u8) << (s as u32 * layout.bits))
                    });
                }
            }
            None
        })
    });
    refused.map_or(Ok(()), Err)
}

fn workspace(spec: &MatmulInt4, inputs: &[TensorMeta]) -> Result<u64> {
    Ok((workspace_floats(spec, &spec.sizes(inputs)?) as u64).saturating_mul(4))
}

fn launch_matmul(spec: &MatmulInt4, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run_matmul::<f32>(spec, launch),
        DType::Float16 => run_matmul::<f16>(spec, launch),
        DType::Bfloat16 => run_matmul::<bf16>(spec, launch),
        other => Err(invalid(format!("matmul_int4: no loop for {other}"))),
    }
}

fn launch_pack(spec: &PackInt4, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run_pack::<f32>(spec, launch),
        DType::Float16 => run_pack::<f16>(spec, launch),
        DType::Bfloat16 => run_pack::<bf16>(spec, launch),
        other => Err(invalid(format!("pack_int4: no loop for {other}"))),
    }
}

/// Registers `matmul_int4` (dispatched on x's dtype) and `pack_int4` (on the weight's).
pub fn register(table: &mut LaunchTable) {
    table.register_with_workspace("matmul_int4", &crate::ops::spec::FLOATS, launch_matmul, workspace);
    table.register("pack_int4", &crate::ops::spec::FLOATS, launch_pack);
}

#[cfg(test)]
mod tests {
    use super::DIRECT_ROWS;
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::ops::spec::quant::Int4Layout;
    use crate::tensor::Tensor;
    use half::f16;

    /// W dequantized by hand from the packed outputs, in float64.
    fn dequantized(packed: &Tensor, scales: &Tensor, minima: &Tensor, k: usize) -> Vec<f64> {
        let l = Int4Layout::of_table("test").unwrap();
        let (p, s, m) =
            (packed.to_vec::<u8>().unwrap(), scales.to_vec::<f16>().unwrap(), minima.to_vec::<f16>().unwrap());
        let n = p.len() * l.per_byte / k;
        let mut w = Vec::new();
        for r in 0..n {
            for i in 0..k {
                let byte = p[(r * k + i) / l.per_byte];
                let code = (byte >> ((i % l.per_byte) as u32 * l.bits)) & ((1u8 << l.bits) - 1);
                let g = r * (k / l.group) + i / l.group;
                w.push(code as f64 * s[g].to_f64() + m[g].to_f64());
            }
        }
        w
    }

    #[test]
    fn packing_stays_within_half_a_step_and_both_products_agree_with_the_dequantized_weight() {
        let l = Int4Layout::of_table("test").unwrap();
        let (n, k) = (3, 2 * l.group);
        let w: Vec<f32> = (0..n * k).map(|i| ((i * 37 % 101) as f32 / 50.0 - 1.0) * (1 + i / k) as f32).collect();
        let weight = Tensor::from_vec(w.clone(), &[n as i64, k as i64]).unwrap();
        let mut packed = call("pack_int4", &Attrs::new(), &[&weight]).unwrap();
        let (p, s, m) = (packed.remove(0), packed.remove(0), packed.remove(0));
        let deq = dequantized(&p, &s, &m, k);
        let steps = s.to_vec::<f16>().unwrap();
        for (i, (&orig, &back)) in w.iter().zip(&deq).enumerate() {
            let step = steps[i / l.group].to_f64();
            assert!((orig as f64 - back).abs() <= step * 0.5 + 1e-3 * step + 1e-6, "{i}: {orig} vs {back}");
        }
        for rows in [1, DIRECT_ROWS + 1] {
            let x: Vec<f32> = (0..rows * k).map(|i| ((i * 13 % 29) as f32 - 14.0) / 7.0).collect();
            let xt = Tensor::from_vec(x.clone(), &[rows as i64, k as i64]).unwrap();
            let out =
                call("matmul_int4", &Attrs::new(), &[&xt, &p, &s, &m]).unwrap().remove(0).to_vec::<f32>().unwrap();
            for r in 0..rows {
                for c in 0..n {
                    let reference: f64 = (0..k).map(|i| x[r * k + i] as f64 * deq[c * k + i]).sum();
                    let magnitude: f64 = (0..k).map(|i| (x[r * k + i] as f64 * deq[c * k + i]).abs()).sum();
                    assert!((out[r * n + c] as f64 - reference).abs() <= 1e-5 * magnitude, "{rows} rows, ({r}, {c})");
                }
            }
        }
    }

    #[test]
    fn refuses_a_k_that_is_not_whole_groups() {
        let weight = Tensor::from_vec(vec![0.5f32; 6], &[2, 3]).unwrap();
        let err = call("pack_int4", &Attrs::new(), &[&weight]).unwrap_err().to_string();
        assert!(err.contains("pack_int4") && err.contains("multiple of the group size"), "{err}");
    }
}
