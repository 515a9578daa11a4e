//! The unary family (`ops::spec::unary`): every op of the table on every dtype it lists,
//! against float64 references.
//!
//! Tolerances (ulps of the compute type, float32 or float64, at the reference; a half dtype is
//! also allowed its own rounding of the float32 result):
//! - exact (the reference rounded once, zeros signed): neg, abs, floor, ceil, round, trunc,
//!   square, clip, and the tests (isnan, isinf, isfinite, signbit); relu and sign exactly, a
//!   zero of either sign accepted (the spec does not fix it);
//! - correctly rounded (½ ulp): sqrt, reciprocal; rsqrt (two roundings) 2 ulp;
//! - one library function (exp, log, the trigonometric and hyperbolic functions and their
//!   inverses, expm1, log1p, log2, log10): 4 ulp on float32 (CUDA's documented worst case,
//!   tanf and acoshf), 2 on float64;
//! - sigmoid, silu: 6 ulp (an exponential, a sum and a division); gelu, gelu_tanh:
//!   6 + 3κ ulp on float32 and 16 + 4κ on float64, κ the condition number |x f'(x)/f(x)| of
//!   the function at x, because both forms round an argument (x/√2, or the cubic, and x² in
//!   an erfc) before a function that magnifies it; float64 gelu 64 ulp more, the error of
//!   this suite's own erfc (`reference::erfc`).
//!
//! Integers and bool are compared exactly, against wrapping arithmetic in i128. real, imag
//! and conj of a real number are exact (x, 0, x).
//!
//! Complex inputs (`complex.rs`): results within the ulps of the part's format at |reference|
//! that `complex::unary_tolerance` states; at the special values (every pair of parts from ±0,
//! ±1, ½, −2.5, ±inf, NaN, the extremes) the ops the spec defines itself (neg, conj, real,
//! imag, abs, round, the tests, square and reciprocal as numpy's product and quotient, sign)
//! against their references, and every other op by the symmetries
//! C99 fixes for its special values too: `f(conj z) = conj f(z)`, and `f(-z) = -f(z)` for the
//! odd functions (sin, tan, sinh, tanh, asin, atan, asinh, atanh); signed zeros, infinities
//! and NaN exactly, other values within 4 ulps.

use crate::cases::{self, Draw, EDGE_SHAPES};
use crate::complex;
use crate::harness::{assert_replay_matches, read, Coverage, Target, LAYOUTS};
use crate::reference::{
    assert_elems_or, condition, erfc, flushed_alternatives, int_range, is_complex, is_int, is_real, wrap, Elem, Tol,
};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// sqrt(2/π), the scale of the tanh form of GELU.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn gelu(x: f64) -> f64 {
    0.5 * x * erfc(-x / std::f64::consts::SQRT_2)
}

fn gelu_tanh(x: f64) -> f64 {
    x * sigmoid(2.0 * SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x))
}

/// Past this magnitude 1 + x² is x² in float64.
const HUGE: f64 = 268_435_456.0;

/// asinh: `ln(|x| + √(x² + 1))` written as `ln_1p(|x| + x²/(1 + √(1 + x²)))` (no cancellation
/// near 0), `ln 2|x|` past [`HUGE`].
fn asinh(x: f64) -> f64 {
    let a = x.abs();
    let r = if a > HUGE { a.ln() + std::f64::consts::LN_2 } else { (a + a * a / (1.0 + (1.0 + a * a).sqrt())).ln_1p() };
    r.copysign(x)
}

/// acosh: `ln_1p(t + √(2t + t²))` with `t = x − 1` (exact near 1), `ln 2x` past [`HUGE`].
fn acosh(x: f64) -> f64 {
    if x.is_nan() || x < 1.0 {
        return f64::NAN;
    }
    if x > HUGE {
        return x.ln() + std::f64::consts::LN_2;
    }
    let t = x - 1.0;
    (t + (2.0 * t + t * t).sqrt()).ln_1p()
}

/// atanh: `ln_1p(2|x| / (1 − |x|)) / 2` with the sign of x (1 − |x| is exact near 1).
fn atanh(x: f64) -> f64 {
    let a = x.abs();
    (0.5 * (2.0 * a / (1.0 - a)).ln_1p()).copysign(x)
}

