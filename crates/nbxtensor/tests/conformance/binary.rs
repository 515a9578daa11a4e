//! The binary family (`ops::spec::binary`): arithmetic, the comparisons, the logical and
//! bitwise ops, with numpy broadcasting, against float64 and i128 references.
//!
//! Tolerances (ulps of the compute type at the reference; half dtypes also their own rounding):
//! - add, sub, mul, div: correctly rounded, ½ ulp (0.501: the float64 quotient is itself
//!   rounded); remainder likewise, the sign of a zero included (the divisor's);
//!   floor_divide 1 ulp (a quotient past 2^24 is rounded twice on the way), zeros signed;
//! - pow, atan2, hypot: one library function, 4 ulp on float32, 2 on float64;
//! - logaddexp: 4 ulp plus 4 ulp of the larger operand (the difference a − b is rounded
//!   before the exponential, and the sum cancels where the result is near 0);
//! - maximum, minimum, copysign, nextafter, the comparisons, every integer and bool op: exact.
//!
//! Complex operands (`complex.rs`): add and sub ½ ulp of the part at |reference|; mul (numpy's
//! four real products) and div (Smith's algorithm) exactly, against the same formulas with
//! each step rounded to the part's format; pow 8 ulps on complex64 (32 on complex128) times
//! 1 + |w·ln z|, against numpy's rules and exp(w·ln z), where both operands are finite (the
//! others are the C library's cpow: its special values are left to it); eq and ne exact.
//!
//! Python's rules define remainder and floor_divide (`%` and `//`): the remainder takes the
//! divisor's sign, a float divided by zero gives `a / b` and a NaN remainder, an integer one
//! gives 0 for both; integers wrap, the most negative value `// -1` included. The Array API's
//! special cases override Python's for floor_divide with one infinite operand: `a / b`.

use crate::cases::{self, Draw, EDGE_SHAPES};
use crate::complex;
use crate::harness::{assert_replay_matches, broadcast_index, broadcast_shape, read, Coverage, Layout, Target};
use crate::reference::{
    assert_elems_or, flushed_alternatives, format, int_range, is_complex, is_int, is_real, pow2, width, wrap, Elem,
    Format, Tol,
};
use nbxtensor::kernel::Attrs;
use nbxtensor::{DType, Tensor};

/// Python's `a // b` on finite floats (numpy's `floor_divide`); with one operand infinite,
/// the Array API's special cases: `a / b` (an infinity, or a zero signed as the quotient).
fn floor_divide(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || b == 0.0 || a.is_infinite() != b.is_infinite() {
        return a / b;
    }
    if a.is_infinite() {
        return f64::NAN;
    }
    if a != 0.0 && (a < 0.0) != (b < 0.0) && a.abs() < b.abs() {
        // a quotient in (-1, 0), which float64 may round to -0
        return -1.0;
    }
    let q = (a / b).floor();
    if q == 0.0 {
        0.0f64.copysign(a / b)
    } else {
        q
    }
}

/// Python's `a % b` on floats (numpy's `remainder`): the divisor's sign.
fn remainder(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() || b == 0.0 || a.is_infinite() {
        return f64::NAN;
    }
    // fmod is exact; moving it to the divisor's side rounds at most once
    let mut r = a % b;
    if r != 0.0 && (r < 0.0) != (b < 0.0) {
        r += b;
    }
    if r == 0.0 {
        0.0f64.copysign(b)
    } else {
        r
    }
}

/// ln(e^a + e^b).
fn logaddexp(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return a + std::f64::consts::LN_2;
    }
    a.max(b) + (-(a - b).abs()).exp().ln_1p()
}

/// The next value of format `f` after `a` toward `b`.
fn next_after(f: Format, a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        return f64::NAN;
    }
    if a == b {
        return b;
    }
    if a == 0.0 {
        return pow2(f.emin() - f.mantissa).copysign(b - a);
    }
    let bits = f.encode(a);
    let away = (b > a) == (a > 0.0);
    f.decode(if away { bits + 1 } else { bits - 1 })
}

/// The maximum (minimum) of two floats: NaN when either is NaN.
fn extremum(a: f64, b: f64, larger: bool) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else if (a > b) == larger {
        a
    } else {
        b
    }
}

