//! The unary ops on the host (`ops::spec::unary` says what each computes): floats through
//! [`Real`] (float32 for float32 and the half formats, float64 for float64; the gelu forms by
//! the vectorized `gelu_f32`), integers and bool through their own loops, complex numbers
//! through the complex family's (`complex.rs`). Every loop reads
//! each element before it writes the same one, so a launch planned in place is safe.

use super::buffers::map_into;
use super::flags::as_bytes;
use super::math::{Real, Stored};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::unary::{Bound, Unary, UnaryOp, GELU_CUBIC, SQRT_2_OVER_PI};
use crate::tensor::Element;
use half::{bf16, f16};

/// Maps the launch's input into its output with `f` in the compute type.
fn map<T: Stored>(launch: &Launch<'_>, f: impl Fn(T::Compute) -> T::Compute + Sync) -> Result<()> {
    map_into(
        &launch.inputs[0],
        &launch.outputs[0],
        #[inline(always)]
        |v: T| T::store(f(v.load())),
    )
}

/// Maps the launch's input into its bool output with the test `f`.
fn test<T: Stored>(launch: &Launch<'_>, f: impl Fn(T) -> bool + Sync) -> Result<()> {
    map_into(&launch.inputs[0], &as_bytes(&launch.outputs[0])?, |v: T| u8::from(f(v)))
}

fn run_float<T: Stored>(spec: &Unary, launch: &Launch<'_>) -> Result<()> {
    let one = <T::Compute as Real>::ONE;
    let zero = <T::Compute as Real>::ZERO;
    match spec.op {
        UnaryOp::Neg => map::<T>(launch, |v| -v),
        UnaryOp::Abs => map::<T>(launch, Real::abs),
        UnaryOp::Exp => map::<T>(launch, Real::exp),
        UnaryOp::Log => map::<T>(launch, Real::ln),
        UnaryOp::Sqrt => map::<T>(launch, Real::sqrt),
        UnaryOp::Rsqrt => map::<T>(launch, |v| one / v.sqrt()),
        UnaryOp::Tanh => map::<T>(launch, Real::tanh),
        UnaryOp::Sigmoid => map::<T>(launch, |v| one / (one + (-v).exp())),
        UnaryOp::Silu => map::<T>(launch, |v| v / (one + (-v).exp())),
        UnaryOp::Gelu => map::<T>(launch, Real::gelu),
        UnaryOp::GeluTanh => {
            let (scale, cubic) = (<T::Compute as Real>::of(SQRT_2_OVER_PI), <T::Compute as Real>::of(GELU_CUBIC));
            let two = one + one;
            // x/2 (1 + tanh(u)) written as x sigmoid(2u): no cancellation where it is small
            map::<T>(launch, |v| v / (one + (-(two * scale * (v + cubic * v * v * v))).exp()))
        }
        // NaN stays NaN (numpy's maximum(x, 0) and torch's relu propagate it)
        UnaryOp::Relu => map::<T>(launch, |v| if v < zero { zero } else { v }),
        UnaryOp::Sin => map::<T>(launch, Real::sin),
        UnaryOp::Cos => map::<T>(launch, Real::cos),
        UnaryOp::Tan => map::<T>(launch, Real::tan),
        UnaryOp::Asin => map::<T>(launch, Real::asin),
        UnaryOp::Acos => map::<T>(launch, Real::acos),
        UnaryOp::Atan => map::<T>(launch, Real::atan),
        UnaryOp::Sinh => map::<T>(launch, Real::sinh),
        UnaryOp::Cosh => map::<T>(launch, Real::cosh),
        UnaryOp::Asinh => map::<T>(launch, Real::asinh),
        UnaryOp::Acosh => map::<T>(launch, Real::acosh),
        UnaryOp::Atanh => map::<T>(launch, Real::atanh),
        UnaryOp::Expm1 => map::<T>(launch, Real::exp_m1),
        UnaryOp::Log1p => map::<T>(launch, Real::ln_1p),
        UnaryOp::Log2 => map::<T>(launch, Real::log2),
        UnaryOp::Log10 => map::<T>(launch, Real::log10),
        UnaryOp::Reciprocal => map::<T>(launch, |v| one / v),
        UnaryOp::Square => map::<T>(launch, |v| v * v),
        UnaryOp::Sign => map::<T>(launch, |v| {
            if v > zero {
                one
            } else if v < zero {
                -one
            } else if v == zero {
                zero
            } else {
                v
            }
        }),
        UnaryOp::Floor => map::<T>(launch, Real::floor),
        UnaryOp::Ceil => map::<T>(launch, Real::ceil),
        UnaryOp::Round => map::<T>(launch, Real::round_ties_even),
        UnaryOp::Trunc => map::<T>(launch, Real::trunc),
        UnaryOp::Isnan => test::<T>(launch, |v| v.load().is_nan()),
        UnaryOp::Isinf => test::<T>(launch, |v| v.load().is_infinite()),
        UnaryOp::Isfinite => test::<T>(launch, |v| v.load().is_finite()),
        // the sign bit of the stored value: -0.0 and a NaN with its sign set included
        UnaryOp::Signbit => test::<T>(launch, |v| v.load().is_sign_negative()),
        UnaryOp::Clip => {
            let bound = |b: Bound| match b {
                Bound::Float(v) => Some(<T::Compute as Real>::of(v)),
                _ => None,
            };
            let (low, high) = (bound(spec.min), bound(spec.max));
            map::<T>(launch, move |v| {
                let v = match low {
                    Some(l) if v < l => l,
                    _ => v,
                };
                match high {
                    Some(h) if v > h => h,
                    _ => v,
                }
            })
        }
        UnaryOp::Real | UnaryOp::Conj => map::<T>(launch, |v| v),
        UnaryOp::Imag => map::<T>(launch, |_| zero),
        UnaryOp::LogicalNot | UnaryOp::BitwiseInvert => {
            Err(KernelError::Invalid(format!("{}: no float loop", spec.op.name())))
        }
    }
}

