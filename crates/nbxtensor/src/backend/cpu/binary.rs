//! Binary arithmetic kernels with numpy broadcasting: add, sub, mul, div, pow, maximum,
//! minimum.
//!
//! Both operands have the kernel's dtype (promotion happens above, in the Python ops); the
//! output has their broadcast shape. Floats (float32, float16, bfloat16 computed in float32;
//! float64 in float64): every op; maximum and minimum propagate NaN (numpy). Integers (int8 …
//! int64, uint8 … uint64): add, sub, mul wrap around (numpy), maximum and minimum; integer
//! div and pow are not served (the Python `div` divides integers in float, `float_math_input`).

use super::broadcast::{broadcast_shape, zip2};
use super::buffers::write;
use super::math::{Real, Stored, REALS};
use crate::backend::{CapabilityTable, KernelFactory};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::tensor::Element;
use half::{bf16, f16};

/// A binary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Maximum,
    Minimum,
}

/// Each op, its name and whether integers have it.
const OPS: [(Op, &str, bool); 7] = [
    (Op::Add, "add", true),
    (Op::Sub, "sub", true),
    (Op::Mul, "mul", true),
    (Op::Div, "div", false),
    (Op::Pow, "pow", false),
    (Op::Maximum, "maximum", true),
    (Op::Minimum, "minimum", true),
];

/// The integer dtypes add, sub, mul, maximum and minimum serve.
pub const INTEGERS: [DType; 8] =
    [DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64];

struct Binary {
    op: Op,
    name: &'static str,
    dtype: DType,
}

/// The larger of two values; NaN when either is NaN.
#[inline(always)]
fn maximum<R: Real>(p: R, q: R) -> R {
    if p.is_nan() || p > q {
        p
    } else {
        q
    }
}

/// The smaller of two values; NaN when either is NaN.
#[inline(always)]
fn minimum<R: Real>(p: R, q: R) -> R {
    if p.is_nan() || p < q {
        p
    } else {
        q
    }
}

fn run_float<T: Stored>(op: Op, launch: &Launch<'_>) -> Result<()> {
    let (a, b, out_tensor) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(out_tensor)? };
    let shape = out_tensor.shape();
    macro_rules! with {
        ($f:expr) => {
            zip2(a, b, shape, out, |p: T, q: T| T::store($f(p.load(), q.load())))
        };
    }
    match op {
        Op::Add => with!(|p, q| p + q),
        Op::Sub => with!(|p, q| p - q),
        Op::Mul => with!(|p, q| p * q),
        Op::Div => with!(|p, q| p / q),
        Op::Pow => with!(|p: T::Compute, q| p.powf(q)),
        Op::Maximum => with!(maximum::<T::Compute>),
        Op::Minimum => with!(minimum::<T::Compute>),
    }
}

/// Wrapping arithmetic of one integer type.
trait Integer: Element + Ord {
    fn wrapping_add(self, other: Self) -> Self;
    fn wrapping_sub(self, other: Self) -> Self;
    fn wrapping_mul(self, other: Self) -> Self;
}

macro_rules! integer {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            #[inline(always)]
            fn wrapping_add(self, other: $t) -> $t { <$t>::wrapping_add(self, other) }
            #[inline(always)]
            fn wrapping_sub(self, other: $t) -> $t { <$t>::wrapping_sub(self, other) }
            #[inline(always)]
            fn wrapping_mul(self, other: $t) -> $t { <$t>::wrapping_mul(self, other) }
        }
    )*};
}

integer!(i8, i16, i32, i64, u8, u16, u32, u64);

fn run_int<T: Integer>(op: Op, name: &str, launch: &Launch<'_>) -> Result<()> {
    let (a, b, out_tensor) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(out_tensor)? };
    let shape = out_tensor.shape();
    match op {
        Op::Add => zip2(a, b, shape, out, T::wrapping_add),
        Op::Sub => zip2(a, b, shape, out, T::wrapping_sub),
        Op::Mul => zip2(a, b, shape, out, T::wrapping_mul),
        Op::Maximum => zip2(a, b, shape, out, Ord::max),
        Op::Minimum => zip2(a, b, shape, out, Ord::min),
        Op::Div | Op::Pow => Err(KernelError::Invalid(format!("{name}: no integer loop"))),
    }
}

/// Checks that `op` has two operands of `dtype`; their broadcast shape.
pub fn check_pair(op: &str, dtype: DType, inputs: &[TensorMeta]) -> Result<Vec<i64>> {
    let [a, b] = inputs else {
        return Err(KernelError::Invalid(format!("{op}: takes two inputs, got {}", inputs.len())));
    };
    if a.dtype != b.dtype {
        return Err(KernelError::Invalid(format!(
            "{op}: operands are {} and {}; cast them to one dtype first",
            a.dtype, b.dtype
        )));
    }
    if a.dtype != dtype {
        return Err(KernelError::Invalid(format!("{op}: operands are {}, the kernel serves {dtype}", a.dtype)));
    }
    broadcast_shape(op, &[a, b])
}

