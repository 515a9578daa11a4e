//! Reductions along axes: sum, mean, max, min (attributes `axes`, a list of ints with
//! negatives from the end, absent for all axes; `keepdim`, default false) and argmax
//! (attribute `axis`, one int; `keepdim`; int64 output, the first maximum, a NaN counting as
//! the maximum as in numpy).
//!
//! Floats (float32, float16, bfloat16, float64): sum and mean accumulate in float64, then round
//! once to the dtype; max and min propagate NaN. Integers: sum wraps in int64 (signed inputs)
//! or uint64 (unsigned), which is its output dtype, as numpy's; max, min and argmax compare
//! exactly. max, min and argmax of no elements are refused.

use super::binary::INTEGERS;
use super::buffers::{read, write};
use super::math::{Real, Stored, REALS};
use super::reduce_loop::{normalize_axes, reduce, reduced_shape, Fold};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::tensor::Element;
use half::{bf16, f16};
use std::marker::PhantomData;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Sum,
    Mean,
    Max,
    Min,
    ArgMax,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::Sum => "sum",
            Op::Mean => "mean",
            Op::Max => "max",
            Op::Min => "min",
            Op::ArgMax => "argmax",
        }
    }
}

struct Reduction {
    op: Op,
    dtype: DType,
    /// None: every axis.
    axes: Option<Vec<i64>>,
    keepdim: bool,
}

/// Sum (or mean) of floats in float64.
struct FloatSum<T>(bool, PhantomData<T>);

impl<T: Stored> Fold for FloatSum<T> {
    type In = T;
    type Acc = f64;
    type Out = T;
    fn init(&self) -> f64 {
        0.0
    }
    #[inline(always)]
    fn fold(&self, acc: f64, x: T, _: usize) -> f64 {
        acc + x.load().wide()
    }
    fn finish(&self, acc: f64, count: usize) -> T {
        let value = if self.0 { acc / count as f64 } else { acc };
        T::store(<T::Compute as Real>::of(value))
    }
}

/// The maximum (`true`) or minimum of floats; NaN wins.
struct FloatExtreme<T>(bool, PhantomData<T>);

impl<T: Stored> Fold for FloatExtreme<T> {
    type In = T;
    type Acc = T::Compute;
    type Out = T;
    fn init(&self) -> T::Compute {
        <T::Compute as Real>::of(if self.0 { f64::NEG_INFINITY } else { f64::INFINITY })
    }
    #[inline(always)]
    fn fold(&self, acc: T::Compute, x: T, _: usize) -> T::Compute {
        let v = x.load();
        let better = if self.0 { v > acc } else { v < acc };
        if acc.is_nan() || !(v.is_nan() || better) {
            acc
        } else {
            v
        }
    }
    fn finish(&self, acc: T::Compute, _: usize) -> T {
        T::store(acc)
    }
}

/// The index of the first maximum of floats (the first NaN when there is one).
struct FloatArgMax<T>(PhantomData<T>);

impl<T: Stored> Fold for FloatArgMax<T> {
    type In = T;
    type Acc = (T::Compute, usize);
    type Out = i64;
    fn init(&self) -> (T::Compute, usize) {
        (<T::Compute as Real>::of(f64::NEG_INFINITY), 0)
    }
    #[inline(always)]
    fn fold(&self, acc: (T::Compute, usize), x: T, index: usize) -> (T::Compute, usize) {
        let v = x.load();
        if acc.0.is_nan() || !(v.is_nan() || v > acc.0) {
            acc
        } else {
            (v, index)
        }
    }
    fn finish(&self, acc: (T::Compute, usize), _: usize) -> i64 {
        acc.1 as i64
    }
}

/// An integer element: its range and the 64-bit type its sum wraps in.
trait Integer: Element + Ord {
    const MIN: Self;
    const MAX: Self;
    type Wide: Element;
    fn add_to(self, sum: Self::Wide) -> Self::Wide;
    const ZERO: Self::Wide;
}

macro_rules! integer {
    ($($t:ty => $wide:ty),*) => {$(
        impl Integer for $t {
            const MIN: $t = <$t>::MIN;
            const MAX: $t = <$t>::MAX;
            type Wide = $wide;
            #[inline(always)]
            fn add_to(self, sum: $wide) -> $wide { sum.wrapping_add(self as $wide) }
            const ZERO: $wide = 0;
        }
    )*};
}

integer!(i8 => i64, i16 => i64, i32 => i64, i64 => i64, u8 => u64, u16 => u64, u32 => u64, u64 => u64);

