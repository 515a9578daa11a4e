//! The reductions on the host (`ops::spec::reduce` says what each computes): sums, products
//! and means of floats accumulate in float64 then round once; integer sums and products wrap
//! in 64 bits; all and any read elements as truth.

use super::buffers::{read, write};
use super::flags::as_bytes;
use super::math::{Real, Stored};
use super::reduce_loop::{reduce, Fold};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::reduce::{Reduce, ReduceOp};
use crate::tensor::{Element, Tensor};
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

/// The product of floats in float64.
struct FloatProd<T>(PhantomData<T>);

impl<T: Stored> Fold for FloatProd<T> {
    type In = T;
    type Acc = f64;
    type Out = T;
    fn init(&self) -> f64 {
        1.0
    }
    #[inline(always)]
    fn fold(&self, acc: f64, x: T, _: usize) -> f64 {
        acc * x.load().wide()
    }
    fn finish(&self, acc: f64, _: usize) -> T {
        T::store(<T::Compute as Real>::of(acc))
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

/// The index of the first maximum (`true`) or minimum of floats (the first NaN when there is
/// one).
struct FloatArg<T>(bool, PhantomData<T>);

impl<T: Stored> Fold for FloatArg<T> {
    type In = T;
    type Acc = (T::Compute, usize);
    type Out = i64;
    fn init(&self) -> (T::Compute, usize) {
        (<T::Compute as Real>::of(if self.0 { f64::NEG_INFINITY } else { f64::INFINITY }), 0)
    }
    #[inline(always)]
    fn fold(&self, acc: (T::Compute, usize), x: T, index: usize) -> (T::Compute, usize) {
        let v = x.load();
        let better = if self.0 { v > acc.0 } else { v < acc.0 };
        if acc.0.is_nan() || !(v.is_nan() || better) {
            acc
        } else {
            (v, index)
        }
    }
    fn finish(&self, acc: (T::Compute, usize), _: usize) -> i64 {
        acc.1 as i64
    }
}

/// An integer element: its range and the 64-bit type its sum and product wrap in (the
/// reductions' and the scans').
pub(super) trait Integer: Element + Ord {
    /// The smallest value.
    const MIN: Self;
    /// The largest value.
    const MAX: Self;
    /// The 64-bit type of its sums and products (int64 or uint64).
    type Wide: Element;
    /// `sum + self`, wrapping.
    fn add_to(self, sum: Self::Wide) -> Self::Wide;
    /// `product · self`, wrapping.
    fn mul_into(self, product: Self::Wide) -> Self::Wide;
    /// Whether it is not zero.
    fn is_nonzero(self) -> bool;
    /// 0 in the wide type.
    const ZERO: Self::Wide;
    /// 1 in the wide type.
    const ONE: Self::Wide;
}

macro_rules! integer {
    ($($t:ty => $wide:ty),*) => {$(
        impl Integer for $t {
            const MIN: $t = <$t>::MIN;
            const MAX: $t = <$t>::MAX;
            type Wide = $wide;
            #[inline(always)]
            fn add_to(self, sum: $wide) -> $wide { sum.wrapping_add(self as $wide) }
            #[inline(always)]
            fn mul_into(self, product: $wide) -> $wide { product.wrapping_mul(self as $wide) }
            #[inline(always)]
            fn is_nonzero(self) -> bool { self != 0 }
            const ZERO: $wide = 0;
            const ONE: $wide = 1;
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

/// The wrapping product of integers in 64 bits.
struct IntProd<T>(PhantomData<T>);

impl<T: Integer> Fold for IntProd<T> {
    type In = T;
    type Acc = T::Wide;
    type Out = T::Wide;
    fn init(&self) -> T::Wide {
        T::ONE
    }
    #[inline(always)]
    fn fold(&self, acc: T::Wide, x: T, _: usize) -> T::Wide {
        x.mul_into(acc)
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

/// The index of the first maximum (`true`) or minimum of integers.
struct IntArg<T>(bool, PhantomData<T>);

impl<T: Integer> Fold for IntArg<T> {
    type In = T;
    type Acc = (T, usize);
    type Out = i64;
    fn init(&self) -> (T, usize) {
        (if self.0 { T::MIN } else { T::MAX }, 0)
    }
    #[inline(always)]
    fn fold(&self, acc: (T, usize), x: T, index: usize) -> (T, usize) {
        if (self.0 && x > acc.0) || (!self.0 && x < acc.0) {
            (x, index)
        } else {
            acc
        }
    }
    fn finish(&self, acc: (T, usize), _: usize) -> i64 {
        acc.1 as i64
    }
}

/// All (`true`) or any of elements read as truth by `truthy`; written as bool bytes.
struct Truth<T>(bool, fn(T) -> bool);

impl<T: Copy + Send + Sync> Fold for Truth<T> {
    type In = T;
    type Acc = bool;
    type Out = u8;
    fn init(&self) -> bool {
        self.0
    }
    #[inline(always)]
    fn fold(&self, acc: bool, x: T, _: usize) -> bool {
        if self.0 {
            acc && (self.1)(x)
        } else {
            acc || (self.1)(x)
        }
    }
    fn finish(&self, acc: bool, _: usize) -> u8 {
        u8::from(acc)
    }
}

/// Folds `input` into `output` (both seen as the fold's element types).
fn fold_into<F: Fold>(spec: &Reduce, fold: F, input: &Tensor, output: &Tensor) -> Result<()>
where
    F::In: Element,
    F::Out: Element,
{
    let x = read::<F::In>(input)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<F::Out>(output)? };
    reduce(&fold, &x, input.shape(), &spec.reduced(input.ndim())?, out)
}

fn run<F: Fold>(spec: &Reduce, fold: F, launch: &Launch<'_>) -> Result<()>
where
    F::In: Element,
    F::Out: Element,
{
    fold_into(spec, fold, &launch.inputs[0], &launch.outputs[0])
}

/// all or any, of elements of `T` read as truth by `truthy`, into the bool output.
fn truth<T: Element>(spec: &Reduce, launch: &Launch<'_>, input: &Tensor, truthy: fn(T) -> bool) -> Result<()> {
    let fold = Truth(spec.op == ReduceOp::All, truthy);
    fold_into(spec, fold, input, &as_bytes(&launch.outputs[0])?)
}

fn float<T: Stored>(spec: &Reduce, launch: &Launch<'_>) -> Result<()> {
    match spec.op {
        ReduceOp::Sum => run(spec, FloatSum::<T>(false, PhantomData), launch),
        ReduceOp::Prod => run(spec, FloatProd::<T>(PhantomData), launch),
        ReduceOp::Mean => run(spec, FloatSum::<T>(true, PhantomData), launch),
        ReduceOp::Max => run(spec, FloatExtreme::<T>(true, PhantomData), launch),
        ReduceOp::Min => run(spec, FloatExtreme::<T>(false, PhantomData), launch),
        ReduceOp::ArgMax => run(spec, FloatArg::<T>(true, PhantomData), launch),
        ReduceOp::ArgMin => run(spec, FloatArg::<T>(false, PhantomData), launch),
        ReduceOp::All | ReduceOp::Any => {
            truth::<T>(spec, launch, &launch.inputs[0], |x| x.load() != <T::Compute as Real>::of(0.0))
        }
    }
}

fn int<T: Integer>(spec: &Reduce, launch: &Launch<'_>) -> Result<()> {
    match spec.op {
        ReduceOp::Sum => run(spec, IntSum::<T>(PhantomData), launch),
        ReduceOp::Prod => run(spec, IntProd::<T>(PhantomData), launch),
        ReduceOp::Max => run(spec, IntExtreme::<T>(true, PhantomData), launch),
        ReduceOp::Min => run(spec, IntExtreme::<T>(false, PhantomData), launch),
        ReduceOp::ArgMax => run(spec, IntArg::<T>(true, PhantomData), launch),
        ReduceOp::ArgMin => run(spec, IntArg::<T>(false, PhantomData), launch),
        ReduceOp::All | ReduceOp::Any => truth::<T>(spec, launch, &launch.inputs[0], T::is_nonzero),
        ReduceOp::Mean => Err(KernelError::Invalid(format!("mean: no loop for {}", spec.dtype))),
    }
}

/// A reduction of complex elements (sum, prod, mean), by the complex family's loop `run`.
fn complex(
    spec: &Reduce,
    launch: &Launch<'_>,
    run: fn(ReduceOp, &Tensor, &Tensor, &[bool]) -> Result<()>,
) -> Result<()> {
    let input = &launch.inputs[0];
    run(spec.op, input, &launch.outputs[0], &spec.reduced(input.ndim())?)
}

fn launch(spec: &Reduce, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Bool => truth::<u8>(spec, &launch, &as_bytes(&launch.inputs[0])?, |x| x != 0),
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
        DType::Complex64 => complex(spec, &launch, super::complex::reduce::<f32>),
        DType::Complex128 => complex(spec, &launch, super::complex::reduce::<f64>),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers sum, prod, max, min, argmax and argmin on the floats and the integers, mean on
/// the floats, all and any on those and bool.
pub fn register(table: &mut LaunchTable) {
    for op in ReduceOp::every() {
        table.register(op.name(), op.dtypes(), launch);
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::ops::spec::reduce::ReduceOp;
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
    fn products_wrap_in_64_bits_and_bool_counts_as_int64() {
        let x = Tensor::from_vec(vec![1.5f32, -2.0, 4.0, 0.5, 3.0, 0.25], &[2, 3]).unwrap();
        let p = x.prod(&[1], false).unwrap();
        assert_eq!((p.dtype(), p.to_vec::<f32>().unwrap()), (DType::Float32, vec![-12.0, 0.375]));
        assert_eq!(x.prod(&[0], true).unwrap().to_vec::<f32>().unwrap(), vec![0.75, -6.0, 1.0]);
        // 100^10 wraps modulo 2^64 in int64, as numpy's prod of int8
        let x = Tensor::from_vec(vec![100i8; 10], &[10]).unwrap();
        let p = x.reduce(ReduceOp::Prod, None, false).unwrap();
        assert_eq!((p.dtype(), p.to_vec::<i64>().unwrap()), (DType::Int64, vec![100i64.wrapping_pow(10)]));
        let x = Tensor::from_vec(vec![u32::MAX, 3, 2], &[3]).unwrap();
        let p = x.prod(&[0], false).unwrap();
        assert_eq!((p.dtype(), p.to_vec::<u64>().unwrap()), (DType::Uint64, vec![u64::from(u32::MAX) * 6]));
        let b = Tensor::from_vec(vec![1u8, 1, 0, 1], &[2, 2]).unwrap().view_dtype(DType::Bool).unwrap();
        let p = b.prod(&[1], false).unwrap();
        assert_eq!((p.dtype(), p.to_vec::<i64>().unwrap()), (DType::Int64, vec![1, 0]));
        assert_eq!(b.sum(&[0, 1], false).unwrap().to_vec::<i64>().unwrap(), vec![3]);
        let empty = Tensor::from_vec(Vec::<f64>::new(), &[2, 0]).unwrap();
        assert_eq!(empty.prod(&[1], false).unwrap().to_vec::<f64>().unwrap(), vec![1.0, 1.0]);
    }

    #[test]
    fn all_and_any_read_truth_of_every_dtype() {
        let x = Tensor::from_vec(vec![1.0f32, f32::NAN, 0.0, -0.0, 2.0, 0.0], &[2, 3]).unwrap();
        let all = x.all(&[1], false).unwrap();
        assert_eq!((all.dtype(), all.to_bytes().unwrap()), (DType::Bool, vec![0, 0]));
        assert_eq!(x.any(&[1], false).unwrap().to_bytes().unwrap(), vec![1, 1]);
        assert_eq!(x.all(&[0], true).unwrap().to_bytes().unwrap(), vec![0, 1, 0]);
        assert_eq!(x.narrow(1, 0, 2).unwrap().all(&[1], false).unwrap().to_bytes().unwrap(), vec![1, 0]);
        let i = Tensor::from_vec(vec![3i16, -1, 0, 7], &[4]).unwrap();
        assert_eq!(i.all(&[0], false).unwrap().to_bytes().unwrap(), vec![0]);
        assert_eq!(i.any(&[0], false).unwrap().to_bytes().unwrap(), vec![1]);
        let b = Tensor::from_vec(vec![0u8, 2, 0, 0], &[2, 2]).unwrap().view_dtype(DType::Bool).unwrap();
        assert_eq!(b.any(&[1], false).unwrap().to_bytes().unwrap(), vec![1, 0]);
        assert_eq!(b.all(&[0], false).unwrap().to_bytes().unwrap(), vec![0, 0]);
        let empty = Tensor::from_vec(Vec::<u8>::new(), &[0, 3]).unwrap();
        assert_eq!(empty.all(&[0], false).unwrap().to_bytes().unwrap(), vec![1, 1, 1]);
        assert_eq!(empty.any(&[0], false).unwrap().to_bytes().unwrap(), vec![0, 0, 0]);
    }

    #[test]
    fn argmin_takes_the_first_minimum_or_the_first_nan() {
        let x = Tensor::from_vec(vec![3.0f64, 1.0, 1.0, 2.0, f64::NAN, f64::NAN], &[2, 3]).unwrap();
        let i = x.argmin(1, false).unwrap();
        assert_eq!((i.dtype(), i.to_vec::<i64>().unwrap()), (DType::Int64, vec![1, 1]));
        assert_eq!(x.argmin(0, true).unwrap().to_vec::<i64>().unwrap(), vec![1, 1, 1]);
        let x = Tensor::from_vec(vec![5u8, 0, 9, 0, 255, 255], &[3, 2]).unwrap();
        assert_eq!(x.argmin(0, false).unwrap().to_vec::<i64>().unwrap(), vec![0, 0]);
        assert_eq!(x.argmin(-1, false).unwrap().to_vec::<i64>().unwrap(), vec![1, 1, 0]);
        let empty = Tensor::from_vec(Vec::<i32>::new(), &[0, 2]).unwrap();
        assert!(empty.argmin(0, false).unwrap_err().to_string().starts_with("argmin: the reduced axes"));
        assert!(x.reduce(ReduceOp::ArgMin, None, false).unwrap_err().to_string().contains("argmin: takes one axis"));
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