/// The integer arithmetic the unary loops need, wrapping as numpy does.
trait Integer: Element + Ord {
    const ZERO: Self;
    fn wrapping_neg(self) -> Self;
    fn wrapping_abs(self) -> Self;
    fn wrapping_square(self) -> Self;
    fn sign(self) -> Self;
    fn invert(self) -> Self;
    fn from_bound(value: i64) -> Option<Self>;
}

macro_rules! signed {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            const ZERO: $t = 0;
            #[inline(always)]
            fn wrapping_neg(self) -> $t { <$t>::wrapping_neg(self) }
            #[inline(always)]
            fn wrapping_abs(self) -> $t { <$t>::wrapping_abs(self) }
            #[inline(always)]
            fn wrapping_square(self) -> $t { self.wrapping_mul(self) }
            #[inline(always)]
            fn sign(self) -> $t { self.signum() }
            #[inline(always)]
            fn invert(self) -> $t { !self }
            fn from_bound(value: i64) -> Option<$t> { <$t>::try_from(value).ok() }
        }
    )*};
}

macro_rules! unsigned {
    ($($t:ty),*) => {$(
        impl Integer for $t {
            const ZERO: $t = 0;
            #[inline(always)]
            fn wrapping_neg(self) -> $t { <$t>::wrapping_neg(self) }
            #[inline(always)]
            fn wrapping_abs(self) -> $t { self }
            #[inline(always)]
            fn wrapping_square(self) -> $t { self.wrapping_mul(self) }
            #[inline(always)]
            fn sign(self) -> $t { self.min(1) }
            #[inline(always)]
            fn invert(self) -> $t { !self }
            fn from_bound(value: i64) -> Option<$t> { <$t>::try_from(value).ok() }
        }
    )*};
}

signed!(i8, i16, i32, i64);
unsigned!(u8, u16, u32, u64);

