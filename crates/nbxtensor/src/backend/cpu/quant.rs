//! Products against packed 4-bit weights in the table's `int4-g128-asym` layout, and the
//! packer that makes them:
//!
//! - `matmul_int4(x, packed, scales, minima)`: `x [.., K]` (float32/float16/bfloat16) times
//!   `Wᵀ`, `W [N, K]` stored as `packed` codes `[N, K·bits/8]` (low bits first) with `scales`
//!   and `minima` `[N, K/group]` (`w = code·scale + minimum`) → `[.., N]` of x's dtype. Up to
//!   [`DIRECT_ROWS`] rows of x are multiplied straight from the codes (workspace: x widened,
//!   `4·M·K` bytes, and its per-group sums, `4·M·K/group`); more rows dequantize W once into
//!   float32 (`4·N·K` bytes more) and run one gemm.
//! - `pack_int4(weight [N, K])` (a float dtype) → `(packed, scales, minima)`: per group the
//!   minimum and `(max − min) / (2^bits − 1)` rounded to the scale dtype, codes rounded to
//!   nearest against those rounded values and clamped to the code range.
//!
//! Bits, group, code storage and scale dtype are read from the dtype table
//! (`DType::Int4G128Asym.packed()`), never written here.

use super::buffers::{par_pieces, read, write, Float, FLOATS};
use super::matmul::{batched, Dims, Operand};
use super::widen::{floats, widen};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::facts::Group;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::settings::threads;
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows of x up to which the product reads the codes directly (decoding); more rows
/// dequantize the weight once and use gemm (prefill).
pub const DIRECT_ROWS: usize = 8;

/// Output columns one task of the direct product computes.
const COLUMNS_PER_TASK: usize = 16;

/// The packed layout as the kernels use it.
#[derive(Clone, Copy, Debug)]
struct Layout {
    bits: u32,
    group: usize,
    /// Codes per storage byte.
    per_byte: usize,
}

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The `int4-g128-asym` layout from the table, checked to be what these loops serve: codes in
/// uint8, float16 scales and minima, a group of consecutive elements.
fn layout(op: &str) -> Result<Layout> {
    let dtype = DType::Int4G128Asym;
    let packed = dtype.packed().map_err(|e| invalid(format!("{op}: {e}")))?;
    let named = |name: &str| DType::from_name(name).map_err(|e| invalid(format!("{op}: {e}")));
    let minimum = packed.minimum.as_deref().map(named).transpose()?;
    let storage = named(&packed.storage)?;
    if named(&packed.scale)? != DType::Float16 || minimum != Some(DType::Float16) || storage != DType::Uint8 {
        return Err(invalid(format!("{op}: {dtype} in the table is not uint8 codes with float16 scales and minima")));
    }
    let Group::Elements(group) = packed.group else {
        return Err(invalid(format!("{op}: {dtype} in the table has no fixed group size")));
    };
    let byte_bits = storage.bits();
    if packed.bits == 0 || byte_bits % packed.bits != 0 {
        return Err(invalid(format!("{op}: {} bits do not divide a {storage} byte", packed.bits)));
    }
    Ok(Layout { bits: packed.bits, group: group as usize, per_byte: (byte_bits / packed.bits) as usize })
}

impl Layout {
    fn levels(&self) -> u32 {
        (1 << self.bits) - 1
    }

    /// Code `i` of a row of packed bytes.
    #[inline(always)]
    fn code(&self, row: &[u8], i: usize) -> u32 {
        (u32::from(row[i / self.per_byte]) >> ((i % self.per_byte) as u32 * self.bits)) & self.levels()
    }

    /// Refuses a K that is not a whole number of groups; returns the group count.
    fn groups(&self, op: &str, k: i64, what: &str) -> Result<usize> {
        if k < 0 || k as usize % self.group != 0 {
            return Err(invalid(format!("{op}: K = {k} of {what} is not a multiple of the group size {}", self.group)));
        }
        Ok(k as usize / self.group)
    }
}

/// `matmul_int4(x, packed, scales, minima)`.
struct MatmulInt4 {
    dtype: DType,
    layout: Layout,
}

/// Sizes of a call: rows of x, outputs, contracted extent, groups per row, output shape.
struct Plan {
    m: usize,
    n: usize,
    k: usize,
    groups: usize,
    out: Vec<i64>,
}