/// The float64 function of a float op (`None`: not a float op of this family).
fn float_fn(op: &str) -> Option<fn(f64) -> f64> {
    Some(match op {
        "neg" => |x| -x,
        "abs" => f64::abs,
        "exp" => f64::exp,
        "log" => f64::ln,
        "sqrt" => f64::sqrt,
        "rsqrt" => |x| 1.0 / x.sqrt(),
        "tanh" => f64::tanh,
        "sigmoid" => sigmoid,
        "silu" => |x| x * sigmoid(x),
        "gelu" => gelu,
        "gelu_tanh" => gelu_tanh,
        "relu" => |x| if x < 0.0 { 0.0 } else { x },
        "sin" => f64::sin,
        "cos" => f64::cos,
        "tan" => f64::tan,
        "asin" => f64::asin,
        "acos" => f64::acos,
        "atan" => f64::atan,
        "sinh" => f64::sinh,
        "cosh" => f64::cosh,
        "asinh" => asinh,
        "acosh" => acosh,
        "atanh" => atanh,
        "expm1" => f64::exp_m1,
        "log1p" => f64::ln_1p,
        "log2" => f64::log2,
        "log10" => f64::log10,
        "reciprocal" => |x| 1.0 / x,
        "square" => |x| x * x,
        "sign" => |x| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        },
        "floor" => f64::floor,
        "ceil" => f64::ceil,
        "round" => f64::round_ties_even,
        "trunc" => f64::trunc,
        _ => return None,
    })
}

/// The float64 test of a predicate op.
fn float_test(op: &str) -> Option<fn(f64) -> bool> {
    Some(match op {
        "isnan" => f64::is_nan,
        "isinf" => f64::is_infinite,
        "isfinite" => f64::is_finite,
        "signbit" => f64::is_sign_negative,
        _ => return None,
    })
}

/// clip's bounds in a case.
#[derive(Clone, Copy, Debug)]
struct Clip {
    min: Option<f64>,
    max: Option<f64>,
}

impl Clip {
    fn attrs(self, dtype: DType) -> Attrs {
        let value = |v: f64| if is_int(dtype) { AttrValue::Int(v as i64) } else { AttrValue::Float(v) };
        let mut attrs = Attrs::new();
        if let Some(v) = self.min {
            attrs = attrs.with("min", value(v));
        }
        if let Some(v) = self.max {
            attrs = attrs.with("max", value(v));
        }
        attrs
    }

    fn apply_int(self, x: i128) -> i128 {
        let x = self.min.map_or(x, |l| x.max(l as i128));
        self.max.map_or(x, |h| x.min(h as i128))
    }

    fn apply(self, x: f64) -> f64 {
        // NaN stays NaN: no comparison holds
        let x = match self.min {
            Some(l) if x < l => l,
            _ => x,
        };
        match self.max {
            Some(h) if x > h => h,
            _ => x,
        }
    }
}

/// The clip bounds a case runs for `dtype` (values every dtype holds exactly).
fn clips(dtype: DType) -> Vec<Clip> {
    if is_int(dtype) {
        let (low, _) = int_range(dtype).unwrap();
        let min = if low < 0 { -3.0 } else { 2.0 };
        vec![
            Clip { min: Some(min), max: Some(9.0) },
            Clip { min: Some(min), max: None },
            Clip { min: None, max: Some(5.0) },
        ]
    } else {
        vec![
            Clip { min: Some(-0.5), max: Some(0.75) },
            Clip { min: Some(-1.5), max: None },
            Clip { min: None, max: Some(2.5) },
        ]
    }
}

