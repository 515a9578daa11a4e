//! Matrix products on the float dtypes, computed in float32 through the `gemm` crate:
//!
//! - `matmul(a, b)`, attributes `transpose_a`, `transpose_b` (bools, default false): numpy's
//!   matmul — 2-d products, batch dims broadcast, a 1-d left operand is a row vector and a
//!   1-d right operand a column vector, their unit dim dropped from the output (a transpose
//!   attribute on a 1-d operand is refused);
//! - `linear(x, weight[, bias])`: `x · weightᵀ + bias` with `weight` `[out, in]`, the
//!   optional `bias` `[out]` a third input, any leading dims on `x`.
//!
//! Strided inputs (transposed, narrowed, broadcast) are read through their strides, never
//! copied. float16 and bfloat16 operands are widened into a declared float32 workspace
//! (`4 · (numel(a) + numel(b) + numel(out))` bytes), multiplied there and rounded back to
//! nearest even. Declared flops: `2·m·n·k` per matrix of the batch (plus `m·n` for a bias).
//!
//! ```
//! use nbxtensor::{kernel::{AttrValue, Attrs}, ops, tensor::Tensor};
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2])?; // read as [2, 3]
//! let b = Tensor::from_vec(vec![1.0f32, 0.0, 1.0], &[3])?;
//! let attrs = Attrs::new().with("transpose_a", AttrValue::Bool(true));
//! let y = ops::call("matmul", &attrs, &[&a, &b])?.remove(0);
//! assert_eq!((y.shape(), y.to_vec::<f32>()?), (&[2][..], vec![6.0, 8.0]));
//! # Ok::<(), nbxtensor::kernel::KernelError>(())
//! ```

mod product;

pub use product::{batched, Dims, Operand};

use super::buffers::{read, write, Float, FLOATS};
use super::widen::{floats, widen};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::shape;
use crate::tensor::Tensor;
use half::{bf16, f16};

/// One operand seen as a batch of matrices.
struct Side {
    rows: i64,
    cols: i64,
    row_stride: i64,
    col_stride: i64,
    batch: Vec<i64>,
    batch_strides: Vec<i64>,
    vector: bool,
}

/// Operand `shape` (with `strides`) as the left (`m × k`) or right (`k × n`) factor.
fn side(shape: &[i64], strides: &[i64], left: bool, transposed: bool) -> Side {
    let nd = shape.len();
    if nd == 1 {
        let (rows, cols, row_stride, col_stride) =
            if left { (1, shape[0], 0, strides[0]) } else { (shape[0], 1, strides[0], 0) };
        return Side { rows, cols, row_stride, col_stride, batch: Vec::new(), batch_strides: Vec::new(), vector: true };
    }
    let (mut rows, mut cols, mut row_stride, mut col_stride) =
        (shape[nd - 2], shape[nd - 1], strides[nd - 2], strides[nd - 1]);
    if transposed {
        (rows, cols, row_stride, col_stride) = (cols, rows, col_stride, row_stride);
    }
    Side {
        rows,
        cols,
        row_stride,
        col_stride,
        batch: shape[..nd - 2].to_vec(),
        batch_strides: strides[..nd - 2].to_vec(),
        vector: false,
    }
}

/// The strides of `side` along the output's `batch` dims (0 where it is broadcast).
fn batch_strides(side: &Side, batch: &[i64]) -> Vec<isize> {
    let skip = batch.len() - side.batch.len();
    (0..batch.len())
        .map(|i| match i.checked_sub(skip) {
            Some(j) if side.batch[j] != 1 => side.batch_strides[j] as isize,
            _ => 0,
        })
        .collect()
}

/// The operand gemm reads for `side` whose element (0, 0) is at `ptr`.
fn operand(side: &Side, batch: &[i64], ptr: *const f32) -> Operand {
    Operand {
        ptr,
        row_stride: side.row_stride as isize,
        col_stride: side.col_stride as isize,
        batch_strides: batch_strides(side, batch),
    }
}

/// A matmul or linear kernel bound to its attributes.
struct Product {
    op: &'static str,
    dtype: DType,
    transpose_a: bool,
    transpose_b: bool,
    /// linear: the right operand is `weight [out, in]`, optionally followed by a bias.
    linear: bool,
}

