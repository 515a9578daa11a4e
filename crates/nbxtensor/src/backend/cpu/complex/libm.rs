//! The C library's C99 complex functions (`<complex.h>`: cexp, clog, csqrt, the trigonometric
//! and hyperbolic functions, their inverses, cpow; each also in its `f` form), called as they
//! are: their branch cuts and their special values (signed zeros, infinities, NaNs) are C99's
//! Annex G, which the Array API's special cases follow, as numpy's complex loops do by calling
//! the same functions.
//!
//! ABI: a C `double _Complex` (`float _Complex`) is passed and returned as the `#[repr(C)]`
//! struct of its two parts, [`Complex<f64>`] ([`Complex<f32>`]). The x86-64 System V ABI says
//! so in as many words ("complex T … treated as if implemented as `struct complexT { T real;
//! T imag; }`", §3.2.3): both are classified alike, two SSE eightbytes (xmm0, xmm1) for the
//! double pair, one SSE eightbyte (xmm0) for the float pair. The AArch64 procedure call
//! standard (AAPCS64 §5.9.5) treats a complex type as a homogeneous floating-point aggregate of
//! two members of its part type, as it treats the struct: in d0/d1 (s0/s1). Every symbol here
//! has been in glibc since 2.1 (version GLIBC_2.2.5 on x86-64, under every manylinux policy).

use crate::tensor::Complex;

#[link(name = "m")]
extern "C" {
    fn cexp(z: Complex<f64>) -> Complex<f64>;
    fn clog(z: Complex<f64>) -> Complex<f64>;
    fn csqrt(z: Complex<f64>) -> Complex<f64>;
    fn csin(z: Complex<f64>) -> Complex<f64>;
    fn ccos(z: Complex<f64>) -> Complex<f64>;
    fn ctan(z: Complex<f64>) -> Complex<f64>;
    fn csinh(z: Complex<f64>) -> Complex<f64>;
    fn ccosh(z: Complex<f64>) -> Complex<f64>;
    fn ctanh(z: Complex<f64>) -> Complex<f64>;
    fn casin(z: Complex<f64>) -> Complex<f64>;
    fn cacos(z: Complex<f64>) -> Complex<f64>;
    fn catan(z: Complex<f64>) -> Complex<f64>;
    fn casinh(z: Complex<f64>) -> Complex<f64>;
    fn cacosh(z: Complex<f64>) -> Complex<f64>;
    fn catanh(z: Complex<f64>) -> Complex<f64>;
    fn cpow(z: Complex<f64>, w: Complex<f64>) -> Complex<f64>;
    fn cexpf(z: Complex<f32>) -> Complex<f32>;
    fn clogf(z: Complex<f32>) -> Complex<f32>;
    fn csqrtf(z: Complex<f32>) -> Complex<f32>;
    fn csinf(z: Complex<f32>) -> Complex<f32>;
    fn ccosf(z: Complex<f32>) -> Complex<f32>;
    fn ctanf(z: Complex<f32>) -> Complex<f32>;
    fn csinhf(z: Complex<f32>) -> Complex<f32>;
    fn ccoshf(z: Complex<f32>) -> Complex<f32>;
    fn ctanhf(z: Complex<f32>) -> Complex<f32>;
    fn casinf(z: Complex<f32>) -> Complex<f32>;
    fn cacosf(z: Complex<f32>) -> Complex<f32>;
    fn catanf(z: Complex<f32>) -> Complex<f32>;
    fn casinhf(z: Complex<f32>) -> Complex<f32>;
    fn cacoshf(z: Complex<f32>) -> Complex<f32>;
    fn catanhf(z: Complex<f32>) -> Complex<f32>;
    fn cpowf(z: Complex<f32>, w: Complex<f32>) -> Complex<f32>;
}

/// A C99 complex function of one argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    /// cexp.
    Exp,
    /// clog.
    Log,
    /// csqrt.
    Sqrt,
    /// csin.
    Sin,
    /// ccos.
    Cos,
    /// ctan.
    Tan,
    /// csinh.
    Sinh,
    /// ccosh.
    Cosh,
    /// ctanh.
    Tanh,
    /// casin.
    Asin,
    /// cacos.
    Acos,
    /// catan.
    Atan,
    /// casinh.
    Asinh,
    /// cacosh.
    Acosh,
    /// catanh.
    Atanh,
}

/// A part type whose complex numbers the C library computes with (f32: the `f` forms; f64).
pub trait Libm: Sized {
    /// The function `f` of `z`, the C library's.
    fn call(f: Function, z: Complex<Self>) -> Complex<Self>;
    /// `z` to the power `w`, the C library's cpow.
    fn pow(z: Complex<Self>, w: Complex<Self>) -> Complex<Self>;
}

macro_rules! libm {
    ($t:ty, $pow:ident: $($f:ident => $c:ident),*) => {
        impl Libm for $t {
            #[inline]
            fn call(f: Function, z: Complex<$t>) -> Complex<$t> {
                // SAFETY: pure C99 functions of a value (no pointers), ABI-compatible as the
                // module's documentation says.
                unsafe {
                    match f {
                        $(Function::$f => $c(z),)*
                    }
                }
            }
            #[inline]
            fn pow(z: Complex<$t>, w: Complex<$t>) -> Complex<$t> {
                // SAFETY: as in `call`.
                unsafe { $pow(z, w) }
            }
        }
    };
}

libm!(f64, cpow: Exp => cexp, Log => clog, Sqrt => csqrt, Sin => csin, Cos => ccos, Tan => ctan,
    Sinh => csinh, Cosh => ccosh, Tanh => ctanh, Asin => casin, Acos => cacos, Atan => catan,
    Asinh => casinh, Acosh => cacosh, Atanh => catanh);
libm!(f32, cpowf: Exp => cexpf, Log => clogf, Sqrt => csqrtf, Sin => csinf, Cos => ccosf, Tan => ctanf,
    Sinh => csinhf, Cosh => ccoshf, Tanh => ctanhf, Asin => casinf, Acos => cacosf, Atan => catanf,
    Asinh => casinhf, Acosh => cacoshf, Atanh => catanhf);