/// The wrapping sum of integers in 64 bits.
struct IntSum<T>(PhantomData<T>);

impl<T: Integer> Fold for IntSum<T> {
    type In = T;
    type Acc = T::Wide;
    type Out = T::Wide;
    fn init(&self) -> T::Wide {
        T::ZERO
    }
    #[inline(always)]
    fn fold(&self, acc: T::Wide, x: T, _: usize) -> T::Wide {
        x.add_to(acc)
    }
    fn finish(&self, acc: T::Wide, _: usize) -> T::Wide {
        acc
    }
}

/// The maximum (`true`) or minimum of integers.
struct IntExtreme<T>(bool, PhantomData<T>);

impl<T: Integer> Fold for IntExtreme<T> {
    type In = T;
    type Acc = T;
    type Out = T;
    fn init(&self) -> T {
        if self.0 {
            T::MIN
        } else {
            T::MAX
        }
    }
    #[inline(always)]
    fn fold(&self, acc: T, x: T, _: usize) -> T {
        if self.0 {
            acc.max(x)
        } else {
            acc.min(x)
        }
    }
    fn finish(&self, acc: T, _: usize) -> T {
        acc
    }
}

/// The index of the first maximum of integers.
struct IntArgMax<T>(PhantomData<T>);

impl<T: Integer> Fold for IntArgMax<T> {
    type In = T;
    type Acc = (T, usize);
    type Out = i64;
    fn init(&self) -> (T, usize) {
        (T::MIN, 0)
    }
    #[inline(always)]
    fn fold(&self, acc: (T, usize), x: T, index: usize) -> (T, usize) {
        if x > acc.0 {
            (x, index)
        } else {
            acc
        }
    }
    fn finish(&self, acc: (T, usize), _: usize) -> i64 {
        acc.1 as i64
    }
}

impl Reduction {
    fn reduced(&self, ndim: usize) -> Result<Vec<bool>> {
        normalize_axes(self.op.name(), self.axes.as_deref(), ndim)
    }

    fn output_dtype(&self) -> DType {
        match (self.op, self.dtype.kind()) {
            (Op::ArgMax, _) => DType::Int64,
            (Op::Sum, Kind::Int) => DType::Int64,
            (Op::Sum, Kind::Uint) => DType::Uint64,
            _ => self.dtype,
        }
    }

    fn run<F: Fold>(&self, fold: F, launch: &Launch<'_>) -> Result<()>
    where
        F::In: Element,
        F::Out: Element,
    {
        let input = &launch.inputs[0];
        let x = read::<F::In>(input)?;
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<F::Out>(&launch.outputs[0])? };
        reduce(&fold, &x, input.shape(), &self.reduced(input.ndim())?, out)
    }

    fn float<T: Stored>(&self, launch: &Launch<'_>) -> Result<()> {
        match self.op {
            Op::Sum => self.run(FloatSum::<T>(false, PhantomData), launch),
            Op::Mean => self.run(FloatSum::<T>(true, PhantomData), launch),
            Op::Max => self.run(FloatExtreme::<T>(true, PhantomData), launch),
            Op::Min => self.run(FloatExtreme::<T>(false, PhantomData), launch),
            Op::ArgMax => self.run(FloatArgMax::<T>(PhantomData), launch),
        }
    }

    fn int<T: Integer>(&self, launch: &Launch<'_>) -> Result<()> {
        match self.op {
            Op::Sum => self.run(IntSum::<T>(PhantomData), launch),
            Op::Max => self.run(IntExtreme::<T>(true, PhantomData), launch),
            Op::Min => self.run(IntExtreme::<T>(false, PhantomData), launch),
            Op::ArgMax => self.run(IntArgMax::<T>(PhantomData), launch),
            Op::Mean => Err(KernelError::Invalid(format!("mean: no loop for {}", self.dtype))),
        }
    }
}

