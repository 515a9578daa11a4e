//! Matrix products on the host: float32, float16 and bfloat16 computed in float32 through the
//! `gemm` crate; `matmul` also on float64 (through `gemm`, in float64) and the integers (a row
//! loop wrapping as the dtype's arithmetic, numpy's `matmul` of integers):
//!
//! - `matmul(a, b)`, attributes `transpose_a`, `transpose_b` (bools, default false): numpy's
//!   matmul — 2-d products, batch dims broadcast, a 1-d left operand is a row vector and a
//!   1-d right operand a column vector, their unit dim dropped from the output (a transpose
//!   attribute on a 1-d operand is refused);
//! - `linear(x, weight[, bias])`: `x · weightᵀ + bias` with `weight` `[out, in]`, the
//!   optional `bias` `[out]` a third input, any leading dims on `x`;
//! - `pack_linear` and `linear_packed` (float32): a constant weight laid out once in panels,
//!   its products packing nothing (`packed.rs`).
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

mod packed;
mod product;
mod rows_dot;

pub use packed::native as packed_native;
pub use product::{batched, float_product, Dims, Entry, Matrix, Operand};

use super::buffers::{read, write, Float};
use super::widen::{floats, widen};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::matmul::Product;
use crate::shape;
use crate::tensor::{Complex, Tensor};
use half::{bf16, f16};

/// One operand's strides as a factor of the product (its batch dims and their strides).
struct Side {
    row_stride: i64,
    col_stride: i64,
    batch: Vec<i64>,
    batch_strides: Vec<i64>,
}

/// Operand `shape` (with `strides`) as the left (`m × k`) or right (`k × n`) factor: its row
/// and column strides (a vector's unit dim has stride 0), transposed when asked.
fn side(shape: &[i64], strides: &[i64], left: bool, transposed: bool) -> Side {
    let nd = shape.len();
    if nd == 1 {
        let (row_stride, col_stride) = if left { (0, strides[0]) } else { (strides[0], 0) };
        return Side { row_stride, col_stride, batch: Vec::new(), batch_strides: Vec::new() };
    }
    let (row_stride, col_stride) = (strides[nd - 2], strides[nd - 1]);
    let (row_stride, col_stride) = if transposed { (col_stride, row_stride) } else { (row_stride, col_stride) };
    Side { row_stride, col_stride, batch: shape[..nd - 2].to_vec(), batch_strides: strides[..nd - 2].to_vec() }
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
fn operand<T>(side: &Side, batch: &[i64], ptr: *const T) -> Operand<T> {
    Operand {
        ptr,
        row_stride: side.row_stride as isize,
        col_stride: side.col_stride as isize,
        batch_strides: batch_strides(side, batch),
    }
}

/// The product's dims of a call, from the spec's shapes.
struct Plan {
    dims: Dims,
    bias: bool,
}

fn plan(spec: &Product, inputs: &[TensorMeta]) -> Result<Plan> {
    let shapes = spec.shapes(inputs)?;
    let dims = Dims {
        batch: shapes.batch.iter().map(|&d| d as usize).collect(),
        m: shapes.m as usize,
        n: shapes.n as usize,
        k: shapes.k as usize,
    };
    Ok(Plan { dims, bias: shapes.bias })
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

fn run<T: Float>(spec: &Product, launch: &mut Launch<'_>) -> Result<()> {
    let inputs = launch.inputs;
    let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let plan = plan(spec, &metas)?;
    let (a, b) = (&inputs[0], &inputs[1]);
    let batch: Vec<i64> = plan.dims.batch.iter().map(|&d| d as i64).collect();
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    if T::DTYPE == DType::Float32 {
        // SAFETY: T is f32 (checked just above), so the output is float32.
        let dst = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<f32>(), out.len()) };
        fill_bias::<T>(inputs, &plan, dst)?;
        let sa = side(a.shape(), a.strides(), true, spec.transpose_a);
        let sb = side(b.shape(), b.strides(), false, spec.transpose_b);
        let (oa, ob) = (operand(&sa, &batch, a.data_ptr().cast()), operand(&sb, &batch, b.data_ptr().cast()));
        // SAFETY: the operands address the inputs' elements through their own layouts.
        unsafe { batched(&plan.dims, &oa, &ob, dst, plan.bias) };
        return Ok(());
    }
    let (na, nb) = (a.numel() as usize, b.numel() as usize);
    let floats = floats(spec.op, launch.workspace.reborrow(), na + nb + out.len())?;
    let (wa, rest) = floats.split_at_mut(na);
    let (wb, dst) = rest.split_at_mut(nb);
    widen::<T>(a, wa)?;
    widen::<T>(b, wb)?;
    fill_bias::<T>(inputs, &plan, dst)?;
    let contiguous = |t: &Tensor| shape::contiguous_strides(t.shape()).map_err(|e| KernelError::Invalid(e.to_string()));
    let sa = side(a.shape(), &contiguous(a)?, true, spec.transpose_a);
    let sb = side(b.shape(), &contiguous(b)?, false, spec.transpose_b);
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

/// `matmul` of float64 or an integer dtype: the product computed in the dtype itself, each
/// operand read through its strides (no workspace, no bias: linear takes the floats only).
fn run_exact<T: Entry + crate::tensor::Element>(spec: &Product, launch: &Launch<'_>) -> Result<()> {
    let inputs = launch.inputs;
    let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let plan = plan(spec, &metas)?;
    let (a, b) = (&inputs[0], &inputs[1]);
    if let Some(other) = [a, b].iter().find(|t| t.dtype() != T::DTYPE) {
        return Err(KernelError::Invalid(format!(
            "{}: a {} loop was given a {} operand",
            spec.op,
            T::DTYPE,
            other.dtype()
        )));
    }
    let batch: Vec<i64> = plan.dims.batch.iter().map(|&d| d as i64).collect();
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let sa = side(a.shape(), a.strides(), true, spec.transpose_a);
    let sb = side(b.shape(), b.strides(), false, spec.transpose_b);
    let (oa, ob) = (operand(&sa, &batch, a.data_ptr().cast::<T>()), operand(&sb, &batch, b.data_ptr().cast::<T>()));
    // SAFETY: the operands address the inputs' elements through their own layouts.
    unsafe { batched(&plan.dims, &oa, &ob, out, false) };
    Ok(())
}

/// The workspace of a product: float16 and bfloat16 operands and the output widened to
/// float32, `4 · (numel(a) + numel(b) + numel(out))` bytes; none for float32.
fn workspace(spec: &Product, inputs: &[TensorMeta]) -> Result<u64> {
    if !matches!(spec.dtype, DType::Float16 | DType::Bfloat16) {
        return Ok(0);
    }
    let shapes = spec.shapes(inputs)?;
    let out = TensorMeta::new(spec.dtype, &shapes.out);
    Ok(4 * (inputs[0].numel()? + inputs[1].numel()? + out.numel()?))
}

fn launch(spec: &Product, mut launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, &mut launch),
        DType::Float16 => run::<f16>(spec, &mut launch),
        DType::Bfloat16 => run::<bf16>(spec, &mut launch),
        DType::Float64 => run_exact::<f64>(spec, &launch),
        DType::Int8 => run_exact::<i8>(spec, &launch),
        DType::Int16 => run_exact::<i16>(spec, &launch),
        DType::Int32 => run_exact::<i32>(spec, &launch),
        DType::Int64 => run_exact::<i64>(spec, &launch),
        DType::Uint8 => run_exact::<u8>(spec, &launch),
        DType::Uint16 => run_exact::<u16>(spec, &launch),
        DType::Uint32 => run_exact::<u32>(spec, &launch),
        DType::Uint64 => run_exact::<u64>(spec, &launch),
        DType::Complex64 => run_exact::<Complex<f32>>(spec, &launch),
        DType::Complex128 => run_exact::<Complex<f64>>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op))),
    }
}