/// The reference of `op` on one element (`None`: the op does not take this kind of element).
fn reference(op: &str, dtype: DType, x: Elem, clip: Option<Clip>) -> Option<Elem> {
    match x {
        Elem::F(v) => {
            if op == "clip" {
                return Some(Elem::F(clip?.apply(v)));
            }
            if let Some(test) = float_test(op) {
                return Some(Elem::B(test(v)));
            }
            match op {
                "real" | "conj" => Some(Elem::F(v)),
                "imag" => Some(Elem::F(0.0)),
                _ => float_fn(op).map(|f| Elem::F(f(v))),
            }
        }
        Elem::I(v) => {
            let (_, high) = int_range(dtype)?;
            let signed = int_range(dtype)?.0 < 0;
            Some(match op {
                "neg" => Elem::I(wrap(dtype, v.wrapping_neg())),
                "abs" => Elem::I(wrap(dtype, v.abs())),
                "relu" => Elem::I(v.max(0)),
                "square" => Elem::I(wrap(dtype, (v as u128).wrapping_mul(v as u128) as i128)),
                "sign" => Elem::I(v.signum()),
                "floor" | "ceil" | "round" | "trunc" => Elem::I(v),
                "isnan" | "isinf" => Elem::B(false),
                "isfinite" => Elem::B(true),
                "bitwise_invert" => Elem::I(if signed { !v } else { high - v }),
                "clip" => Elem::I(clip?.apply_int(v)),
                "real" | "conj" => Elem::I(v),
                "imag" => Elem::I(0),
                _ => return None,
            })
        }
        Elem::B(b) => match op {
            "logical_not" | "bitwise_invert" => Some(Elem::B(!b)),
            _ => None,
        },
        Elem::C(..) => complex::unary(op, dtype, x),
    }
}

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    let sample = if dtype == DType::Bool {
        Elem::B(true)
    } else if is_int(dtype) {
        Elem::I(1)
    } else if is_real(dtype) {
        Elem::F(0.5)
    } else if is_complex(dtype) {
        Elem::C(0.5, 0.25)
    } else {
        return false;
    };
    reference(op, dtype, sample, Some(Clip { min: None, max: None })).is_some()
}

/// The tolerance of `op` on `dtype` at input `x` (exact for integer and bool elements).
fn tolerance(op: &str, dtype: DType, x: f64) -> Tol {
    let wide = dtype == DType::Float64;
    match op {
        "neg" | "abs" | "floor" | "ceil" | "round" | "trunc" | "square" | "clip" | "real" | "imag" | "conj" => {
            Tol::EXACT
        }
        "relu" | "sign" => Tol::EXACT_VALUE,
        "sqrt" | "reciprocal" => Tol::ulps(0.5),
        "rsqrt" => Tol::ulps(2.0),
        "sigmoid" | "silu" => Tol::ulps(6.0),
        "gelu" | "gelu_tanh" => {
            let k = condition(float_fn(op).unwrap(), x);
            if wide && op == "gelu" {
                // plus the reference erfc's own error: 7e-15 relative at worst over [-6, 6]
                // (its continued fraction converges slowly near 0.5; against mpmath), 64 ulp
                Tol::ulps(80.0 + 4.0 * k)
            } else if wide {
                Tol::ulps(16.0 + 4.0 * k)
            } else {
                Tol::ulps(6.0 + 3.0 * k)
            }
        }
        _ if wide => Tol::ulps(2.0),
        _ => Tol::ulps(4.0),
    }
}

/// The inputs of the values case: where each op is defined and well away from its poles.
fn domain(op: &str) -> (f64, f64) {
    match op {
        "log" | "log2" | "log10" | "sqrt" | "rsqrt" => (0.01, 100.0),
        "asin" | "acos" => (-1.0, 1.0),
        "atanh" => (-0.97, 0.97),
        "acosh" => (1.0, 20.0),
        "log1p" => (-0.9, 20.0),
        "tan" => (-1.45, 1.45),
        "exp" | "expm1" => (-20.0, 10.0),
        "sinh" | "cosh" => (-9.0, 9.0),
        "sigmoid" | "silu" | "gelu" | "gelu_tanh" | "tanh" => (-8.0, 8.0),
        "reciprocal" => (-4.0, 4.0),
        _ => (-6.0, 6.0),
    }
}

/// The values of `op` on `dtype`: `n` random inputs in the op's domain, and for the rounding
/// ops the ties (±0.5, ±1.5, ±2.5).
fn inputs(draw: &mut Draw, op: &str, dtype: DType, n: usize) -> Vec<Elem> {
    if is_complex(dtype) {
        let (low, high) = complex::domain(op);
        return complex::draws(draw, dtype, n, low, high);
    }
    if !is_real(dtype) {
        return cases::elems(draw, dtype, n, 0.0, 1.0);
    }
    let (low, high) = domain(op);
    let mut values = cases::floats(draw, dtype, n, low, high);
    if matches!(op, "round" | "floor" | "ceil" | "trunc" | "sign" | "relu" | "clip") {
        let ties = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 0.0, -0.0];
        values.splice(0..ties.len(), ties.iter().map(|&v| Elem::F(v)));
    }
    values
}