fn run_int<T: Integer>(spec: &Unary, launch: &Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let same = |f: fn(T) -> T| map_into(x, y, f);
    match spec.op {
        UnaryOp::Neg => same(T::wrapping_neg),
        UnaryOp::Abs => same(T::wrapping_abs),
        UnaryOp::Relu => same(|v| v.max(T::ZERO)),
        UnaryOp::Square => same(T::wrapping_square),
        UnaryOp::Sign => same(T::sign),
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round | UnaryOp::Trunc => same(|v| v),
        UnaryOp::BitwiseInvert => same(T::invert),
        UnaryOp::Real | UnaryOp::Conj => same(|v| v),
        UnaryOp::Imag => same(|_| T::ZERO),
        UnaryOp::Isnan | UnaryOp::Isinf => map_into(x, &as_bytes(y)?, |_: T| 0u8),
        UnaryOp::Isfinite => map_into(x, &as_bytes(y)?, |_: T| 1u8),
        UnaryOp::Clip => {
            let bound = |b: Bound| -> Result<Option<T>> {
                match b {
                    Bound::None => Ok(None),
                    Bound::Int(v) => T::from_bound(v).map(Some).ok_or_else(|| {
                        KernelError::Invalid(format!("clip: the bound {v} is not a {} value", spec.dtype))
                    }),
                    Bound::Float(v) => {
                        Err(KernelError::Invalid(format!("clip: the bound {v} of {} is a float", spec.dtype)))
                    }
                }
            };
            let (low, high) = (bound(spec.min)?, bound(spec.max)?);
            map_into(x, y, move |v: T| {
                let v = low.map_or(v, |l| v.max(l));
                high.map_or(v, |h| v.min(h))
            })
        }
        other => Err(KernelError::Invalid(format!("{}: no integer loop", other.name()))),
    }
}

fn run_bool(spec: &Unary, launch: &Launch<'_>) -> Result<()> {
    match spec.op {
        UnaryOp::LogicalNot | UnaryOp::BitwiseInvert => {
            map_into(&as_bytes(&launch.inputs[0])?, &as_bytes(&launch.outputs[0])?, |v: u8| u8::from(v == 0))
        }
        other => Err(KernelError::Invalid(format!("{}: no bool loop", other.name()))),
    }
}

