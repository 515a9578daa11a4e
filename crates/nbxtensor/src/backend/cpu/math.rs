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
    std_math!(decl: sin, cos, tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, exp_m1, ln_1p, log2,
        log10, ceil, round_ties_even, trunc);
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
    ($t:ty, $gelu:path) => {
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
                // the libm crate's, not glibc's: glibc's hypot and hypotf are versioned
                // GLIBC_2.35, past the manylinux_2_34 baseline the wheel keeps
                libm::Libm::<$t>::hypot(self, y)
            }
            #[inline(always)]
            fn floor(self) -> $t {
                <$t>::floor(self)
            }
            #[inline(always)]
            fn fmod(self, divisor: $t) -> $t {
                self % divisor
            }
            #[inline(always)]
            fn asinh(self) -> $t {
                // the libm crate's: the standard library's asinh calls glibc's hypot (as
                // hypot above)
                libm::Libm::<$t>::asinh(self)
            }
            std_math!(impl $t: sin, cos, tan, asin, acos, atan, sinh, cosh, acosh, atanh, exp_m1, ln_1p,
                log2, log10, ceil, round_ties_even, trunc);
        }
    };
}

real!(f32, super::gelu::gelu_f32);
real!(f64, gelu_f64);

/// The GELU in float64: `x/2 · erfc(−x/√2)`.
pub(super) fn gelu_f64(x: f64) -> f64 {
    0.5 * x * erfc_any(-(x * std::f64::consts::FRAC_1_SQRT_2))
}

/// erfc in float64 (the reference of the float32 GELU's tests).
#[cfg(test)]
pub(super) fn erfc_f64_of(x: f64) -> f64 {
    erfc_any(x)
}

/// erfc of any x: `1 - erf(x)` where that loses nothing (|x| < 1), the tail routine beyond
/// (`erfc(-x) = 2 - erfc(x)`).
fn erfc_any(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x.abs() < 1.0 {
        1.0 - erf_f64(x)
    } else if x > 0.0 {
        erfc_f64(x)
    } else {
        2.0 - erfc_f64(-x)
    }
}

/// erf in float64: W. J. Cody's rational approximations (Math. Comp. 23, 1969, as in
/// Cephes' `ndtr.c`): `x * P(x²)/Q(x²)` for |x| < 1 and `1 - erfc(|x|)` beyond, where erfc is
/// `exp(-x²) P(x)/Q(x)` (|x| < 8) or `exp(-x²)/x R(1/x²)/S(1/x²)`; relative error below 1e-15.
fn erf_f64(x: f64) -> f64 {
    const T: [f64; 5] = [
        9.604_973_739_870_516_5,
        90.026_019_720_384_27,
        2_232.005_345_946_843,
        7_003.325_141_128_051,
        55_592.301_301_039_3,
    ];
    const U: [f64; 5] = [
        33.561_714_164_750_314,
        521.357_949_780_152_7,
        4_594.323_829_709_801,
        22_629.000_061_389_096,
        49_267.394_260_863_6,
    ];
    if x.is_nan() {
        return x;
    }
    if x.abs() > 1.0 {
        return (1.0 - erfc_f64(x.abs())).copysign(x);
    }
    let z = x * x;
    x * polynomial(z, &T) / monic(z, &U)
}

/// `c[0] x^(n-1) + … + c[n-1]`.
fn polynomial(x: f64, c: &[f64]) -> f64 {
    c.iter().fold(0.0, |acc, &k| acc * x + k)
}

/// `x^n + c[0] x^(n-1) + … + c[n-1]`.
fn monic(x: f64, c: &[f64]) -> f64 {
    c.iter().fold(1.0, |acc, &k| acc * x + k)
}

/// erfc for x ≥ 1 (Cephes' `erfc`, with its P/Q and R/S tables).
fn erfc_f64(x: f64) -> f64 {
    const P: [f64; 9] = [
        2.461_969_814_735_305e-10,
        5.641_895_648_310_688_8e-1,
        7.463_210_564_422_699_5,
        4.863_719_709_856_814e1,
        1.965_208_329_560_771e2,
        5.264_451_949_954_773_5e2,
        9.345_285_271_719_576e2,
        1.027_551_886_895_157_3e3,
        5.575_353_353_693_993_6e2,
    ];
    const Q: [f64; 8] = [
        1.322_819_511_547_497_5e1,
        8.670_721_408_859_897e1,
        3.549_377_788_878_199e2,
        9.757_085_017_432_055e2,
        1.823_909_166_879_097_4e3,
        2.246_337_608_187_544_7e3,
        1.656_663_091_941_830_4e3,
        5.575_353_408_177_277e2,
    ];
    const R: [f64; 6] = [
        5.641_895_835_477_550_7e-1,
        1.275_366_707_599_781e0,
        5.019_050_422_511_805e0,
        6.160_210_979_930_536e0,
        7.409_742_699_504_489e0,
        2.978_866_653_721_002_3e0,
    ];
    const S: [f64; 6] = [
        2.260_528_632_201_172_6e0,
        9.396_035_249_380_015e0,
        1.204_895_398_080_966_5e1,
        1.708_144_507_475_659e1,
        9.608_968_090_632_859e0,
        3.369_076_451_000_815e0,
    ];
    let z = -x * x;
    if z < -f64::from(f64::MAX_EXP) * std::f64::consts::LN_2 {
        return 0.0;
    }
    let e = z.exp();
    if x < 8.0 {
        e * polynomial(x, &P) / monic(x, &Q)
    } else {
        e * polynomial(x, &R) / monic(x, &S)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_tabulated_values() {
        // Abramowitz & Stegun, Table 7.1 (erf to 15 digits)
        for (x, erf) in [
            (0.1, 0.112_462_916_018_285),
            (0.5, 0.520_499_877_813_047),
            (1.0, 0.842_700_792_949_715),
            (1.5, 0.966_105_146_475_311),
            (2.0, 0.995_322_265_018_953),
            (3.0, 0.999_977_909_503_001),
        ] {
            assert!((erf_f64(x) - erf).abs() < 1e-14, "erf({x}) = {}, table {erf}", erf_f64(x));
            assert!((erf_f64(-x) + erf).abs() < 1e-14);
        }
        assert_eq!(erf_f64(0.0), 0.0);
        assert_eq!(erf_f64(40.0), 1.0);
        assert!(erf_f64(f64::NAN).is_nan());
        // erfc(3) = 2.209049699858544e-05 (A&S 7.1), kept to full relative precision
        assert!((erfc_any(3.0) / 2.209_049_699_858_544e-5 - 1.0).abs() < 1e-13);
        assert!((erfc_any(-0.5) - 1.520_499_877_813_047).abs() < 1e-14);
    }
}
