//! Complex arithmetic on [`Complex<P>`], `P` the part type (f32 for complex64, f64 for
//! complex128), as numpy computes it: the product by its four real products, the quotient by
//! Smith's algorithm (numpy's), powers by repeated products for small integer exponents and
//! cpow otherwise. The functions the C library has come from it ([`Libm`]); those it lacks
//! (expm1, log1p, log2, log10, sign) are built from real functions where that keeps digits,
//! and from the C library's where an input is not finite, so that the Array API's special cases
//! (C99 Annex G) hold.

use super::libm::{Function, Libm};
use crate::backend::cpu::math::Real;
use crate::tensor::{Complex, Element};

/// The part type of a complex dtype: float32 (complex64) or float64 (complex128).
pub trait Part: Real + Libm + Element {}

impl Part for f32 {}
impl Part for f64 {}

/// Below this magnitude of an input, expm1 and log1p use their real forms (no cancellation
/// near 0); above it the C library's exp and log of `1 + z` lose no digits that matter.
const NEAR_ZERO: f64 = 0.5;

/// The largest integer exponent [`pow`] takes by repeated products (numpy's bound).
const INTEGER_POWERS: f64 = 100.0;

/// `re + im·i`.
#[inline(always)]
pub fn c<P>(re: P, im: P) -> Complex<P> {
    Complex::new(re, im)
}

/// Whether either part is NaN.
#[inline(always)]
pub fn is_nan<P: Part>(z: Complex<P>) -> bool {
    z.re.is_nan() || z.im.is_nan()
}

/// Whether either part is infinite.
#[inline(always)]
pub fn is_infinite<P: Part>(z: Complex<P>) -> bool {
    z.re.is_infinite() || z.im.is_infinite()
}

/// Whether both parts are finite.
#[inline(always)]
pub fn is_finite<P: Part>(z: Complex<P>) -> bool {
    z.re.is_finite() && z.im.is_finite()
}

/// `a + b`.
#[inline(always)]
pub fn add<P: Part>(a: Complex<P>, b: Complex<P>) -> Complex<P> {
    c(a.re + b.re, a.im + b.im)
}

/// `a - b`.
#[inline(always)]
pub fn sub<P: Part>(a: Complex<P>, b: Complex<P>) -> Complex<P> {
    c(a.re - b.re, a.im - b.im)
}

/// `a · b`: `(ac − bd) + (ad + bc)i`, numpy's product.
#[inline(always)]
pub fn mul<P: Part>(a: Complex<P>, b: Complex<P>) -> Complex<P> {
    c(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re)
}

/// `a / b` by Smith's algorithm, as numpy divides: the ratio of the divisor's smaller part
/// to its larger keeps the intermediate products in range; a zero divisor gives the parts of
/// `a` divided by a zero (infinities or NaN).
#[inline(always)]
pub fn div<P: Part>(a: Complex<P>, b: Complex<P>) -> Complex<P> {
    let (br, bi) = (b.re.abs(), b.im.abs());
    if br >= bi {
        if br == P::ZERO && bi == P::ZERO {
            return c(a.re / br, a.im / br);
        }
        let ratio = b.im / b.re;
        let scale = P::ONE / (b.re + b.im * ratio);
        c((a.re + a.im * ratio) * scale, (a.im - a.re * ratio) * scale)
    } else {
        let ratio = b.re / b.im;
        let scale = P::ONE / (b.im + b.re * ratio);
        c((a.re * ratio + a.im) * scale, (a.im * ratio - a.re) * scale)
    }
}

/// `|z|`, without overflow on the way.
#[inline(always)]
pub fn abs<P: Part>(z: Complex<P>) -> P {
    z.re.hypot(z.im)
}

/// The C library's function `f` of `z`.
#[inline(always)]
pub fn libm<P: Part>(f: Function, z: Complex<P>) -> Complex<P> {
    P::call(f, z)
}

/// `tanh z`, the C library's, except at an infinite real part and a finite imaginary one:
/// `±1 ± 0i` with the imaginary part's sign, as the Array API states (C99 gives the zero the
/// sign of sin 2y).
pub fn tanh<P: Part>(z: Complex<P>) -> Complex<P> {
    if z.re.is_infinite() && z.im.is_finite() {
        return c(P::ONE.copysign(z.re), P::ZERO.copysign(z.im));
    }
    libm(Function::Tanh, z)
}

