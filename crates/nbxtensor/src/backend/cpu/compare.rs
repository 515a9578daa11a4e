//! Comparisons with numpy broadcasting: eq, ne, lt, le, gt, ge, to bool outputs.
//!
//! Both operands have the kernel's dtype (promotion happens above); floats compare their
//! values (float16 and bfloat16 widened exactly to float32, NaN unequal to everything),
//! integers their values, bools as false < true.

use super::binary::{check_pair, INTEGERS};
use super::broadcast::zip2;
use super::buffers::write;
use super::flags::as_bytes;
use super::math::{Stored, REALS};
use crate::backend::{CapabilityTable, KernelFactory};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::tensor::Element;
use half::{bf16, f16};

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

const OPS: [(Op, &str); 6] =
    [(Op::Eq, "eq"), (Op::Ne, "ne"), (Op::Lt, "lt"), (Op::Le, "le"), (Op::Gt, "gt"), (Op::Ge, "ge")];

struct Compare {
    op: Op,
    name: &'static str,
    dtype: DType,
}

/// Writes `out[i] = a[i] op b[i]` (0 or 1) for operands read as `T` and compared as `V`.
fn compare<T: Element, V: PartialOrd>(
    op: Op,
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
        Op::Eq => with!(V::eq),
        Op::Ne => with!(V::ne),
        Op::Lt => with!(V::lt),
        Op::Le => with!(V::le),
        Op::Gt => with!(V::gt),
        Op::Ge => with!(V::ge),
    }
}

fn run_float<T: Stored>(op: Op, launch: &Launch<'_>, out: &mut [u8]) -> Result<()> {
    compare::<T, _>(op, &launch.inputs[0], &launch.inputs[1], launch.outputs[0].shape(), out, T::load)
}

fn run_plain<T: Element + PartialOrd>(
    op: Op,
    a: &crate::tensor::Tensor,
    b: &crate::tensor::Tensor,
    shape: &[i64],
    out: &mut [u8],
) -> Result<()> {
    compare::<T, T>(op, a, b, shape, out, |v| v)
}

impl Kernel for Compare {
    fn key(&self) -> String {
        format!("{}:{}", self.name, self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let shape = check_pair(self.name, self.dtype, inputs)?;
        let out = TensorMeta::new(DType::Bool, &shape);
        let flops = out.numel()?;
        Cost::simple(vec![out], inputs[0].bytes()? + inputs[1].bytes()?, flops)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        let view = as_bytes(&launch.outputs[0])?;
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<u8>(&view)? };
        let (a, b, shape) = (&launch.inputs[0], &launch.inputs[1], launch.outputs[0].shape());
        match self.dtype {
            DType::Float32 => run_float::<f32>(self.op, &launch, out),
            DType::Float16 => run_float::<f16>(self.op, &launch, out),
            DType::Bfloat16 => run_float::<bf16>(self.op, &launch, out),
            DType::Float64 => run_float::<f64>(self.op, &launch, out),
            DType::Int8 => run_plain::<i8>(self.op, a, b, shape, out),
            DType::Int16 => run_plain::<i16>(self.op, a, b, shape, out),
            DType::Int32 => run_plain::<i32>(self.op, a, b, shape, out),
            DType::Int64 => run_plain::<i64>(self.op, a, b, shape, out),
            DType::Uint8 => run_plain::<u8>(self.op, a, b, shape, out),
            DType::Uint16 => run_plain::<u16>(self.op, a, b, shape, out),
            DType::Uint32 => run_plain::<u32>(self.op, a, b, shape, out),
            DType::Uint64 => run_plain::<u64>(self.op, a, b, shape, out),
            DType::Bool => compare::<u8, bool>(self.op, &as_bytes(a)?, &as_bytes(b)?, shape, out, |v| v != 0),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.name))),
        }
    }
}

fn build(name: &str, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let &(op, name) = OPS
        .iter()
        .find(|entry| entry.1 == name)
        .ok_or_else(|| KernelError::Invalid(format!("{name}: not a comparison")))?;
    attrs.only(name, &[])?;
    Ok(Box::new(Compare { op, name, dtype }))
}

macro_rules! factory {
    ($name:literal) => {
        |dtype, attrs| build($name, dtype, attrs)
    };
}

/// Registers the comparisons on the float and integer dtypes and bool.
pub fn register(table: &mut CapabilityTable) {
    let factories: [(&str, KernelFactory); 6] = [
        ("eq", factory!("eq")),
        ("ne", factory!("ne")),
        ("lt", factory!("lt")),
        ("le", factory!("le")),
        ("gt", factory!("gt")),
        ("ge", factory!("ge")),
    ];
    for (name, factory) in factories {
        table.register(name, &REALS, factory);
        table.register(name, &INTEGERS, factory);
        table.register(name, &[DType::Bool], factory);
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