/// `a^e` wrapping in `dtype`; a negative exponent truncates `1 / a^-e`.
fn int_pow(dtype: DType, a: i128, e: i128) -> i128 {
    if e < 0 {
        return match a {
            1 => 1,
            -1 => {
                if e % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut base, mut e, mut acc) = (a as u128, e as u128, 1u128);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        e >>= 1;
    }
    wrap(dtype, acc as i128)
}

fn compare(op: &str, ord: Option<std::cmp::Ordering>) -> Option<bool> {
    use std::cmp::Ordering::*;
    Some(match op {
        "eq" => ord == Some(Equal),
        "ne" => ord != Some(Equal),
        "lt" => ord == Some(Less),
        "le" => matches!(ord, Some(Less | Equal)),
        "gt" => ord == Some(Greater),
        "ge" => matches!(ord, Some(Greater | Equal)),
        _ => return None,
    })
}

/// silu(x) rounded to the type the kernels compute `dtype` in (float32 but for float64): the
/// silu_mul kernels hold silu(a) in it before the product (so silu of the smallest subnormal
/// is 0 in float32, and 0 times infinity NaN).
fn silu_in_compute_type(dtype: DType, x: f64) -> f64 {
    let silu = x / (1.0 + (-x).exp());
    if dtype == DType::Float64 {
        silu
    } else {
        silu as f32 as f64
    }
}

/// The reference of `op` on one pair of elements of `dtype` (`None`: not taken).
pub fn reference(op: &str, dtype: DType, a: Elem, b: Elem) -> Option<Elem> {
    match (a, b) {
        (Elem::F(x), Elem::F(y)) => {
            if let Some(c) = compare(op, x.partial_cmp(&y)) {
                return Some(Elem::B(c));
            }
            Some(Elem::F(match op {
                "add" => x + y,
                "sub" => x - y,
                "mul" => x * y,
                "div" => x / y,
                "pow" => x.powf(y),
                "maximum" => extremum(x, y, true),
                "minimum" => extremum(x, y, false),
                "remainder" => remainder(x, y),
                "floor_divide" => floor_divide(x, y),
                "atan2" => x.atan2(y),
                "copysign" => x.copysign(y),
                "hypot" => x.hypot(y),
                "logaddexp" => logaddexp(x, y),
                "silu_mul" => silu_in_compute_type(dtype, x) * y,
                "nextafter" => next_after(format(dtype)?, x, y),
                _ => return None,
            }))
        }
        (Elem::I(x), Elem::I(y)) => {
            if let Some(c) = compare(op, Some(x.cmp(&y))) {
                return Some(Elem::B(c));
            }
            let bits = 8 * width(dtype) as i128;
            let w = |v: i128| Some(Elem::I(wrap(dtype, v)));
            match op {
                "add" => w(x + y),
                "sub" => w(x - y),
                "mul" => w((x as u128).wrapping_mul(y as u128) as i128),
                "pow" => w(int_pow(dtype, x, y)),
                "maximum" => w(x.max(y)),
                "minimum" => w(x.min(y)),
                "remainder" if y == 0 => w(0),
                "remainder" => {
                    let r = x % y;
                    w(if r != 0 && (r < 0) != (y < 0) { r + y } else { r })
                }
                "floor_divide" if y == 0 => w(0),
                "floor_divide" => {
                    let q = x / y;
                    w(if x % y != 0 && (x < 0) != (y < 0) { q - 1 } else { q })
                }
                "bitwise_and" => w(x & y),
                "bitwise_or" => w(x | y),
                "bitwise_xor" => w(x ^ y),
                "bitwise_left_shift" if y < 0 || y >= bits => w(0),
                "bitwise_left_shift" => w(((x as u128) << y) as i128),
                "bitwise_right_shift" if y < 0 || y >= bits => w(if x < 0 { -1 } else { 0 }),
                "bitwise_right_shift" => w(x >> y),
                _ => None,
            }
        }
        (Elem::B(x), Elem::B(y)) => {
            if let Some(c) = compare(op, Some(x.cmp(&y))) {
                return Some(Elem::B(c));
            }
            Some(Elem::B(match op {
                "logical_and" | "bitwise_and" => x && y,
                "logical_or" | "bitwise_or" => x || y,
                "logical_xor" | "bitwise_xor" => x != y,
                _ => return None,
            }))
        }
        (Elem::C(..), Elem::C(..)) => complex::binary(op, dtype, a, b),
        _ => None,
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
    reference(op, dtype, sample, sample).is_some()
}

/// The tolerance of `op` on `dtype` at operands `a`, `b` (exact for non-float results).
fn tolerance(op: &str, dtype: DType, a: f64, b: f64) -> Tol {
    let wide = dtype == DType::Float64;
    let eps = if wide { pow2(-52) } else { pow2(-23) };
    match op {
        "add" | "sub" | "mul" | "div" => Tol::ulps(0.501),
        "remainder" => Tol { ulps: 0.501, abs: 0.0, zeros: true },
        "floor_divide" => Tol { ulps: 1.0, abs: 0.0, zeros: true },
        "pow" | "atan2" | "hypot" if wide => Tol::ulps(2.0),
        "pow" | "atan2" | "hypot" => Tol::ulps(4.0),
        "logaddexp" => Tol::with_abs(4.0, 4.0 * eps * a.abs().max(b.abs())),
        // exp (1–2 ulp), the division and the product each rounded; for a far below 0, e^a is
        // subnormal in the compute type, and silu(a) = a·e^a/(1 + e^a) off by |a| times half its
        // spacing (|a| < 2^7 there; 2^10 in float64), times |b|
        "silu_mul" => Tol::with_abs(4.0, b.abs() * if wide { pow2(-1064) } else { pow2(-143) }),
        "copysign" | "nextafter" => Tol::EXACT,
        _ => Tol::EXACT_VALUE,
    }
}

/// Random operands of `op` on `dtype`, `n` each, in the op's domain; a quarter of the pairs
/// equal (the comparisons and nextafter meet ties).
fn operands(draw: &mut Draw, op: &str, dtype: DType, n: usize) -> (Vec<Elem>, Vec<Elem>) {
    if is_complex(dtype) {
        return complex_operands(draw, op, dtype, n);
    }
    if dtype == DType::Bool {
        return (cases::elems(draw, dtype, n, 0.0, 1.0), cases::elems(draw, dtype, n, 0.0, 1.0));
    }
    if let Some((low, high)) = int_range(dtype) {
        let a = cases::ints(draw, dtype, n);
        let bits = 8 * width(dtype) as i128;
        let b: Vec<Elem> = match op {
            "bitwise_left_shift" | "bitwise_right_shift" => {
                (0..n).map(|_| Elem::I(draw.int(low.max(-2), (bits + 2).min(high)))).collect()
            }
            "pow" => (0..n).map(|_| Elem::I(draw.int(low.max(-3), 70.min(high)))).collect(),
            _ => cases::ints(draw, dtype, n),
        };
        let b = b
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 4 == 0 && op != "pow" && !op.contains("shift") { a[i] } else { v })
            .collect();
        return (a, b);
    }
    let signed = |draw: &mut Draw, low: f64, high: f64| {
        let v = draw.uniform(low, high);
        if draw.bits() & 1 == 1 {
            -v
        } else {
            v
        }
    };
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    for i in 0..n {
        let (x, y) = match op {
            "div" => (draw.uniform(-8.0, 8.0), signed(draw, 0.25, 8.0)),
            "remainder" | "floor_divide" => (draw.uniform(-50.0, 50.0), signed(draw, 0.25, 8.0)),
            "pow" => (draw.uniform(0.05, 5.0), draw.uniform(-4.0, 4.0)),
            "hypot" => (draw.uniform(-100.0, 100.0), draw.uniform(-100.0, 100.0)),
            "logaddexp" => (draw.uniform(-20.0, 20.0), draw.uniform(-20.0, 20.0)),
            _ => (draw.uniform(-8.0, 8.0), draw.uniform(-8.0, 8.0)),
        };
        let x = cases::float_input(dtype, x);
        let y = if i % 4 == 0 && !matches!(op, "div" | "remainder" | "floor_divide" | "pow") {
            x
        } else {
            cases::float_input(dtype, y)
        };
        a.push(Elem::F(x));
        b.push(Elem::F(y));
    }
    (a, b)
}

/// Complex operands: parts in [-4, 4] (a divisor at least ¼ in magnitude); for pow a base of
/// magnitude ¼ to 2 and exponents in [-2, 2], every fifth one a real integer (0, ±1, 2, 3, or
/// 7: numpy's repeated products); a quarter of the other pairs equal.
fn complex_operands(draw: &mut Draw, op: &str, dtype: DType, n: usize) -> (Vec<Elem>, Vec<Elem>) {
    let mut a = complex::draws(draw, dtype, n, -4.0, 4.0);
    let mut b = complex::draws(draw, dtype, n, -4.0, 4.0);
    for i in 0..n {
        match op {
            "pow" => {
                a[i] = complex::draws(draw, dtype, 1, -1.4, 1.4)[0];
                if complex::z(a[i]).norm() < 0.25 {
                    a[i] = Elem::C(0.5, a[i].f());
                }
                let integers = [0.0, 1.0, -1.0, 2.0, 3.0, 7.0];
                b[i] = if i % 5 == 0 {
                    Elem::C(integers[(i / 5) % integers.len()], 0.0)
                } else {
                    complex::draws(draw, dtype, 1, -2.0, 2.0)[0]
                };
            }
            "div" if complex::z(b[i]).norm() < 0.25 => b[i] = Elem::C(0.5, b[i].f()),
            _ if i % 4 == 0 && op != "div" => b[i] = a[i],
            _ => {}
        }
    }
    (a, b)
}

/// Runs `op` on `a` and `b` (tensors of logical elements `la`, `lb`) and checks the
/// broadcast result against the reference.
fn check(target: &Target, op: &str, dtype: DType, case: &str, a: &Tensor, b: &Tensor, la: &[Elem], lb: &[Elem]) {
    let out = target.run1(op, dtype, &Attrs::new(), &[a, b]);
    let shape = broadcast_shape(&[a.shape(), b.shape()]);
    let what = target.what(op, dtype, case);
    assert_eq!(out.shape(), &shape[..], "{what}: output shape");
    let (ia, ib) = (broadcast_index(&shape, a.shape()), broadcast_index(&shape, b.shape()));
    let want: Vec<Elem> = ia.iter().zip(&ib).map(|(&i, &j)| reference(op, dtype, la[i], lb[j]).unwrap()).collect();
    let (pa, pb): (Vec<Elem>, Vec<Elem>) = ia.iter().zip(&ib).map(|(&i, &j)| (la[i], lb[j])).unzip();
    let flushed = flushed_alternatives(target.flushes_subnormals, &[&pa, &pb], |v| match (op, v[0], v[1]) {
        // silu(a) is held in the compute type before the product: flushed there too
        ("silu_mul", Elem::F(a), Elem::F(b)) if !is_complex(dtype) => {
            let silu = silu_in_compute_type(dtype, a);
            let held = if silu.abs() < f64::from(f32::MIN_POSITIVE) { 0.0f64.copysign(silu) } else { silu };
            Elem::F(held * b)
        }
        _ => reference(op, dtype, v[0], v[1]).unwrap(),
    });
    assert_elems_or(&what, out.dtype(), &read(&out), &want, &flushed, |k| match (la[ia[k]], lb[ib[k]]) {
        (Elem::F(x), Elem::F(y)) => tolerance(op, dtype, x, y),
        (x @ Elem::C(..), y @ Elem::C(..)) => complex::binary_tolerance(op, dtype, x, y),
        _ => Tol::EXACT,
    });
}

/// Every (op, dtype) of the table on random operands of shapes [5, 17] and [8, 16].
pub fn binary_values(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "values");
    let mut draw = Draw::new(10);
    for (op, dtype) in target.entries("binary") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        // 85 elements, and 128: a whole number of 16-byte vectors at every width (a
        // backend's vector form)
        for shape in [[5i64, 17], [8, 16]] {
            let (a, b) = operands(&mut draw, op, dtype, (shape[0] * shape[1]) as usize);
            let (ta, tb) = (target.tensor(dtype, &shape, &a), target.tensor(dtype, &shape, &b));
            check(target, op, dtype, &format!("values {shape:?}"), &ta, &tb, &a, &b);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Every pair of special values (NaN, ±inf, ±0, extremes, subnormals; integer extremes,
/// zero divisors, shift counts past the width and negative ones), as an outer product by
/// broadcasting `[n, 1]` against `[n]`.
pub fn binary_special_values(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "special values");
    for (op, dtype) in target.entries("binary") {
        let mut values = if is_complex(dtype) { complex::specials(dtype) } else { cases::specials(dtype) };
        if is_complex(dtype) && op == "pow" {
            // zeros, ±1, ½ and -2.5 in either part: the infinities and NaN are cpow's special
            // values, the extremes overflow or vanish through it
            values.retain(|v| {
                let m = complex::z(*v).norm();
                m == 0.0 || (0.25..=4.0).contains(&m)
            });
        }
        let n = values.len() as i64;
        let (a, b) = (target.tensor(dtype, &[n, 1], &values), target.tensor(dtype, &[n], &values));
        check(target, op, dtype, "special values", &a, &b, &values, &values);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Operand shapes that broadcast: a 0-d operand, unit dims on either side, more dims on one
/// side, and empty results.
const BROADCASTS: [(&[i64], &[i64]); 8] = [
    (&[3, 1], &[1, 4]),
    (&[4], &[2, 3, 4]),
    (&[], &[5]),
    (&[2, 3], &[]),
    (&[2, 1, 3], &[4, 1]),
    (&[5, 1], &[5, 6]),
    (&[1], &[0]),
    (&[2, 0], &[2, 1]),
];

/// Broadcasting: every (op, dtype) on each pair of [`BROADCASTS`].
pub fn binary_broadcasting(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "broadcasting");
    let mut draw = Draw::new(11);
    for (op, dtype) in target.entries("binary") {
        for (sa, sb) in BROADCASTS {
            let n = cases::numel(sa).max(cases::numel(sb));
            let (a, b) = operands(&mut draw, op, dtype, n);
            let (a, b) = (&a[..cases::numel(sa)], &b[..cases::numel(sb)]);
            let (ta, tb) = (target.tensor(dtype, sa, a), target.tensor(dtype, sb, b));
            check(target, op, dtype, &format!("{sa:?} with {sb:?}"), &ta, &tb, a, b);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Non-contiguous operands, shape [3, 4, 6]: each operand transposed, strided or stride-0
/// broadcast, against the other in another layout.
pub fn binary_non_contiguous(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "non-contiguous");
    let mut draw = Draw::new(12);
    let pairs = [
        (Layout::Transposed, Layout::Contiguous),
        (Layout::Contiguous, Layout::Strided),
        (Layout::Broadcast, Layout::Transposed),
        (Layout::Strided, Layout::Broadcast),
    ];
    for (op, dtype) in target.entries("binary") {
        for (la, lb) in pairs {
            let (a, b) = operands(&mut draw, op, dtype, 72);
            let poison = cases::poison(dtype);
            let (ta, a) = target.view(dtype, &[3, 4, 6], la, &a, poison);
            let (tb, b) = target.view(dtype, &[3, 4, 6], lb, &b, poison);
            check(target, op, dtype, &format!("{la:?} with {lb:?}"), &ta, &tb, &a, &b);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty, 0-d and one-element operands of one shape.
pub fn binary_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "edge shapes");
    let mut draw = Draw::new(13);
    for (op, dtype) in target.entries("binary") {
        for shape in EDGE_SHAPES {
            let n = cases::numel(shape);
            let (a, b) = operands(&mut draw, op, dtype, n.max(1));
            let (a, b) = (&a[..n], &b[..n]);
            let (ta, tb) = (target.tensor(dtype, shape, a), target.tensor(dtype, shape, b));
            check(target, op, dtype, &format!("shape {shape:?}"), &ta, &tb, a, b);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A program of the op on a broadcast pair, captured, replayed on fresh operands: byte-equal
/// to an eager run.
pub fn binary_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "binary", "capture/replay");
    let mut draw = Draw::new(14);
    for (op, dtype) in target.entries("binary") {
        let mut pair = || {
            let (a, b) = operands(&mut draw, op, dtype, 24);
            [target.tensor(dtype, &[4, 6], &a), target.tensor(dtype, &[6], &b[..6])]
        };
        let (first, fresh) = (pair(), pair());
        let model = |t: &[Tensor]| target.run(op, dtype, &Attrs::new(), &[&t[0], &t[1]]);
        assert_replay_matches(&target.what(op, dtype, "capture/replay"), &first, &fresh, &model);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