/// The shapes of a call: the product's dims, the output shape, and whether a bias comes.
struct Plan {
    dims: Dims,
    out: Vec<i64>,
    bias: bool,
}

impl Product {
    fn shape_text(meta: &TensorMeta) -> String {
        format!("{:?}", meta.shape)
    }

    fn plan(&self, inputs: &[TensorMeta]) -> Result<Plan> {
        let op = self.op;
        let counts: &[usize] = if self.linear { &[2, 3] } else { &[2] };
        if !counts.contains(&inputs.len()) {
            return Err(KernelError::Invalid(format!(
                "{op}: takes {} inputs, got {}",
                if self.linear { "2 or 3" } else { "2" },
                inputs.len()
            )));
        }
        if let Some(other) = inputs.iter().find(|m| m.dtype != self.dtype) {
            return Err(KernelError::Invalid(format!(
                "{op}: operands must share one dtype, got {} and {}",
                self.dtype, other.dtype
            )));
        }
        let (a, b) = (&inputs[0], &inputs[1]);
        if a.shape.is_empty() || b.shape.is_empty() {
            return Err(KernelError::Invalid(format!(
                "{op}: operands must have at least one dim, got {} and {}",
                Self::shape_text(a),
                Self::shape_text(b)
            )));
        }
        if self.linear && b.shape.len() != 2 {
            return Err(KernelError::Invalid(format!(
                "{op}: weight must be 2-d [out, in], got {}",
                Self::shape_text(b)
            )));
        }
        for (meta, transposed, name) in [(a, self.transpose_a, "transpose_a"), (b, self.transpose_b, "transpose_b")] {
            if transposed && meta.shape.len() == 1 {
                return Err(KernelError::Invalid(format!(
                    "{op}: {name} on a 1-d operand {} (a vector has no transpose)",
                    Self::shape_text(meta)
                )));
            }
        }
        let sa = side(&a.shape, &a.shape, true, self.transpose_a);
        let sb = side(&b.shape, &b.shape, false, self.transpose_b);
        if sa.cols != sb.rows {
            return Err(KernelError::Invalid(format!(
                "{op}: contracted dims differ: {} and {} ({} vs {})",
                Self::shape_text(a),
                Self::shape_text(b),
                sa.cols,
                sb.rows
            )));
        }
        let batch = shape::broadcast_shapes(&[&sa.batch, &sb.batch]).map_err(|_| {
            KernelError::Invalid(format!(
                "{op}: batch dims of {} and {} do not broadcast",
                Self::shape_text(a),
                Self::shape_text(b)
            ))
        })?;
        let bias = inputs.len() == 3;
        if bias && inputs[2].shape != [sb.cols] {
            return Err(KernelError::Invalid(format!(
                "{op}: bias must be [{}] for weight {}, got {}",
                sb.cols,
                Self::shape_text(b),
                Self::shape_text(&inputs[2])
            )));
        }
        let mut out = batch.clone();
        if !sa.vector {
            out.push(sa.rows);
        }
        if !sb.vector {
            out.push(sb.cols);
        }
        let dims = Dims {
            batch: batch.iter().map(|&d| d as usize).collect(),
            m: sa.rows as usize,
            n: sb.cols as usize,
            k: sa.cols as usize,
        };
        Ok(Plan { dims, out, bias })
    }

    /// Fills the output (`[.., m, n]` row-major float32) with the bias of each row, or not.
    fn fill_bias<T: Float>(inputs: &[Tensor], plan: &Plan, dst: &mut [f32]) -> Result<()> {
        if !plan.bias || plan.dims.n == 0 {
            return Ok(());
        }
        let bias = read::<T>(&inputs[2])?;
        let bias: Vec<f32> = bias.iter().map(|v| v.to_f32()).collect();
        dst.chunks_mut(plan.dims.n).for_each(|row| row.copy_from_slice(&bias));
        Ok(())
    }

