//! Comparisons with numpy broadcasting: eq, ne, lt, le, gt, ge, to bool outputs.
//!
//! Both operands have the op's dtype (promotion happens above); floats compare their
//! values (float16 and bfloat16 widened exactly to float32, NaN unequal to everything),
//! integers their values, bools as false < true.

use super::broadcast::zip2;
use super::buffers::write;
use super::flags::as_bytes;
use super::math::Stored;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};
use crate::tensor::Element;
use half::{bf16, f16};

/// Writes `out[i] = a[i] op b[i]` (0 or 1) for operands read as `T` and compared as `V`.
fn compare<T: Element, V: PartialOrd>(
    op: BinaryOp,
    a: &crate::tensor::Tensor,
    b: &crate::tensor::Tensor,
    shape: &[i64],
    out: &mut [u8],
    value: impl Fn(T) -> V + Sync,
) -> Result<()> {
    macro_rules! with {
        ($cmp:expr) => {
            zip2(a, b, shape, out, |p: T, q: T| u8::from($cmp(&value(p), &value(q))))
        };
    }
    match op {
        BinaryOp::Eq => with!(V::eq),
        BinaryOp::Ne => with!(V::ne),
        BinaryOp::Lt => with!(V::lt),
        BinaryOp::Le => with!(V::le),
        BinaryOp::Gt => with!(V::gt),
        BinaryOp::Ge => with!(V::ge),
        other => Err(KernelError::Invalid(format!("{}: not a comparison", other.name()))),
    }
}

fn run_float<T: Stored>(op: BinaryOp, launch: &Launch<'_>, out: &mut [u8]) -> Result<()> {
    compare::<T, _>(op, &launch.inputs[0], &launch.inputs[1], launch.outputs[0].shape(), out, T::load)
}

fn run_plain<T: Element + PartialOrd>(
    op: BinaryOp,
    a: &crate::tensor::Tensor,
    b: &crate::tensor::Tensor,
    shape: &[i64],
    out: &mut [u8],
) -> Result<()> {
    compare::<T, T>(op, a, b, shape, out, |v| v)
}

fn launch(spec: &Binary, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        // eq and ne: the complex family's loop writes its own output
        DType::Complex64 => return super::complex::binary::<f32>(spec, &launch),
        DType::Complex128 => return super::complex::binary::<f64>(spec, &launch),
        _ => {}
    }
    let view = as_bytes(&launch.outputs[0])?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<u8>(&view)? };
    let (a, b, shape) = (&launch.inputs[0], &launch.inputs[1], launch.outputs[0].shape());
    let op = spec.op;
    match spec.dtype {
        DType::Float32 => run_float::<f32>(op, &launch, out),
        DType::Float16 => run_float::<f16>(op, &launch, out),
        DType::Bfloat16 => run_float::<bf16>(op, &launch, out),
        DType::Float64 => run_float::<f64>(op, &launch, out),
        DType::Int8 => run_plain::<i8>(op, a, b, shape, out),
        DType::Int16 => run_plain::<i16>(op, a, b, shape, out),
        DType::Int32 => run_plain::<i32>(op, a, b, shape, out),
        DType::Int64 => run_plain::<i64>(op, a, b, shape, out),
        DType::Uint8 => run_plain::<u8>(op, a, b, shape, out),
        DType::Uint16 => run_plain::<u16>(op, a, b, shape, out),
        DType::Uint32 => run_plain::<u32>(op, a, b, shape, out),
        DType::Uint64 => run_plain::<u64>(op, a, b, shape, out),
        DType::Bool => compare::<u8, bool>(op, &as_bytes(a)?, &as_bytes(b)?, shape, out, |v| v != 0),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", op.name()))),
    }
}

/// Registers the comparisons on every dtype they take.
pub fn register(table: &mut LaunchTable) {
    for op in BinaryOp::all().filter(|op| op.is_comparison()) {
        table.register(op.name(), &op.dtypes(), launch);
    }
}
#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;

    #[test]
    fn comparisons_give_bools_and_nan_is_unequal() {
        let a = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0], &[3]).unwrap();
        let b = Tensor::from_vec(vec![2.0f32], &[1]).unwrap();
        let bytes = |op: &str| {
            let out = call(op, &Attrs::new(), &[&a, &b]).unwrap().remove(0);
            assert_eq!(out.dtype(), DType::Bool);
            out.to_bytes().unwrap()
        };
        assert_eq!(bytes("lt"), vec![1, 0, 0]);
        assert_eq!(bytes("ge"), vec![0, 0, 1]);
        assert_eq!(bytes("ne"), vec![1, 1, 1]);
        assert_eq!(bytes("eq"), vec![0, 0, 0]);
    }
}