/// Runs `op` on `x` with `clip`'s bounds and checks it against the reference elementwise.
fn check(target: &Target, op: &str, dtype: DType, case: &str, x: &Tensor, logical: &[Elem], clip: Option<Clip>) {
    let attrs = clip.map(|c| c.attrs(dtype)).unwrap_or_default();
    let out = target.run1(op, dtype, &attrs, &[x]);
    assert_eq!(out.shape(), x.shape(), "{}: output shape", target.what(op, dtype, case));
    let want: Vec<Elem> = logical.iter().map(|&v| reference(op, dtype, v, clip).unwrap()).collect();
    let got = read(&out);
    let out_dtype = out.dtype();
    let flushed =
        flushed_alternatives(target.flushes_subnormals, &[logical], |v| reference(op, dtype, v[0], clip).unwrap());
    assert_elems_or(&target.what(op, dtype, case), out_dtype, &got, &want, &flushed, |i| match logical[i] {
        Elem::F(v) => tolerance(op, dtype, v),
        Elem::C(..) => complex::unary_tolerance(op, dtype),
        _ => Tol::EXACT,
    });
}

/// The bound cases of `op` on `dtype`: clip's bounds, or a single unbounded run.
fn bound_cases(op: &str, dtype: DType) -> Vec<Option<Clip>> {
    if op == "clip" {
        clips(dtype).into_iter().map(Some).collect()
    } else {
        vec![None]
    }
}