    fn run<T: Float>(&self, launch: &mut Launch<'_>) -> Result<()> {
        let inputs = launch.inputs;
        let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
        let plan = self.plan(&metas)?;
        let (a, b) = (&inputs[0], &inputs[1]);
        let batch: Vec<i64> = plan.dims.batch.iter().map(|&d| d as i64).collect();
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        if T::DTYPE == DType::Float32 {
            // SAFETY: T is f32 (checked just above), so the output is float32.
            let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f32>(), out.len()) };
            Self::fill_bias::<T>(inputs, &plan, dst)?;
            let sa = side(a.shape(), a.strides(), true, self.transpose_a);
            let sb = side(b.shape(), b.strides(), false, self.transpose_b);
            let (oa, ob) = (operand(&sa, &batch, a.data_ptr().cast()), operand(&sb, &batch, b.data_ptr().cast()));
            // SAFETY: the operands address the inputs' elements through their own layouts.
            unsafe { batched(&plan.dims, &oa, &ob, dst, plan.bias) };
            return Ok(());
        }
        let (na, nb) = (a.numel() as usize, b.numel() as usize);
        let floats = floats(self.op, launch.workspace.reborrow(), na + nb + out.len())?;
        let (wa, rest) = floats.split_at_mut(na);
        let (wb, dst) = rest.split_at_mut(nb);
        widen::<T>(a, wa)?;
        widen::<T>(b, wb)?;
        Self::fill_bias::<T>(inputs, &plan, dst)?;
        let contiguous =
            |t: &Tensor| shape::contiguous_strides(t.shape()).map_err(|e| KernelError::Invalid(e.to_string()));
        let sa = side(a.shape(), &contiguous(a)?, true, self.transpose_a);
        let sb = side(b.shape(), &contiguous(b)?, false, self.transpose_b);
        let (oa, ob) = (operand(&sa, &batch, wa.as_ptr()), operand(&sb, &batch, wb.as_ptr()));
        // SAFETY: the operands address the widened copies, contiguous in their own shapes.
        unsafe { batched(&plan.dims, &oa, &ob, dst, plan.bias) };
        super::buffers::par_pieces(out, |start, piece| {
            for (o, v) in piece.iter_mut().zip(&dst[start..]) {
                *o = T::from_f32(*v);
            }
        });
        Ok(())
    }
}

impl Kernel for Product {
    fn uses_matrix_unit(&self) -> bool {
        true
    }

    fn key(&self) -> String {
        let mut key = format!("{}:{}", self.op, self.dtype.launch_key());
        if self.transpose_a {
            key.push_str(":ta");
        }
        if self.transpose_b && !self.linear {
            key.push_str(":tb");
        }
        key
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let plan = self.plan(inputs)?;
        let out = TensorMeta::new(self.dtype, &plan.out);
        let count = plan.dims.count() as u64;
        let (m, n, k) = (plan.dims.m as u64, plan.dims.n as u64, plan.dims.k as u64);
        let bias_flops = if plan.bias { count * m * n } else { 0 };
        let flops = count * 2 * m * n * k + bias_flops;
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        let mut cost = Cost::simple(vec![out.clone()], read, flops)?;
        if self.dtype != DType::Float32 {
            cost.workspace = 4 * (inputs[0].numel()? + inputs[1].numel()? + out.numel()?);
        }
        Ok(cost)
    }

    fn launch(&self, mut launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(&mut launch),
            DType::Float16 => self.run::<f16>(&mut launch),
            DType::Bfloat16 => self.run::<bf16>(&mut launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.op))),
        }
    }
}

fn build_matmul(dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    attrs.only("matmul", &["transpose_a", "transpose_b"])?;
    Ok(Box::new(Product {
        op: "matmul",
        dtype,
        transpose_a: attrs.bool("matmul", "transpose_a", Some(false))?,
        transpose_b: attrs.bool("matmul", "transpose_b", Some(false))?,
        linear: false,
    }))
}

fn build_linear(dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    attrs.only("linear", &[])?;
    Ok(Box::new(Product { op: "linear", dtype, transpose_a: false, transpose_b: true, linear: true }))
}

