//! The reductions on the host (`ops::spec::reduce` says what each computes): sums and means
//! of floats accumulate in float64 then round once; integer sums wrap in 64 bits.

use super::buffers::{read, write};
use super::math::{Real, Stored};
use super::reduce_loop::{reduce, Fold};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::reduce::{Reduce, ReduceOp};
use crate::tensor::Element;
use half::{bf16, f16};
use std::marker::PhantomData;

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

fn run<F: Fold>(spec: &Reduce, fold: F, launch: &Launch<'_>) -> Result<()>
where
    F::In: Element,
    F::Out: Element,
{
    let input = &launch.inputs[0];
    let x = read::<F::In>(input)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<F::Out>(&launch.outputs[0])? };
    reduce(&fold, &x, input.shape(), &spec.reduced(input.ndim())?, out)
}

fn float<T: Stored>(spec: &Reduce, launch: &Launch<'_>) -> Result<()> {
    match spec.op {
        ReduceOp::Sum => run(spec, FloatSum::<T>(false, PhantomData), launch),
        ReduceOp::Mean => run(spec, FloatSum::<T>(true, PhantomData), launch),
        ReduceOp::Max => run(spec, FloatExtreme::<T>(true, PhantomData), launch),
        ReduceOp::Min => run(spec, FloatExtreme::<T>(false, PhantomData), launch),
        ReduceOp::ArgMax => run(spec, FloatArgMax::<T>(PhantomData), launch),
    }
}

fn int<T: Integer>(spec: &Reduce, launch: &Launch<'_>) -> Result<()> {
    match spec.op {
        ReduceOp::Sum => run(spec, IntSum::<T>(PhantomData), launch),
        ReduceOp::Max => run(spec, IntExtreme::<T>(true, PhantomData), launch),
        ReduceOp::Min => run(spec, IntExtreme::<T>(false, PhantomData), launch),
        ReduceOp::ArgMax => run(spec, IntArgMax::<T>(PhantomData), launch),
        ReduceOp::Mean => Err(KernelError::Invalid(format!("mean: no loop for {}", spec.dtype))),
    }
}

fn launch(spec: &Reduce, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => float::<f32>(spec, &launch),
        DType::Float16 => float::<f16>(spec, &launch),
        DType::Bfloat16 => float::<bf16>(spec, &launch),
        DType::Float64 => float::<f64>(spec, &launch),
        DType::Int8 => int::<i8>(spec, &launch),
        DType::Int16 => int::<i16>(spec, &launch),
        DType::Int32 => int::<i32>(spec, &launch),
        DType::Int64 => int::<i64>(spec, &launch),
        DType::Uint8 => int::<u8>(spec, &launch),
        DType::Uint16 => int::<u16>(spec, &launch),
        DType::Uint32 => int::<u32>(spec, &launch),
        DType::Uint64 => int::<u64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers sum, max, min and argmax on the floats and the integers, mean on the floats.
pub fn register(table: &mut LaunchTable) {
    for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min, ReduceOp::ArgMax] {
        table.register(op.name(), &op.dtypes(), launch);
    }
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