impl Kernel for Reduction {
    fn key(&self) -> String {
        let axes = match &self.axes {
            Some(axes) => format!("{axes:?}"),
            None => "all".to_string(),
        };
        format!("{}:{}:axes={axes}:keepdim={}", self.op.name(), self.dtype.launch_key(), self.keepdim)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let name = self.op.name();
        let [input] = inputs else {
            return Err(KernelError::Invalid(format!("{name}: takes one input, got {}", inputs.len())));
        };
        if input.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "{name}: input is {}, the kernel serves {}",
                input.dtype, self.dtype
            )));
        }
        let reduced = self.reduced(input.shape.len())?;
        let shape = reduced_shape(&input.shape, &reduced, self.keepdim);
        let out = TensorMeta::new(self.output_dtype(), &shape);
        let empty = input.shape.iter().zip(&reduced).any(|(&e, &r)| r && e == 0);
        if empty && matches!(self.op, Op::Max | Op::Min | Op::ArgMax) && out.numel()? > 0 {
            return Err(KernelError::Invalid(format!(
                "{name}: the reduced axes of shape {:?} hold no elements, and {name} has no identity",
                input.shape
            )));
        }
        Cost::simple(vec![out], input.bytes()?, input.numel()?)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.float::<f32>(&launch),
            DType::Float16 => self.float::<f16>(&launch),
            DType::Bfloat16 => self.float::<bf16>(&launch),
            DType::Float64 => self.float::<f64>(&launch),
            DType::Int8 => self.int::<i8>(&launch),
            DType::Int16 => self.int::<i16>(&launch),
            DType::Int32 => self.int::<i32>(&launch),
            DType::Int64 => self.int::<i64>(&launch),
            DType::Uint8 => self.int::<u8>(&launch),
            DType::Uint16 => self.int::<u16>(&launch),
            DType::Uint32 => self.int::<u32>(&launch),
            DType::Uint64 => self.int::<u64>(&launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.op.name()))),
        }
    }
}

fn build(op: Op, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let name = op.name();
    let axes = if op == Op::ArgMax {
        attrs.only(name, &["axis", "keepdim"])?;
        Some(vec![attrs.int(name, "axis", None)?])
    } else {
        attrs.only(name, &["axes", "keepdim"])?;
        match attrs.iter().any(|(n, _)| n == "axes") {
            true => Some(attrs.ints(name, "axes", None)?),
            false => None,
        }
    };
    let keepdim = attrs.bool(name, "keepdim", Some(false))?;
    Ok(Box::new(Reduction { op, dtype, axes, keepdim }))
}

/// Registers sum, max, min and argmax on the float and integer dtypes, mean on the floats.
pub fn register(table: &mut CapabilityTable) {
    table.register("sum", &REALS, |d, a| build(Op::Sum, d, a));
    table.register("sum", &INTEGERS, |d, a| build(Op::Sum, d, a));
    table.register("mean", &REALS, |d, a| build(Op::Mean, d, a));
    table.register("max", &REALS, |d, a| build(Op::Max, d, a));
    table.register("max", &INTEGERS, |d, a| build(Op::Max, d, a));
    table.register("min", &REALS, |d, a| build(Op::Min, d, a));
    table.register("min", &INTEGERS, |d, a| build(Op::Min, d, a));
    table.register("argmax", &REALS, |d, a| build(Op::ArgMax, d, a));
    table.register("argmax", &INTEGERS, |d, a| build(Op::ArgMax, d, a));
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;

    #[test]
    fn sums_keep_dims_and_widen_integers() {
        let x = Tensor::from_vec(vec![100i8, 100, 100, -1, -2, -3], &[2, 3]).unwrap();
        let attrs = Attrs::new().with("axes", AttrValue::Ints(vec![-1])).with("keepdim", AttrValue::Bool(true));
        let s = call("sum", &attrs, &[&x]).unwrap().remove(0);
        assert_eq!((s.dtype(), s.shape()), (DType::Int64, &[2, 1][..]));
        assert_eq!(s.to_vec::<i64>().unwrap(), vec![300, -6]);
        let all = call("max", &Attrs::new(), &[&x]).unwrap().remove(0);
        assert_eq!((all.shape(), all.to_vec::<i8>().unwrap()), (&[][..], vec![100]));
    }

    #[test]
    fn argmax_takes_the_first_maximum_and_empty_max_is_refused() {
        let x = Tensor::from_vec(vec![1.0f32, 3.0, 3.0, f32::NAN, 0.0, 2.0], &[2, 3]).unwrap();
        let attrs = Attrs::new().with("axis", AttrValue::Int(1));
        let i = call("argmax", &attrs, &[&x]).unwrap().remove(0);
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![1, 0]);
        let empty = Tensor::from_vec(Vec::<f32>::new(), &[2, 0]).unwrap();
        let err = call("max", &Attrs::new().with("axes", AttrValue::Ints(vec![1])), &[&empty]).unwrap_err();
        assert!(err.to_string().starts_with("max: the reduced axes"), "{err}");
    }
}