fn launch(spec: &Unary, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run_float::<f32>(spec, &launch),
        DType::Float16 => run_float::<f16>(spec, &launch),
        DType::Bfloat16 => run_float::<bf16>(spec, &launch),
        DType::Float64 => run_float::<f64>(spec, &launch),
        DType::Int8 => run_int::<i8>(spec, &launch),
        DType::Int16 => run_int::<i16>(spec, &launch),
        DType::Int32 => run_int::<i32>(spec, &launch),
        DType::Int64 => run_int::<i64>(spec, &launch),
        DType::Uint8 => run_int::<u8>(spec, &launch),
        DType::Uint16 => run_int::<u16>(spec, &launch),
        DType::Uint32 => run_int::<u32>(spec, &launch),
        DType::Uint64 => run_int::<u64>(spec, &launch),
        DType::Bool => run_bool(spec, &launch),
        DType::Complex64 => super::complex::unary::<f32>(spec, &launch),
        DType::Complex128 => super::complex::unary::<f64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers every unary op on every dtype it takes.
pub fn register(table: &mut LaunchTable) {
    for op in UnaryOp::all() {
        table.register(op.name(), &op.dtypes(), launch);
    }
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;

    fn unary(op: &str, x: &Tensor) -> Tensor {
        call(op, &Attrs::new(), &[x]).unwrap().remove(0)
    }

    #[test]
    fn float_ops_match_the_standard_library() {
        let values = vec![-2.5f64, -0.75, 0.5, 1.25, 3.0];
        let x = Tensor::from_vec(values.clone(), &[5]).unwrap();
        let cases: [(&str, fn(f64) -> f64); 9] = [
            ("tanh", f64::tanh),
            ("sigmoid", |v| 1.0 / (1.0 + (-v).exp())),
            ("silu", |v| v / (1.0 + (-v).exp())),
            ("relu", |v| v.max(0.0)),
            ("neg", |v| -v),
            ("sin", f64::sin),
            ("atan", f64::atan),
            ("expm1", f64::exp_m1),
            ("round", f64::round_ties_even),
        ];
        for (op, f) in cases {
            let got = unary(op, &x).to_vec::<f64>().unwrap();
            for (g, v) in got.iter().zip(&values) {
                assert!((g - f(*v)).abs() < 1e-15, "{op}({v}) = {g}");
            }
        }
    }

    #[test]
    fn gelu_forms_agree_near_zero_and_differ_by_little() {
        let x = Tensor::from_vec(vec![-1.0f32, 0.0, 1.0, 2.0], &[4]).unwrap();
        let exact = unary("gelu", &x).to_vec::<f32>().unwrap();
        let approx = unary("gelu_tanh", &x).to_vec::<f32>().unwrap();
        // GELU(1) = Φ(1) = 0.841344746… (the normal CDF at 1)
        assert!((exact[2] - 0.841_344_7).abs() < 1e-6, "{exact:?}");
        assert_eq!(exact[1], 0.0);
        for (e, a) in exact.iter().zip(&approx) {
            assert!((e - a).abs() < 1e-3);
        }
    }

    #[test]
    fn integer_ops_wrap_and_tests_are_constant() {
        let x = Tensor::from_vec(vec![i8::MIN, -3, 0, 7], &[4]).unwrap();
        assert_eq!(unary("neg", &x).to_vec::<i8>().unwrap(), vec![i8::MIN, 3, 0, -7]);
        assert_eq!(unary("abs", &x).to_vec::<i8>().unwrap(), vec![i8::MIN, 3, 0, 7]);
        assert_eq!(unary("relu", &x).to_vec::<i8>().unwrap(), vec![0, 0, 0, 7]);
        assert_eq!(unary("sign", &x).to_vec::<i8>().unwrap(), vec![-1, -1, 0, 1]);
        assert_eq!(unary("square", &x).to_vec::<i8>().unwrap(), vec![0, 9, 0, 49]);
        assert_eq!(unary("bitwise_invert", &x).to_vec::<i8>().unwrap(), vec![127, 2, -1, -8]);
        assert_eq!(unary("isfinite", &x).to_bytes().unwrap(), vec![1, 1, 1, 1]);
        let err = call("exp", &Attrs::new(), &[&x]).unwrap_err().to_string();
        assert!(err.contains("exp") && err.contains("int8"), "{err}");
    }

    #[test]
    fn tests_give_bools_and_clip_keeps_nan() {
        let x = Tensor::from_vec(vec![f32::NAN, f32::INFINITY, -0.0, 2.5], &[4]).unwrap();
        assert_eq!(unary("isnan", &x).to_bytes().unwrap(), vec![1, 0, 0, 0]);
        assert_eq!(unary("isinf", &x).to_bytes().unwrap(), vec![0, 1, 0, 0]);
        assert_eq!(unary("signbit", &x).to_bytes().unwrap(), vec![0, 0, 1, 0]);
        let attrs = Attrs::new().with("min", AttrValue::Float(0.0)).with("max", AttrValue::Int(1));
        let clipped = call("clip", &attrs, &[&x]).unwrap().remove(0).to_vec::<f32>().unwrap();
        assert!(clipped[0].is_nan());
        assert_eq!(clipped[1..], [1.0, 0.0, 1.0]);
        let b = Tensor::from_vec(vec![0u8, 1], &[2]).unwrap().view_dtype(crate::DType::Bool).unwrap();
        assert_eq!(unary("logical_not", &b).to_bytes().unwrap(), vec![1, 0]);
    }
}