/// `e^z − 1`: for a finite `z`, `expm1(a)·cos(b) − 2 sin²(b/2) + e^a sin(b)·i` (no cancellation
/// near 0, numpy's form); otherwise cexp's special values less 1.
pub fn expm1<P: Part>(z: Complex<P>) -> Complex<P> {
    if !is_finite(z) {
        let e = libm(Function::Exp, z);
        return c(e.re - P::ONE, e.im);
    }
    if z.im == P::ZERO {
        // a real input: its real expm1 (e^a · sin 0 would be ∞ · 0 where e^a overflows), a
        // zero real part giving +0 as e^z − 1 does (the Array API: expm1(−0 + 0i) = 0 + 0i)
        return c(z.re.exp_m1() + P::ZERO, z.im);
    }
    let half = (z.im * P::of(0.5)).sin();
    let two = P::ONE + P::ONE;
    c(z.re.exp_m1() * z.im.cos() - two * half * half, z.re.exp() * z.im.sin())
}

/// `ln(1 + z)`: near 0, `ln_1p(2a + a² + b²)/2 + atan2(b, 1 + a)·i` (no cancellation);
/// elsewhere clog of `1 + z` (its special values included).
pub fn log1p<P: Part>(z: Complex<P>) -> Complex<P> {
    let near = P::of(NEAR_ZERO);
    if z.re.abs() < near && z.im.abs() < near {
        let two = P::ONE + P::ONE;
        let square = z.re * (two + z.re) + z.im * z.im;
        return c(square.ln_1p() * P::of(0.5), z.im.atan2(P::ONE + z.re));
    }
    libm(Function::Log, c(P::ONE + z.re, z.im))
}

/// `ln(z) / ln(base)`: clog's parts each scaled by `1 / ln(base)`.
pub fn log_base<P: Part>(z: Complex<P>, base: f64) -> Complex<P> {
    let l = libm(Function::Log, z);
    let scale = P::of(1.0 / base.ln());
    c(l.re * scale, l.im * scale)
}

/// `z / |z|`: 0 for 0, NaN when a part is NaN; an infinite `z` gives the unit number in its
/// direction (the limit of `z / |z|`); a finite one is scaled by its larger part first.
pub fn sign<P: Part>(z: Complex<P>) -> Complex<P> {
    if is_nan(z) {
        let nan = P::ZERO / P::ZERO;
        return c(nan, nan);
    }
    if z.re == P::ZERO && z.im == P::ZERO {
        return c(P::ZERO, P::ZERO);
    }
    if is_infinite(z) {
        let unit = |v: P| if v.is_infinite() { P::ONE.copysign(v) } else { P::ZERO.copysign(v) };
        let (re, im) = (unit(z.re), unit(z.im));
        return if re != P::ZERO && im != P::ZERO {
            let half = P::of(std::f64::consts::FRAC_1_SQRT_2);
            c(half.copysign(re), half.copysign(im))
        } else {
            c(re, im)
        };
    }
    // scaled by the larger part first: |z| of the largest finite values overflows, of the
    // subnormals loses digits
    let (a, b) = (z.re.abs(), z.im.abs());
    let scale = if a > b { a } else { b };
    let (re, im) = (z.re / scale, z.im / scale);
    let h = re.hypot(im);
    c(re / h, im / h)
}

/// Each part rounded to nearest, half to even.
#[inline(always)]
pub fn round<P: Part>(z: Complex<P>) -> Complex<P> {
    c(z.re.round_ties_even(), z.im.round_ties_even())
}

