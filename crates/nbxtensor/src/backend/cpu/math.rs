//! The arithmetic kernels compute in: float32 for float32 and the half formats, float64 for
//! float64. [`Real`] is the computing type and its functions; [`Stored`] ties a stored
//! element type to the type it computes in.

use super::buffers::Float;
use crate::tensor::Element;
use half::{bf16, f16};

/// Declares (in the trait) or forwards (in an impl) functions of the standard library by name.
macro_rules! std_math {
    (decl: $($f:ident),*) => {$(
        #[doc = concat!("The standard library's `", stringify!($f), "`.")]
        fn $f(self) -> Self;
    )*};
    (impl $t:ty: $($f:ident),*) => {$(
        #[inline(always)]
        fn $f(self) -> $t { <$t>::$f(self) }
    )*};
}

/// A type kernels compute in (f32 or f64).
pub trait Real:
    Copy
    + Send
    + Sync
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + 'static
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// The value of an f64 constant (rounded).
    fn of(value: f64) -> Self;
    /// The value as f64 (exact).
    fn wide(self) -> f64;
    /// e^x.
    fn exp(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// |x|.
    fn abs(self) -> Self;
    /// x^y.
    fn powf(self, y: Self) -> Self;
    /// The GELU of the erf form, `x Φ(x) = x/2 · erfc(−x/√2)`, accurate where it is small.
    fn gelu(self) -> Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// Whether the value is infinite.
    fn is_infinite(self) -> bool;
    /// Whether the value is neither NaN nor infinite.
    fn is_finite(self) -> bool;
    /// Whether the sign bit is set.
    fn is_sign_negative(self) -> bool;
    /// The angle of the point `(x, self)`.
    fn atan2(self, x: Self) -> Self;
    /// `|self|` with the sign of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// `sqrt(self² + y²)` without overflow on the way.
    fn hypot(self, y: Self) -> Self;
    /// The largest integer not above the value.
    fn floor(self) -> Self;
    /// The remainder of the division by `divisor`, the sign of the dividend (C's fmod).
    fn fmod(self, divisor: Self) -> Self;
    /// The inverse hyperbolic sine, accurate over the whole range ([`asinh_f64`]).
    fn asinh(self) -> Self;
    /// The inverse hyperbolic cosine, accurate over the whole range ([`acosh_f64`]).
    fn acosh(self) -> Self;
    /// The inverse hyperbolic tangent, accurate near ±1 ([`atanh_f64`]).
    fn atanh(self) -> Self;
    std_math!(decl: sin, cos, tan, asin, acos, atan, sinh, cosh, exp_m1, ln_1p, log2, log10, ceil,
        round_ties_even, trunc);
}

/// Past this magnitude x² + 1 is x² in float64, and asinh and acosh are ln(2|x|).
const HUGE: f64 = 268_435_456.0;

/// asinh in float64: `ln_1p(|x| + x²/(1 + √(1 + x²)))` with the sign of x (no cancellation
/// near 0), `ln 2|x|` past [`HUGE`]. Not the standard library's, which overflows past half the
/// largest value and calls the C library's hypot (a symbol newer than the wheel's glibc).
fn asinh_f64(x: f64) -> f64 {
    let a = x.abs();
    if a > HUGE {
        (a.ln() + std::f64::consts::LN_2).copysign(x)
    } else {
        let square = a * a;
        (a + square / (1.0 + (1.0 + square).sqrt())).ln_1p().copysign(x)
    }
}

/// acosh in float64, without the standard library's overflow past half the largest value.
fn acosh_f64(x: f64) -> f64 {
    if x > HUGE {
        x.ln() + std::f64::consts::LN_2
    } else {
        x.acosh()
    }
}

/// atanh in float64 by its odd symmetry: the standard library's `ln_1p(2x / (1 − x)) / 2` loses
/// digits as x nears −1.
fn atanh_f64(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * (2.0 * a / (1.0 - a)).ln_1p()).copysign(x)
}