/// Registers `matmul` and `linear` on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("matmul", &FLOATS, build_matmul);
    table.register("linear", &FLOATS, build_linear);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;
    use half::bf16;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n).map(|i| ((i as u32 * 7 + seed * 13) % 17) as f32 / 4.0 - 2.0).collect()
    }

    /// Brute-force row-major `[batch, m, k] · [batch, k, n]` in float64.
    fn reference(a: &[f32], b: &[f32], batch: usize, m: usize, n: usize, k: usize) -> Vec<f32> {
        let mut out = vec![0.0f32; batch * m * n];
        for t in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    let s: f64 =
                        (0..k).map(|p| a[t * m * k + i * k + p] as f64 * b[t * k * n + p * n + j] as f64).sum();
                    out[t * m * n + i * n + j] = s as f32;
                }
            }
        }
        out
    }

    #[test]
    fn batched_product_with_a_transposed_operand_matches_brute_force() {
        let (batch, m, n, k) = (3, 5, 4, 6);
        let a = values(batch * m * k, 1);
        let b = values(batch * k * n, 2);
        let ta = Tensor::from_vec(a.clone(), &[3, 5, 6]).unwrap();
        // b stored as [batch, n, k] and read transposed.
        let mut bt = vec![0.0f32; b.len()];
        for t in 0..batch {
            for p in 0..k {
                for j in 0..n {
                    bt[t * n * k + j * k + p] = b[t * k * n + p * n + j];
                }
            }
        }
        let tb = Tensor::from_vec(bt, &[3, 4, 6]).unwrap();
        let attrs = Attrs::new().with("transpose_b", AttrValue::Bool(true));
        let out = call("matmul", &attrs, &[&ta, &tb]).unwrap().remove(0);
        assert_eq!(out.shape(), &[3, 5, 4]);
        assert_eq!(out.to_vec::<f32>().unwrap(), reference(&a, &b, batch, m, n, k));
    }

    #[test]
    fn vectors_drop_their_unit_dim_and_empty_k_gives_zeros() {
        let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let b = Tensor::from_vec(values(6, 3), &[3, 2]).unwrap();
        let out = call("matmul", &Attrs::new(), &[&a, &b]).unwrap().remove(0);
        assert_eq!(out.shape(), &[2]);
        assert_eq!(out.to_vec::<f32>().unwrap(), reference(&[1.0, 2.0, 3.0], &values(6, 3), 1, 1, 2, 3));
        let e = Tensor::from_vec(Vec::<f32>::new(), &[2, 0]).unwrap();
        let f = Tensor::from_vec(Vec::<f32>::new(), &[0, 3]).unwrap();
        assert_eq!(call("matmul", &Attrs::new(), &[&e, &f]).unwrap()[0].to_vec::<f32>().unwrap(), vec![0.0; 6]);
    }

    #[test]
    fn linear_in_bfloat16_adds_the_bias_and_rounds_once() {
        let x: Vec<f32> = values(8, 4);
        let w: Vec<f32> = values(12, 5);
        let bias = [0.5f32, -1.0, 2.0];
        let h = |v: &[f32]| v.iter().map(|&x| bf16::from_f32(x)).collect::<Vec<_>>();
        let (tx, tw, tb) = (
            Tensor::from_vec(h(&x), &[2, 4]).unwrap(),
            Tensor::from_vec(h(&w), &[3, 4]).unwrap(),
            Tensor::from_vec(h(&bias), &[3]).unwrap(),
        );
        let out = call("linear", &Attrs::new(), &[&tx, &tw, &tb]).unwrap().remove(0).to_vec::<bf16>().unwrap();
        for i in 0..2 {
            for j in 0..3 {
                let s: f32 = (0..4).map(|p| x[i * 4 + p] * w[j * 4 + p]).sum::<f32>() + bias[j];
                assert_eq!(out[i * 3 + j], bf16::from_f32(s));
            }
        }
    }

    #[test]
    fn refuses_mismatched_operands_by_name() {
        let a = Tensor::from_vec(values(6, 1), &[2, 3]).unwrap();
        let err = call("matmul", &Attrs::new(), &[&a, &a]).unwrap_err().to_string();
        assert!(err.contains("matmul") && err.contains("[2, 3]"), "{err}");
        let v = Tensor::from_vec(values(3, 1), &[3]).unwrap();
        let attrs = Attrs::new().with("transpose_a", AttrValue::Bool(true));
        assert!(call("matmul", &attrs, &[&v, &a.transpose(0, 1).unwrap()]).is_err());
    }
}