/// `z^w`, as numpy: `w = 0` gives 1; a zero `z` gives 0 for a `w` of positive real part and NaN
/// otherwise; a real integer `w` of magnitude up to 100 by repeated products (the reciprocal
/// of them for a negative `w`); any other by cpow.
pub fn pow<P: Part>(z: Complex<P>, w: Complex<P>) -> Complex<P> {
    let (zero, one) = (P::ZERO, P::ONE);
    if w.re == zero && w.im == zero {
        return c(one, zero);
    }
    if z.re == zero && z.im == zero {
        if w.re > zero {
            return c(zero, zero);
        }
        let nan = zero / zero;
        return c(nan, nan);
    }
    let n = w.re.wide();
    if w.im == zero && n == n.trunc() && n.abs() <= INTEGER_POWERS {
        let (mut base, mut left, mut acc) = (z, n.abs() as u32, c(one, zero));
        while left > 0 {
            if left & 1 == 1 {
                acc = mul(acc, base);
            }
            base = mul(base, base);
            left >>= 1;
        }
        return if n < 0.0 { div(c(one, zero), acc) } else { acc };
    }
    P::pow(z, w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: Complex<f64>, want: (f64, f64), tol: f64) -> bool {
        (got.re - want.0).abs() <= tol * want.0.abs().max(1e-300)
            && (got.im - want.1).abs() <= tol * want.1.abs().max(1e-300)
    }

    #[test]
    fn the_c_library_is_called_through_the_abi_both_widths() {
        // e^(iπ/2) = i, ln(-1) = iπ, √(-4) = 2i: a part swapped or dropped by a wrong ABI fails
        let e = libm(Function::Exp, c(0.0f64, std::f64::consts::FRAC_PI_2));
        assert!(e.re.abs() < 1e-16 && (e.im - 1.0).abs() < 1e-16, "{e:?}");
        let l = libm(Function::Log, c(-1.0f64, 0.0));
        assert_eq!((l.re, l.im), (0.0, std::f64::consts::PI));
        let s = libm(Function::Sqrt, c(-4.0f32, 0.0));
        assert_eq!((s.re, s.im), (0.0, 2.0));
        let s = libm(Function::Sinh, c(1.0f32, 2.0));
        let want = (1.0f64.sinh() * 2.0f64.cos(), 1.0f64.cosh() * 2.0f64.sin());
        assert!((f64::from(s.re) - want.0).abs() < 1e-6 && (f64::from(s.im) - want.1).abs() < 1e-6, "{s:?}");
        let (p, r) = (<f64 as Libm>::pow(c(0.0, 1.0), c(0.5, 0.0)), libm(Function::Sqrt, c(0.0, 1.0)));
        assert!((p.re - r.re).abs() < 1e-15 && (p.im - r.im).abs() < 1e-15, "{p:?} {r:?}");
    }

    #[test]
    fn division_is_smiths_and_a_zero_divisor_gives_infinities() {
        let q = div(c(1.0f64, 2.0), c(3.0, -4.0));
        assert!(close(q, (-0.2, 0.4), 1e-15), "{q:?}");
        // |b|² would overflow: Smith's ratio keeps it in range
        let q = div(c(1e300f64, 1e300), c(1e300, 1e300));
        assert_eq!((q.re, q.im), (1.0, 0.0));
        let q = div(c(1.0f64, -1.0), c(0.0, 0.0));
        assert_eq!((q.re, q.im), (f64::INFINITY, f64::NEG_INFINITY));
        assert!(is_nan(div(c(0.0f64, 0.0), c(0.0, 0.0))));
    }

    #[test]
    fn expm1_and_log1p_keep_digits_near_zero_and_the_special_values() {
        let z = c(1e-10f64, 1e-10);
        // e^z − 1 = z + z²/2 + …: z² = 2e-20 i
        assert!(close(expm1(z), (1e-10, 1e-10 + 1e-20), 1e-12), "{:?}", expm1(z));
        let l = log1p(z);
        assert!(close(l, (1e-10, 1e-10 - 1e-20), 1e-9), "{l:?}");
        let inf = f64::INFINITY;
        assert_eq!(expm1(c(inf, 0.0)), c(inf, 0.0));
        assert_eq!(expm1(c(-inf, inf)).re, -1.0);
        assert_eq!(log1p(c(-1.0, 0.0)), c(-inf, 0.0));
        assert_eq!(log1p(c(-inf, inf)), c(inf, 0.75 * std::f64::consts::PI));
    }

    #[test]
    fn sign_pow_and_logs() {
        assert_eq!(sign(c(3.0f64, -4.0)), c(0.6, -0.8));
        assert_eq!(sign(c(-0.0f64, 0.0)), c(0.0, 0.0));
        assert!(is_nan(sign(c(f64::NAN, 1.0))));
        assert_eq!(sign(c(f64::NEG_INFINITY, 2.0)), c(-1.0, 0.0));
        assert_eq!(pow(c(1.0f64, 1.0), c(2.0, 0.0)), c(0.0, 2.0));
        assert_eq!(pow(c(0.0f64, 2.0), c(-1.0, 0.0)), c(0.0, -0.5));
        assert_eq!(pow(c(0.0f64, 0.0), c(2.0, 0.0)), c(0.0, 0.0));
        assert_eq!(pow(c(f64::NAN, 0.0), c(0.0, 0.0)), c(1.0, 0.0));
        let p = pow(c(-1.0f64, 0.0), c(0.5, 0.0));
        assert!(close(p, (0.0, 1.0), 1e-15) || p.re.abs() < 1e-16, "{p:?}");
        let l = log_base(c(0.0f64, 100.0), 10.0);
        assert!(close(l, (2.0, std::f64::consts::FRAC_PI_2 / std::f64::consts::LN_10), 1e-15), "{l:?}");
    }
}
