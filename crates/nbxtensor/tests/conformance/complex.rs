//! Complex references (complex64 and complex128), shared by the families that take them.
//!
//! The CPU kernels call the C library's C99 functions (cexp, clog, csin …); the references
//! here are another implementation: num-complex's float64 formulas for the library functions,
//! and written out below what the spec defines itself — numpy's product of four real products
//! and Smith's quotient (each step rounded to the part's format, so they are exact), sign,
//! round, expm1, log1p, log2 and log10 from real functions, and numpy's rules for powers.
//!
//! A complex result is compared by its distance to the reference, in ulps of the part's
//! format at |reference| ([`crate::reference::complex_ok`]).

use crate::cases::Draw;
use crate::reference::{format, Elem, Format, Tol};
use nbxtensor::DType;
use num_complex::Complex64 as Z;

/// The complex value of an element (a real one has imaginary part 0).
pub fn z(e: Elem) -> Z {
    match e {
        Elem::C(re, im) => Z::new(re, im),
        other => Z::new(other.f(), 0.0),
    }
}

/// The element of a complex value.
pub fn elem(w: Z) -> Elem {
    Elem::C(w.re, w.im)
}

/// The part format of a complex dtype.
fn part(dtype: DType) -> Format {
    format(dtype).expect("a complex dtype")
}

/// The library functions: num-complex's float64 formulas.
fn function(op: &str) -> Option<fn(Z) -> Z> {
    Some(match op {
        "exp" => Z::exp,
        "log" => Z::ln,
        "sqrt" => Z::sqrt,
        "sin" => Z::sin,
        "cos" => Z::cos,
        "tan" => Z::tan,
        "sinh" => Z::sinh,
        "cosh" => Z::cosh,
        "tanh" => Z::tanh,
        "asin" => Z::asin,
        "acos" => Z::acos,
        "atan" => Z::atan,
        "asinh" => Z::asinh,
        "acosh" => Z::acosh,
        "atanh" => Z::atanh,
        _ => return None,
    })
}

/// The functions with `f(-z) = -f(z)` (C99 defines them so, special values included).
pub fn is_odd(op: &str) -> bool {
    matches!(op, "sin" | "tan" | "sinh" | "tanh" | "asin" | "atan" | "asinh" | "atanh")
}

/// The unary reference of `op` at the complex element `x` of `dtype` (`None`: no such complex
/// op).
pub fn unary(op: &str, dtype: DType, x: Elem) -> Option<Elem> {
    let Elem::C(re, im) = x else { return None };
    let v = Z::new(re, im);
    if let Some(f) = function(op) {
        return Some(elem(f(v)));
    }
    Some(match op {
        "neg" => Elem::C(-re, -im),
        "conj" => Elem::C(re, -im),
        "real" => Elem::F(re),
        "imag" => Elem::F(im),
        "abs" => Elem::F(re.hypot(im)),
        "isnan" => Elem::B(re.is_nan() || im.is_nan()),
        "isinf" => Elem::B(re.is_infinite() || im.is_infinite()),
        "isfinite" => Elem::B(re.is_finite() && im.is_finite()),
        "round" => Elem::C(re.round_ties_even(), im.round_ties_even()),
        // numpy's: the product z·z and the quotient 1/z, as [`binary`] writes them
        "square" => return binary("mul", dtype, x, x),
        "reciprocal" => return binary("div", dtype, Elem::C(1.0, 0.0), x),
        "sign" if re.is_nan() || im.is_nan() => Elem::C(f64::NAN, f64::NAN),
        "sign" if re == 0.0 && im == 0.0 => Elem::C(0.0, 0.0),
        // an infinite z: the unit number in its direction (the limit of z / |z|)
        "sign" if re.is_infinite() || im.is_infinite() => {
            let unit = |v: f64| if v.is_infinite() { 1f64.copysign(v) } else { 0f64.copysign(v) };
            let (u, w) = (unit(re), unit(im));
            let h = u.hypot(w);
            Elem::C(u / h, w / h)
        }
        "sign" => {
            // z scaled by its larger part first: |z| of float64's largest values overflows
            let scale = re.abs().max(im.abs());
            let (u, w) = (re / scale, im / scale);
            let a = u.hypot(w);
            Elem::C(u / a, w / a)
        }
        // e^z − 1 = (expm1(x)·cos y − 2 sin²(y/2)) + e^x sin y · i: no cancellation near 0
        "expm1" => Elem::C(re.exp_m1() * im.cos() - 2.0 * (im / 2.0).sin().powi(2), re.exp() * im.sin()),
        // ln(1 + z) = ½ ln(1 + 2x + x² + y²) + atan2(y, 1 + x) · i
        "log1p" => Elem::C(0.5 * (re * (2.0 + re) + im * im).ln_1p(), im.atan2(1.0 + re)),
        "log2" | "log10" => {
            let base = if op == "log2" { std::f64::consts::LN_2 } else { std::f64::consts::LN_10 };
            let l = v.ln();
            Elem::C(l.re / base, l.im / base)
        }
        _ => return None,
    })
}