/// Every (op, dtype) of the table on random inputs in the op's domain (contiguous, shape [4, 25]).
pub fn unary_values(target: &Target) {
    let mut coverage = Coverage::new(target, "unary", "values");
    let mut draw = Draw::new(1);
    for (op, dtype) in target.entries("unary") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        for clip in bound_cases(op, dtype) {
            let values = inputs(&mut draw, op, dtype, 100);
            let x = target.tensor(dtype, &[4, 25], &values);
            check(target, op, dtype, "values", &x, &values, clip);
            if matches!(dtype.itemsize(), Ok(1 | 2 | 4)) {
                // 128 elements: a whole number of 16-byte vectors (a backend's vector form)
                let values = inputs(&mut draw, op, dtype, 128);
                let x = target.tensor(dtype, &[4, 32], &values);
                check(target, op, dtype, "values [4, 32]", &x, &values, clip);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Whether the spec fixes `op`'s result at the special float `x`: the composite activations
/// (silu, gelu, gelu_tanh) meet 0·∞ at -∞ and are left out there.
fn defined_at(op: &str, x: f64) -> bool {
    !(matches!(op, "silu" | "gelu" | "gelu_tanh") && x.is_infinite())
}

/// NaN, ±inf, ±0, the extremes, subnormals and ties; integer extremes; both bools.
pub fn unary_special_values(target: &Target) {
    let mut coverage = Coverage::new(target, "unary", "special values");
    for (op, dtype) in target.entries("unary") {
        if is_complex(dtype) {
            complex_special_values(target, op, dtype);
            coverage.saw(op, dtype);
            continue;
        }
        let values: Vec<Elem> =
            cases::specials(dtype).into_iter().filter(|v| !matches!(v, Elem::F(x) if !defined_at(op, *x))).collect();
        for clip in bound_cases(op, dtype) {
            let x = target.tensor(dtype, &[values.len() as i64], &values);
            check(target, op, dtype, "special values", &x, &values, clip);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// The complex ops the spec defines itself at every special value (their references hold
/// there); the others are the C library's functions, or built from them.
fn defined_at_specials(op: &str) -> bool {
    matches!(
        op,
        "neg"
            | "conj"
            | "real"
            | "imag"
            | "abs"
            | "round"
            | "isnan"
            | "isinf"
            | "isfinite"
            | "square"
            | "reciprocal"
            | "sign"
    )
}

/// `op` on the complex special values: against the reference where the spec defines it
/// exactly, else by C99's symmetries (`f(conj z) = conj f(z)`; `f(-z) = -f(z)` when odd), each
/// part NaN for NaN, an infinity or a zero equal to the bit (but for its sign beside a NaN
/// part, which C99 leaves open), another value within 4 ulps, at every input whose moved parts
/// are not NaN.
fn complex_special_values(target: &Target, op: &'static str, dtype: DType) {
    let values = complex::specials(dtype);
    let shape = [values.len() as i64];
    let x = target.tensor(dtype, &shape, &values);
    if defined_at_specials(op) {
        check(target, op, dtype, "special values", &x, &values, None);
        return;
    }
    let run = |v: &[Elem]| read(&target.run1(op, dtype, &Attrs::new(), &[&target.tensor(dtype, &shape, v)]));
    // NaN for NaN, infinities and zeros to the bit (their signs are what C99 fixes), other
    // values within 4 ulps (the C library rounds the two sides of a symmetry apart)
    let part = crate::reference::format(dtype).expect("a complex dtype");
    // beside a NaN part C99 leaves the sign of a zero or an infinity open ("NaN ± i0")
    let same = |a: f64, b: f64, beside_nan: bool| {
        if a.is_nan() || b.is_nan() {
            a.is_nan() && b.is_nan()
        } else if beside_nan && (a == 0.0 || a.is_infinite()) {
            a.abs() == b.abs()
        } else if a == 0.0 || b == 0.0 || a.is_infinite() || b.is_infinite() {
            a.to_bits() == b.to_bits()
        } else {
            (a - b).abs() <= 4.0 * part.ulp(a)
        }
    };
    let at = run(&values);
    let mut symmetries = vec![("f(conj z) = conj f(z)", values.iter().map(|&v| conj(v)).collect::<Vec<_>>(), false)];
    if complex::is_odd(op) {
        symmetries.push(("f(-z) = -f(z)", values.iter().map(|&v| negate(v)).collect(), true));
    }
    for (law, moved, odd) in symmetries {
        for (i, (&got, &f)) in run(&moved).iter().zip(&at).enumerate() {
            // a NaN part that the move flips is the same NaN: the law says nothing there
            let Elem::C(re, im) = values[i] else { unreachable!("complex inputs") };
            if im.is_nan() || (odd && re.is_nan()) {
                continue;
            }
            let want = if odd { negate(f) } else { conj(f) };
            let (Elem::C(gr, gi), Elem::C(wr, wi)) = (got, want) else { panic!("{op}: complex results") };
            assert!(
                same(gr, wr, wi.is_nan()) && same(gi, wi, wr.is_nan()),
                "{}: {law} fails at z = {:?}: f(z) = {f:?}, the moved input gives {got:?}",
                target.what(op, dtype, "special values"),
                values[i]
            );
        }
    }
}

fn conj(v: Elem) -> Elem {
    match v {
        Elem::C(re, im) => Elem::C(re, -im),
        other => other,
    }
}

fn negate(v: Elem) -> Elem {
    match v {
        Elem::C(re, im) => Elem::C(-re, -im),
        other => other,
    }
}

/// Transposed, strided (narrowed with a step) and stride-0 broadcast inputs, shape [2, 3, 5].
pub fn unary_non_contiguous(target: &Target) {
    let mut coverage = Coverage::new(target, "unary", "non-contiguous");
    let mut draw = Draw::new(2);
    for (op, dtype) in target.entries("unary") {
        for layout in LAYOUTS {
            for clip in bound_cases(op, dtype) {
                let values = inputs(&mut draw, op, dtype, 30);
                let (x, logical) = target.view(dtype, &[2, 3, 5], layout, &values, cases::poison(dtype));
                check(target, op, dtype, &format!("{layout:?} input"), &x, &logical, clip);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty tensors (a 0 extent), 0-d and one-element tensors.
pub fn unary_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "unary", "edge shapes");
    let mut draw = Draw::new(3);
    for (op, dtype) in target.entries("unary") {
        for shape in EDGE_SHAPES {
            for clip in bound_cases(op, dtype) {
                let values = inputs(&mut draw, op, dtype, cases::numel(shape).max(8));
                let values = &values[..cases::numel(shape)];
                let x = target.tensor(dtype, shape, values);
                check(target, op, dtype, &format!("shape {shape:?}"), &x, values, clip);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A program of the op (on a transposed view of its input, so the replay also reads a
/// layout) captured and replayed on fresh inputs: byte-equal to an eager run.
pub fn unary_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "unary", "capture/replay");
    let mut draw = Draw::new(4);
    for (op, dtype) in target.entries("unary") {
        let clip = bound_cases(op, dtype)[0];
        let attrs = clip.map(|c| c.attrs(dtype)).unwrap_or_default();
        let first = target.tensor(dtype, &[6, 7], &inputs(&mut draw, op, dtype, 42));
        let fresh = target.tensor(dtype, &[6, 7], &inputs(&mut draw, op, dtype, 42));
        let model = |t: &[Tensor]| -> Result<Vec<Tensor>, nbxtensor::kernel::KernelError> {
            let view = t[0].transpose(0, 1)?;
            let a = target.run(op, dtype, &attrs, &[&view])?;
            Ok(a)
        };
        assert_replay_matches(&target.what(op, dtype, "capture/replay"), &[first], &[fresh], &model);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