/// e^x: float32 by the vectorizable `exp_f32` (2 ulp), float64 by the standard library.
trait Exponential {
    fn exponential(self) -> Self;
}

impl Exponential for f32 {
    #[inline(always)]
    fn exponential(self) -> f32 {
        super::exp::exp_f32(self)
    }
}

impl Exponential for f64 {
    #[inline(always)]
    fn exponential(self) -> f64 {
        f64::exp(self)
    }
}

#[inline(always)]
fn exponential<T: Exponential>(x: T) -> T {
    x.exponential()
}

macro_rules! real {
    ($t:ty, $gelu:path, $hypot:path) => {
        impl Real for $t {
            const ZERO: $t = 0.0;
            const ONE: $t = 1.0;
            #[inline(always)]
            fn of(value: f64) -> $t {
                value as $t
            }
            #[inline(always)]
            fn wide(self) -> f64 {
                f64::from(self)
            }
            #[inline(always)]
            fn exp(self) -> $t {
                exponential(self)
            }
            #[inline(always)]
            fn ln(self) -> $t {
                <$t>::ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> $t {
                <$t>::tanh(self)
            }
            #[inline(always)]
            fn abs(self) -> $t {
                <$t>::abs(self)
            }
            #[inline(always)]
            fn powf(self, y: $t) -> $t {
                <$t>::powf(self, y)
            }
            #[inline(always)]
            fn gelu(self) -> $t {
                $gelu(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_infinite(self) -> bool {
                <$t>::is_infinite(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            #[inline(always)]
            fn atan2(self, x: $t) -> $t {
                <$t>::atan2(self, x)
            }
            #[inline(always)]
            fn copysign(self, sign: $t) -> $t {
                <$t>::copysign(self, sign)
            }
            #[inline(always)]
            fn hypot(self, y: $t) -> $t {
                $hypot(self, y)
            }
            #[inline(always)]
            fn floor(self) -> $t {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn fmod(self, divisor: $t) -> $t {
                self % divisor
            }
            // float32 through float64: rounded once from a result good to float64
            #[inline(always)]
            fn asinh(self) -> $t {
                asinh_f64(self.wide()) as $t
            }
            #[inline(always)]
            fn acosh(self) -> $t {
                acosh_f64(self.wide()) as $t
            }
            #[inline(always)]
            fn atanh(self) -> $t {
                atanh_f64(self.wide()) as $t
            }
            std_math!(impl $t: sin, cos, tan, asin, acos, atan, sinh, cosh, exp_m1, ln_1p, log2, log10, ceil,
                round_ties_even, trunc);
        }
    };
}

// hypot from the `libm` crate: the C library's hypot carries a symbol version (GLIBC_2.35)
// newer than the wheel's manylinux policy allows
real!(f32, super::gelu::gelu_f32, libm::hypotf);
real!(f64, gelu_f64, libm::hypot);

/// The GELU in float64: `x/2 · erfc(−x/√2)`, erfc from the `libm` crate (musl's, under
/// 1 ulp; the sign flip keeps the tail accurate for negative x).
pub(super) fn gelu_f64(x: f64) -> f64 {
    0.5 * x * libm::erfc(-(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// A stored float element and the type it computes in.
pub trait Stored: Element {
    /// The computing type.
    type Compute: Real;
    /// The value in the computing type (exact).
    fn load(self) -> Self::Compute;
    /// The nearest stored value (ties to even).
    fn store(value: Self::Compute) -> Self;
}

macro_rules! stored_f32 {
    ($($t:ty),*) => {$(
        impl Stored for $t {
            type Compute = f32;
            #[inline(always)]
            fn load(self) -> f32 {
                Float::to_f32(self)
            }
            #[inline(always)]
            fn store(value: f32) -> $t {
                <$t as Float>::from_f32(value)
            }
        }
    )*};
}

stored_f32!(f32, f16, bf16);

impl Stored for f64 {
    type Compute = f64;
    #[inline(always)]
    fn load(self) -> f64 {
        self
    }
    #[inline(always)]
    fn store(value: f64) -> f64 {
        value
    }
}