impl MatmulInt4 {
    fn plan(&self, inputs: &[TensorMeta]) -> Result<Plan> {
        let [x, packed, scales, minima] = inputs else {
            return Err(invalid(format!(
                "matmul_int4: takes 4 inputs (x, packed, scales, minima), got {}",
                inputs.len()
            )));
        };
        if x.dtype != self.dtype
            || packed.dtype != DType::Uint8
            || scales.dtype != DType::Float16
            || minima.dtype != DType::Float16
        {
            return Err(invalid(format!(
                "matmul_int4: wants x {}, packed uint8, scales and minima float16; got {}, {}, {}, {}",
                self.dtype, x.dtype, packed.dtype, scales.dtype, minima.dtype
            )));
        }
        let (Some(&k), &[n, bytes]) = (x.shape.last(), &packed.shape[..]) else {
            return Err(invalid(format!(
                "matmul_int4: x must be [.., K] and packed [N, K/{}], got {:?} and {:?}",
                self.layout.per_byte, x.shape, packed.shape
            )));
        };
        let groups = self.layout.groups("matmul_int4", k, &format!("x {:?}", x.shape))?;
        let per_byte = self.layout.per_byte as i64;
        if bytes * per_byte != k || scales.shape != [n, groups as i64] || minima.shape != scales.shape {
            return Err(invalid(format!(
                "matmul_int4: for x {:?} packed must be [N, {}] and scales, minima [N, {groups}]; got {:?}, {:?}, {:?}",
                x.shape,
                k / per_byte,
                packed.shape,
                scales.shape,
                minima.shape
            )));
        }
        let mut out = x.shape.clone();
        *out.last_mut().expect("x has a last dim") = n;
        let m = x.shape[..x.shape.len() - 1].iter().product::<i64>() as usize;
        Ok(Plan { m, n: n as usize, k: k as usize, groups, out })
    }

    /// Float32 values of workspace the plan uses: x widened, then its group sums (direct) or
    /// W dequantized and, for a half-precision output, the float32 product (gemm).
    fn workspace_floats(&self, plan: &Plan) -> usize {
        if plan.m <= DIRECT_ROWS {
            plan.m * plan.k + plan.m * plan.groups
        } else {
            let product = if self.dtype == DType::Float32 { 0 } else { plan.m * plan.n };
            plan.m * plan.k + plan.n * plan.k + product
        }
    }

    fn run<T: Float>(&self, launch: Launch<'_>) -> Result<()> {
        let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
        let plan = self.plan(&metas)?;
        let packed = read::<u8>(&launch.inputs[1])?;
        let (scales, minima) = (read::<f16>(&launch.inputs[2])?, read::<f16>(&launch.inputs[3])?);
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        let work = floats("matmul_int4", launch.workspace, self.workspace_floats(&plan))?;
        let (x, rest) = work.split_at_mut(plan.m * plan.k);
        widen::<T>(&launch.inputs[0], x)?;
        if out.is_empty() {
            return Ok(());
        }
        let weights = Weights {
            layout: self.layout,
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
            par_pieces(out, |start, piece| {
                piece.iter_mut().zip(&product[start..]).for_each(|(o, v)| *o = T::from_f32(*v))
            });
        }
        Ok(())
    }
}

/// A packed weight `[N, K]` as the loops read it.
struct Weights<'a> {
    layout: Layout,
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

impl Kernel for MatmulInt4 {
    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn key(&self) -> String {
        format!("matmul_int4:{}:{}", self.dtype.launch_key(), DType::Int4G128Asym.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let plan = self.plan(inputs)?;
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        let (m, n, k) = (plan.m as u64, plan.n as u64, plan.k as u64);
        // 2·m·n·k for the product, plus the weight's decoding (direct: 2 per group per output;
        // gemm: 2 per weight element).
        let decode = if plan.m <= DIRECT_ROWS { 3 * m * n * plan.groups as u64 } else { 2 * n * k };
        let mut cost = Cost::simple(vec![TensorMeta::new(self.dtype, &plan.out)], read, 2 * m * n * k + decode)?;
        cost.workspace = 4 * self.workspace_floats(&plan) as u64;
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(launch),
            DType::Float16 => self.run::<f16>(launch),
            DType::Bfloat16 => self.run::<bf16>(launch),
            other => Err(invalid(format!("matmul_int4: no loop for {other}"))),
        }
    }
}

/// `pack_int4(weight)`.
struct PackInt4 {
    dtype: DType,
    layout: Layout,
}