impl Kernel for Binary {
    fn key(&self) -> String {
        format!("{}:{}", self.name, self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let shape = check_pair(self.name, self.dtype, inputs)?;
        let out = TensorMeta::new(self.dtype, &shape);
        let flops = out.numel()?;
        let mut cost = Cost::simple(vec![out], inputs[0].bytes()? + inputs[1].bytes()?, flops)?;
        // an operand of the output's shape is read at each position before it is written
        cost.in_place = (0..2).filter(|&k| inputs[k].shape == shape).map(|k| (k, 0)).collect();
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => run_float::<f32>(self.op, &launch),
            DType::Float16 => run_float::<f16>(self.op, &launch),
            DType::Bfloat16 => run_float::<bf16>(self.op, &launch),
            DType::Float64 => run_float::<f64>(self.op, &launch),
            DType::Int8 => run_int::<i8>(self.op, self.name, &launch),
            DType::Int16 => run_int::<i16>(self.op, self.name, &launch),
            DType::Int32 => run_int::<i32>(self.op, self.name, &launch),
            DType::Int64 => run_int::<i64>(self.op, self.name, &launch),
            DType::Uint8 => run_int::<u8>(self.op, self.name, &launch),
            DType::Uint16 => run_int::<u16>(self.op, self.name, &launch),
            DType::Uint32 => run_int::<u32>(self.op, self.name, &launch),
            DType::Uint64 => run_int::<u64>(self.op, self.name, &launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.name))),
        }
    }
}

fn build(name: &str, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let &(op, name, _) =
        OPS.iter().find(|entry| entry.1 == name).ok_or_else(|| KernelError::Invalid(format!("{name}: not binary")))?;
    attrs.only(name, &[])?;
    Ok(Box::new(Binary { op, name, dtype }))
}

macro_rules! factory {
    ($name:literal) => {
        |dtype, attrs| build($name, dtype, attrs)
    };
}

/// Registers the binary ops: all on the float dtypes; add, sub, mul, maximum, minimum on the
/// integers.
pub fn register(table: &mut CapabilityTable) {
    let factories: [(&str, KernelFactory); 7] = [
        ("add", factory!("add")),
        ("sub", factory!("sub")),
        ("mul", factory!("mul")),
        ("div", factory!("div")),
        ("pow", factory!("pow")),
        ("maximum", factory!("maximum")),
        ("minimum", factory!("minimum")),
    ];
    for (name, factory) in factories {
        table.register(name, &REALS, factory);
        if OPS.iter().any(|entry| entry.1 == name && entry.2) {
            table.register(name, &INTEGERS, factory);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;

    #[test]
    fn broadcast_add_and_nan_maximum() {
        let a = Tensor::from_vec(vec![1.0f32, f32::NAN], &[2, 1]).unwrap();
        let b = Tensor::from_vec(vec![0.5f32, 2.0, -1.0], &[3]).unwrap();
        let sum = call("add", &Attrs::new(), &[&a, &b]).unwrap().remove(0);
        assert_eq!(sum.shape(), &[2, 3]);
        assert_eq!(sum.to_vec::<f32>().unwrap()[..3], [1.5, 3.0, 0.0]);
        let max = call("maximum", &Attrs::new(), &[&a, &b]).unwrap().remove(0).to_vec::<f32>().unwrap();
        assert_eq!(max[..3], [1.0, 2.0, 1.0]);
        assert!(max[3..].iter().all(|v| v.is_nan()));
    }

    #[test]
    fn integers_wrap_and_mismatches_are_named() {
        let a = Tensor::from_vec(vec![250u8, 3], &[2]).unwrap();
        let b = Tensor::from_vec(vec![10u8, 4], &[2]).unwrap();
        assert_eq!(call("add", &Attrs::new(), &[&a, &b]).unwrap()[0].to_vec::<u8>().unwrap(), vec![4, 7]);
        assert_eq!(call("sub", &Attrs::new(), &[&b, &a]).unwrap()[0].to_vec::<u8>().unwrap(), vec![16, 1]);
        let c = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let err = call("mul", &Attrs::new(), &[&c, &a]).unwrap_err().to_string();
        assert!(err.contains("mul") && err.contains("float32") && err.contains("uint8"), "{err}");
        let d = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
        let err = call("add", &Attrs::new(), &[&c, &d]).unwrap_err().to_string();
        assert!(err.starts_with("add: shapes (2,) and (3,)"), "{err}");
        assert!(call("div", &Attrs::new(), &[&a, &b]).is_err());
    }
}