/// Registers `matmul` on the floats, the integers and the complex dtypes, `linear` on float32, float16 and
/// bfloat16, `pack_linear` and `linear_packed` on float32.
pub fn register(table: &mut LaunchTable) {
    packed::register(table);
    table.register_with_workspace("matmul", &crate::ops::spec::ARITHMETIC, launch, workspace);
    table.register_with_workspace("linear", &crate::ops::spec::FLOATS, launch, workspace);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;
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
    fn float64_and_integer_products_compute_in_their_dtype() {
        let (batch, m, n, k) = (2, 3, 4, 5);
        let a: Vec<f64> = values(batch * m * k, 6).iter().map(|&v| f64::from(v) + 1e-9).collect();
        let b: Vec<f64> = values(batch * k * n, 7).iter().map(|&v| f64::from(v)).collect();
        let (ta, tb) =
            (Tensor::from_vec(a.clone(), &[2, 3, 5]).unwrap(), Tensor::from_vec(b.clone(), &[2, 5, 4]).unwrap());
        let out = ta.matmul(&tb).unwrap().to_vec::<f64>().unwrap();
        for t in 0..batch {
            for i in 0..m {
                for j in 0..n {
                    let s: f64 = (0..k).map(|p| a[t * m * k + i * k + p] * b[t * k * n + p * n + j]).sum();
                    assert!(
                        (out[t * m * n + i * n + j] - s).abs() <= 1e-12 * s.abs().max(1.0),
                        "float64 keeps its precision"
                    );
                }
            }
        }
        // int8 wraps as numpy's: 100·100 + 100·100 = 20000 ≡ 32 (mod 256)
        let x = Tensor::from_vec(vec![100i8, 100, -3, 2], &[2, 2]).unwrap();
        let y = Tensor::from_vec(vec![100i8, 1, 100, 1], &[2, 2]).unwrap();
        let p = x.matmul(&y).unwrap();
        assert_eq!((p.dtype(), p.to_vec::<i8>().unwrap()), (DType::Int8, vec![32, -56, -100, -1]));
        // a transposed right operand, a vector on the left, unsigned
        let u = Tensor::from_vec(vec![1u32, 2, 3, 4, 5, 6], &[2, 3]).unwrap();
        let v = Tensor::from_vec(vec![1u32, 10], &[2]).unwrap();
        assert_eq!(v.matmul(&u).unwrap().to_vec::<u32>().unwrap(), vec![41, 52, 63]);
        let w = Tensor::from_vec(vec![1u32, 0, 2], &[3]).unwrap();
        assert_eq!(u.matmul(&w).unwrap().to_vec::<u32>().unwrap(), vec![7, 16]);
        let ut = u.transpose(0, 1).unwrap();
        assert_eq!(ut.matmul(&v.reshape(&[2, 1]).unwrap()).unwrap().to_vec::<u32>().unwrap(), vec![41, 52, 63]);
        let e = Tensor::from_vec(Vec::<i64>::new(), &[2, 0]).unwrap();
        let f = Tensor::from_vec(Vec::<i64>::new(), &[0, 3]).unwrap();
        assert_eq!(e.matmul(&f).unwrap().to_vec::<i64>().unwrap(), vec![0; 6]);
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