/// The tolerance of the complex `op` on `dtype` (ulps of the part's format at |reference|).
pub fn unary_tolerance(op: &str, dtype: DType) -> Tol {
    let wide = dtype == DType::Complex128;
    match op {
        "neg" | "conj" | "real" | "imag" | "round" | "isnan" | "isinf" | "isfinite" | "square" | "reciprocal" => {
            Tol::EXACT
        }
        "abs" => Tol::ulps(1.0),
        "sign" => Tol::ulps(4.0),
        // the C library's functions against num-complex's formulas, whose own float64 error
        // is the larger term for complex128 (its asin, acos and inverse hyperbolics cancel)
        _ if wide => Tol::ulps(64.0),
        _ => Tol::ulps(8.0),
    }
}

/// The inputs of the complex `op`: both parts uniform in the op's box, away from its poles
/// and branch points (the inverse functions' at ±1 and ±i, tan's and tanh's at ±π/2).
pub fn domain(op: &str) -> (f64, f64) {
    match op {
        "asin" | "acos" | "atan" | "asinh" | "acosh" | "atanh" => (-0.8, 0.8),
        "tan" | "tanh" => (-1.2, 1.2),
        "log1p" => (-0.4, 2.0),
        _ => (-2.0, 2.0),
    }
}

/// `n` complex inputs of `dtype` with both parts uniform in [low, high).
pub fn draws(draw: &mut Draw, dtype: DType, n: usize, low: f64, high: f64) -> Vec<Elem> {
    crate::cases::elems(draw, dtype, n, low, high)
}

/// The special values of a complex dtype: every pair of parts from ±0, ±1, ½, −2.5, ±inf,
/// NaN, the largest finite value and the smallest subnormal.
pub fn specials(dtype: DType) -> Vec<Elem> {
    let f = part(dtype);
    let subnormal = crate::reference::pow2(f.emin() - f.mantissa);
    let parts = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, f.max, subnormal];
    parts.iter().flat_map(|&re| parts.iter().map(move |&im| Elem::C(re, im))).collect()
}

/// The binary reference of `op` on complex `a` and `b` of `dtype` (`None`: no such complex op,
/// or a power the suite leaves to the C library: one with an operand that is not finite).
pub fn binary(op: &str, dtype: DType, a: Elem, b: Elem) -> Option<Elem> {
    let (Elem::C(ar, ai), Elem::C(br, bi)) = (a, b) else { return None };
    let r = |v: f64| part(dtype).round(v);
    Some(match op {
        "add" => Elem::C(ar + br, ai + bi),
        "sub" => Elem::C(ar - br, ai - bi),
        "mul" => Elem::C(r(r(ar * br) - r(ai * bi)), r(r(ar * bi) + r(ai * br))),
        "div" => smith(r, (ar, ai), (br, bi)),
        "eq" => Elem::B(ar == br && ai == bi),
        "ne" => Elem::B(!(ar == br && ai == bi)),
        "pow" => return power(Z::new(ar, ai), Z::new(br, bi)),
        _ => return None,
    })
}

/// Smith's quotient, each step rounded by `r` to the part's format (numpy's division).
fn smith(r: impl Fn(f64) -> f64, (ar, ai): (f64, f64), (br, bi): (f64, f64)) -> Elem {
    if br.abs() >= bi.abs() {
        if br == 0.0 && bi == 0.0 {
            return Elem::C(r(ar / br.abs()), r(ai / br.abs()));
        }
        let ratio = r(bi / br);
        let scale = r(1.0 / r(br + r(bi * ratio)));
        Elem::C(r(r(ar + r(ai * ratio)) * scale), r(r(ai - r(ar * ratio)) * scale))
    } else {
        let ratio = r(br / bi);
        let scale = r(1.0 / r(bi + r(br * ratio)));
        Elem::C(r(r(r(ar * ratio) + ai) * scale), r(r(r(ai * ratio) - ar) * scale))
    }
}

/// numpy's power of complex numbers: `z^0 = 1`; `0^w` is 0 for a `w` of positive real part (numpy 2) and NaN
/// otherwise; other values through exp(w·ln z). `None` where an operand is not finite.
fn power(a: Z, b: Z) -> Option<Elem> {
    if !(a.re.is_finite() && a.im.is_finite() && b.re.is_finite() && b.im.is_finite()) {
        return None;
    }
    if b.re == 0.0 && b.im == 0.0 {
        return Some(Elem::C(1.0, 0.0));
    }
    if a.re == 0.0 && a.im == 0.0 {
        return Some(if b.re > 0.0 { Elem::C(0.0, 0.0) } else { Elem::C(f64::NAN, f64::NAN) });
    }
    Some(elem(a.powc(b)))
}

/// The tolerance of the complex binary `op` at operands `a`, `b`.
pub fn binary_tolerance(op: &str, dtype: DType, a: Elem, b: Elem) -> Tol {
    match op {
        "add" | "sub" => Tol::ulps(0.501),
        // a power's error grows with |w · ln z|, the exponent's size
        "pow" => {
            let k = (z(b) * z(a).ln()).norm();
            let base = if dtype == DType::Complex128 { 32.0 } else { 8.0 };
            Tol::ulps(base * (1.0 + if k.is_finite() { k } else { 0.0 }))
        }
        _ => Tol::EXACT,
    }
}