impl PackInt4 {
    /// `(n, k, groups)` of a valid weight.
    fn sizes(&self, inputs: &[TensorMeta]) -> Result<(usize, usize, usize)> {
        let [weight] = inputs else {
            return Err(invalid(format!("pack_int4: takes 1 input (weight), got {}", inputs.len())));
        };
        let [n, k] = weight.shape[..] else {
            return Err(invalid(format!("pack_int4: weight must be 2-d [N, K], got {:?}", weight.shape)));
        };
        let groups = self.layout.groups("pack_int4", k, &format!("weight {:?}", weight.shape))?;
        Ok((n as usize, k as usize, groups))
    }

    fn run<T: Float>(&self, launch: Launch<'_>) -> Result<()> {
        let (n, _, groups) = self.sizes(&[TensorMeta::new(launch.inputs[0].dtype(), launch.inputs[0].shape())])?;
        let weight = read::<T>(&launch.inputs[0])?;
        let layout = self.layout;
        let group = layout.group;
        // Check every group first: a non-finite weight or a range float16 cannot hold is refused.
        for (index, values) in weight.chunks(group.max(1)).enumerate() {
            let (low, high) = values
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), v| (l.min(v.to_f32()), h.max(v.to_f32())));
            let scale = f16::from_f32((high - low) / layout.levels() as f32);
            if !low.is_finite() || !high.is_finite() || !scale.is_finite() || !f16::from_f32(low).is_finite() {
                return Err(invalid(format!(
                    "pack_int4: group {} of row {} (values {low}..{high}) is not finite in float16",
                    index % groups.max(1),
                    index / groups.max(1)
                )));
            }
        }
        // SAFETY: the three outputs are this launch's own, distinct buffers.
        let (packed, scales, minima) = unsafe {
            (write::<u8>(&launch.outputs[0])?, write::<f16>(&launch.outputs[1])?, write::<f16>(&launch.outputs[2])?)
        };
        let bytes_per_group = group / layout.per_byte;
        for (index, values) in weight.chunks(group.max(1)).enumerate().take(n * groups) {
            let low = values.iter().map(|v| v.to_f32()).fold(f32::INFINITY, f32::min);
            let high = values.iter().map(|v| v.to_f32()).fold(f32::NEG_INFINITY, f32::max);
            let (scale, minimum) = (f16::from_f32((high - low) / layout.levels() as f32), f16::from_f32(low));
            scales[index] = scale;
            minima[index] = minimum;
            let (scale, minimum) = (scale.to_f32(), minimum.to_f32());
            let out = &mut packed[index * bytes_per_group..][..bytes_per_group];
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
        Ok(())
    }
}

impl Kernel for PackInt4 {
    fn key(&self) -> String {
        format!("pack_int4:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (n, k, groups) = self.sizes(inputs)?;
        let (n, groups) = (n as i64, groups as i64);
        let outputs = vec![
            TensorMeta::new(DType::Uint8, &[n, (k / self.layout.per_byte) as i64]),
            TensorMeta::new(DType::Float16, &[n, groups]),
            TensorMeta::new(DType::Float16, &[n, groups]),
        ];
        // Per element: min, max, subtract, divide, round.
        Cost::simple(outputs, inputs[0].bytes()?, 5 * inputs[0].numel()?)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(launch),
            DType::Float16 => self.run::<f16>(launch),
            DType::Bfloat16 => self.run::<bf16>(launch),
            other => Err(invalid(format!("pack_int4: no loop for {other}"))),
        }
    }
}

/// Registers `matmul_int4` (dispatching on x's float dtype) and `pack_int4` (on the weight's).
pub fn register(table: &mut CapabilityTable) {
    table.register("matmul_int4", &FLOATS, |dtype, attrs: &Attrs| {
        attrs.only("matmul_int4", &[])?;
        Ok(Box::new(MatmulInt4 { dtype, layout: layout("matmul_int4")? }))
    });
    table.register("pack_int4", &FLOATS, |dtype, attrs: &Attrs| {
        attrs.only("pack_int4", &[])?;
        Ok(Box::new(PackInt4 { dtype, layout: layout("pack_int4")? }))
    });
}

#[cfg(test)]
mod tests {
    use super::{layout, DIRECT_ROWS};
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;
    use half::f16;

    /// W dequantized by hand from the packed outputs, in float64.
    fn dequantized(packed: &Tensor, scales: &Tensor, minima: &Tensor, k: usize) -> Vec<f64> {
        let l = layout("test").unwrap();
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
        let l = layout("test").unwrap();
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
