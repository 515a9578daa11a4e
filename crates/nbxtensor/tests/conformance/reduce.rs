//! The reduce family (`ops::spec::reduce`): sum, prod, mean, max, min, all, any over axes
//! (every axis when absent, negatives from the end, keepdim), argmax and argmin along one axis.
//! prod: the float64 product of the elements in order (float inputs), rounded once, or the
//! wrapping 64-bit product (integers); all and any: bool, an element true when nonzero (NaN
//! too); argmin the first minimum, a NaN counting as the minimum.
//!
//! References: the float sums and means in float64 with compensated summation, the integer
//! sums in i128 wrapped to int64 (signed inputs) or uint64 (unsigned), max and min propagating
//! NaN, argmax the first maximum with a NaN counting as the maximum. Tolerances: a float sum or
//! mean is accumulated in float64 and rounded once, so ½ ulp of the dtype's compute type plus
//! the float64 accumulation's error (2·n·2⁻⁵³·Σ|x|); max, min, argmax and the integer sums are
//! exact. The sum and mean of no elements are 0 and NaN; max, min and argmax of none are
//! refused naming the op.
//!
//! Complex inputs (sum, prod, mean): accumulated in complex128 and rounded once, as the real
//! ones; the references sum each part (compensated) and multiply in order from 1 with numpy's
//! four real products, the tolerance ½ ulp of the part at |reference| plus the accumulation's
//! error (the sum of the parts' magnitudes, or |product|, times 2·n·2⁻⁵³).

use crate::cases::{self, Draw};
use crate::complex;
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Target, LAYOUTS};
use crate::reference::{assert_elems, is_complex, is_int, is_real, is_signed, pow2, wrap, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    let number = is_real(dtype) || is_int(dtype);
    match op {
        "sum" | "prod" => number || is_complex(dtype),
        "max" | "min" | "argmax" | "argmin" => number,
        "mean" => is_real(dtype) || is_complex(dtype),
        "all" | "any" => number || dtype == DType::Bool,
        _ => false,
    }
}

/// Whether `op` searches one axis for an index.
fn one_axis(op: &str) -> bool {
    matches!(op, "argmax" | "argmin")
}

/// The axes a reduction takes: `None` for every axis.
#[derive(Clone, Debug)]
struct Axes {
    axes: Option<Vec<i64>>,
    keepdim: bool,
}

impl Axes {
    fn attrs(&self, op: &str) -> Attrs {
        let mut attrs = Attrs::new().with("keepdim", AttrValue::Bool(self.keepdim));
        if one_axis(op) {
            attrs = attrs.with("axis", AttrValue::Int(self.axes.as_ref().expect("argmax and argmin take an axis")[0]));
        } else if let Some(axes) = &self.axes {
            attrs = attrs.with("axes", AttrValue::Ints(axes.clone()));
        }
        attrs
    }

    /// The reduced dims of a tensor of `nd` dims.
    fn reduced(&self, nd: usize) -> Vec<bool> {
        match &self.axes {
            None => vec![true; nd],
            Some(axes) => (0..nd).map(|d| axes.iter().any(|&a| a.rem_euclid(nd.max(1) as i64) as usize == d)).collect(),
        }
    }
}

/// The output's shape and, for each output element in row-major order, the row-major indices
/// of the input elements it reduces (in their row-major order).
fn groups(shape: &[i64], reduced: &[bool], keepdim: bool) -> (Vec<i64>, Vec<Vec<usize>>) {
    let out_shape: Vec<i64> = shape
        .iter()
        .zip(reduced)
        .filter_map(|(&e, &r)| match (r, keepdim) {
            (false, _) => Some(e),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect();
    let kept: Vec<i64> = shape.iter().zip(reduced).map(|(&e, &r)| if r { 1 } else { e }).collect();
    let outputs = cases::numel(&kept);
    let mut members = vec![Vec::new(); outputs];
    for i in 0..cases::numel(shape) {
        let (mut rest, mut out, mut stride) = (i, 0usize, 1usize);
        for d in (0..shape.len()).rev() {
            let e = shape[d] as usize;
            let k = rest % e;
            rest /= e;
            if !reduced[d] {
                out += k * stride;
                stride *= e;
            }
        }
        members[out].push(i);
    }
    (out_shape, members)
}

/// Compensated (Neumaier) float64 sum.
fn fsum(values: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut c) = (0.0f64, 0.0f64);
    for v in values {
        let t = sum + v;
        if !t.is_finite() {
            sum = t;
            c = 0.0;
            continue;
        }
        c += if sum.abs() >= v.abs() { (sum - t) + v } else { (v - t) + sum };
        sum = t;
    }
    sum + c
}

/// The reference of `op` on the elements `xs` of `dtype`, and its tolerance.
fn reduce_one(op: &str, dtype: DType, xs: &[Elem]) -> (Elem, Tol) {
    if is_complex(dtype) {
        return reduce_complex(op, xs);
    }
    let n = xs.len() as f64;
    let floats = || xs.iter().map(|e| e.f());
    let accumulation = 2.0 * n * pow2(-53) * floats().map(f64::abs).filter(|v| v.is_finite()).sum::<f64>();
    match op {
        "sum" if is_int(dtype) => {
            let total: i128 = xs.iter().map(|e| e.i()).sum();
            let out = if is_signed(dtype) { DType::Int64 } else { DType::Uint64 };
            (Elem::I(wrap(out, total)), Tol::EXACT)
        }
        "sum" => (Elem::F(fsum(floats())), Tol::with_abs(0.5, accumulation)),
        "prod" if is_int(dtype) => {
            let out = if is_signed(dtype) { DType::Int64 } else { DType::Uint64 };
            let product = xs.iter().fold(1i128, |p, e| wrap(out, p.wrapping_mul(e.i())));
            (Elem::I(product), Tol::EXACT)
        }
        "prod" => {
            let product = floats().product::<f64>();
            let error = 2.0 * n * pow2(-53) * product.abs();
            (Elem::F(product), Tol::with_abs(0.5, if error.is_finite() { error } else { 0.0 }))
        }
        "all" | "any" => {
            let truth = |e: &Elem| match *e {
                Elem::F(x) => x != 0.0,
                Elem::I(x) => x != 0,
                Elem::B(b) => b,
                _ => unreachable!("real numbers and bool"),
            };
            let value = if op == "all" { xs.iter().all(truth) } else { xs.iter().any(truth) };
            (Elem::B(value), Tol::EXACT)
        }
        "mean" => (Elem::F(fsum(floats()) / n), Tol::with_abs(0.5, accumulation / n)),
        "max" | "min" => {
            let larger = op == "max";
            let best = xs.iter().copied().reduce(|a, b| match (a, b) {
                (Elem::F(x), _) if x.is_nan() => a,
                (_, Elem::F(y)) if y.is_nan() => b,
                (Elem::F(x), Elem::F(y)) => {
                    if (y > x) == larger && y != x {
                        b
                    } else {
                        a
                    }
                }
                (Elem::I(x), Elem::I(y)) => {
                    if (y > x) == larger && y != x {
                        b
                    } else {
                        a
                    }
                }
                _ => unreachable!("one dtype"),
            });
            (best.expect("a reduction over elements"), Tol::EXACT_VALUE)
        }
        "argmax" | "argmin" => {
            // argmin: the argmax of the negated values (a NaN still counting first)
            let sign = if op == "argmax" { 1.0 } else { -1.0 };
            let key = |e: &Elem| match *e {
                Elem::F(x) if x.is_nan() => (1, 0.0, 0),
                Elem::F(x) => (0, sign * x, 0),
                Elem::I(x) => (0, 0.0, sign as i128 * x),
                _ => unreachable!("numbers"),
            };
            let mut best = 0usize;
            for (i, e) in xs.iter().enumerate() {
                let (kb, ke) = (key(&xs[best]), key(e));
                let greater = ke.0 > kb.0 || ke.0 == kb.0 && kb.0 == 0 && (ke.1 > kb.1 || ke.2 > kb.2);
                if greater {
                    best = i;
                }
            }
            (Elem::I(best as i128), Tol::EXACT)
        }
        other => panic!("no reference for {other}"),
    }
}

/// The reference of the complex `op` (sum, prod, mean) on `xs`, and its tolerance.
fn reduce_complex(op: &str, xs: &[Elem]) -> (Elem, Tol) {
    let n = xs.len() as f64;
    let zs: Vec<num_complex::Complex64> = xs.iter().map(|&e| complex::z(e)).collect();
    if op == "prod" {
        let product = zs.iter().fold(num_complex::Complex64::new(1.0, 0.0), |p, &v| p * v);
        let error = 2.0 * n * pow2(-53) * product.norm();
        return (complex::elem(product), Tol::with_abs(0.5, if error.is_finite() { error } else { 0.0 }));
    }
    let (re, im) = (fsum(zs.iter().map(|v| v.re)), fsum(zs.iter().map(|v| v.im)));
    let magnitude: f64 = zs.iter().map(|v| v.re.abs() + v.im.abs()).filter(|v| v.is_finite()).sum();
    let accumulation = 2.0 * n * pow2(-53) * magnitude;
    match op {
        "sum" => (Elem::C(re, im), Tol::with_abs(0.5, accumulation)),
        "mean" => (Elem::C(re / n, im / n), Tol::with_abs(0.5, accumulation / n)),
        other => panic!("no complex reference for {other}"),
    }
}

/// The output dtype of `op` on `dtype`.
fn output_dtype(op: &str, dtype: DType) -> DType {
    match op {
        "argmax" | "argmin" => DType::Int64,
        "all" | "any" => DType::Bool,
        "sum" | "prod" if is_int(dtype) && is_signed(dtype) => DType::Int64,
        "sum" | "prod" if is_int(dtype) => DType::Uint64,
        _ => dtype,
    }
}

/// Runs `op` over `axes` of `x` (logical elements `logical`) and checks it.
fn check(target: &Target, op: &str, dtype: DType, case: &str, x: &Tensor, logical: &[Elem], axes: &Axes) {
    let what = target.what(op, dtype, &format!("{case}, axes {:?}, keepdim {}", axes.axes, axes.keepdim));
    let out = target.run1(op, dtype, &axes.attrs(op), &[x]);
    let (shape, members) = groups(x.shape(), &axes.reduced(x.ndim()), axes.keepdim);
    assert_eq!((out.dtype(), out.shape()), (output_dtype(op, dtype), &shape[..]), "{what}: output dtype and shape");
    let (want, tols): (Vec<Elem>, Vec<Tol>) = members
        .iter()
        .map(|m| {
            let xs: Vec<Elem> = m.iter().map(|&i| logical[i]).collect();
            if xs.is_empty() {
                // the sum of nothing is 0, its product 1, its mean NaN; all true, any false
                let identity = if op == "prod" { 1 } else { 0 };
                let number = if is_int(dtype) {
                    Elem::I(identity)
                } else if is_complex(dtype) {
                    Elem::C(identity as f64, 0.0)
                } else {
                    Elem::F(identity as f64)
                };
                let value = match op {
                    "mean" if is_complex(dtype) => Elem::C(f64::NAN, f64::NAN),
                    "mean" => Elem::F(f64::NAN),
                    "all" => Elem::B(true),
                    "any" => Elem::B(false),
                    _ => number,
                };
                return (value, Tol::EXACT_VALUE);
            }
            reduce_one(op, dtype, &xs)
        })
        .unzip();
    assert_elems(&what, out.dtype(), &read(&out), &want, |i| tols[i]);
}

/// The axes each case of a 3-d input runs: one axis, two, all (absent), negatives.
fn axes_cases(op: &str, keepdim: bool) -> Vec<Axes> {
    let list: Vec<Option<Vec<i64>>> = if one_axis(op) {
        vec![Some(vec![0]), Some(vec![1]), Some(vec![2]), Some(vec![-1])]
    } else {
        vec![Some(vec![-1]), Some(vec![0]), Some(vec![1]), Some(vec![0, 2]), Some(vec![2, -3]), None]
    };
    list.into_iter().map(|axes| Axes { axes, keepdim }).collect()
}

fn inputs(draw: &mut Draw, dtype: DType, n: usize) -> Vec<Elem> {
    cases::elems(draw, dtype, n, -10.0, 10.0)
}

/// Every (op, dtype) of the table over each set of axes of a [4, 6, 5] input.
pub fn reduce_values(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "values");
    let mut draw = Draw::new(50);
    for (op, dtype) in target.entries("reduce") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        let values = inputs(&mut draw, dtype, 120);
        let x = target.tensor(dtype, &[4, 6, 5], &values);
        for axes in axes_cases(op, false) {
            check(target, op, dtype, "values", &x, &values, &axes);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// keepdim on every set of axes, the empty list of axes (nothing reduced), and axes out of
/// range or given twice refused naming the op.
pub fn reduce_axes_and_keepdim(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "axes and keepdim");
    let mut draw = Draw::new(51);
    for (op, dtype) in target.entries("reduce") {
        let values = inputs(&mut draw, dtype, 60);
        let x = target.tensor(dtype, &[3, 4, 5], &values);
        for axes in axes_cases(op, true) {
            check(target, op, dtype, "keepdim", &x, &values, &axes);
        }
        if !one_axis(op) {
            check(target, op, dtype, "no axes", &x, &values, &Axes { axes: Some(vec![]), keepdim: false });
            let twice = Axes { axes: Some(vec![1, -2]), keepdim: false };
            assert_refused(
                &target.what(op, dtype, "an axis twice"),
                target.run(op, dtype, &twice.attrs(op), &[&x]),
                &[op],
            );
        }
        let out_of_range = Axes { axes: Some(vec![3]), keepdim: false };
        assert_refused(
            &target.what(op, dtype, "axis 3 of 3 dims"),
            target.run(op, dtype, &out_of_range.attrs(op), &[&x]),
            &[op, "3"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Rows holding NaN, ±inf, both infinities, ties and the integer extremes (sums that wrap in
/// 64 bits), reduced along the last axis.
pub fn reduce_special_values(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "special values");
    for (op, dtype) in target.entries("reduce") {
        let rows: Vec<Vec<Elem>> = if dtype == DType::Bool {
            let (t, f) = (Elem::B(true), Elem::B(false));
            vec![vec![t, f, t], vec![f, f, f], vec![t, t, t], vec![f, t, f]]
        } else if is_int(dtype) {
            let s = cases::specials(dtype);
            let mut rows: Vec<Vec<Elem>> = s.chunks(3).filter(|c| c.len() == 3).map(|c| c.to_vec()).collect();
            let (_, high) = crate::reference::int_range(dtype).unwrap();
            rows.push(vec![Elem::I(high); 3]);
            rows.push(vec![Elem::I(0), Elem::I(high), Elem::I(high)]);
            rows
        } else if is_complex(dtype) {
            let max = crate::reference::format(dtype).unwrap().max;
            let (inf, nan) = (f64::INFINITY, f64::NAN);
            let c = Elem::C;
            vec![
                vec![c(1.0, nan), c(2.0, 0.0), c(3.0, 1.0)],
                vec![c(inf, 0.0), c(1.0, 1.0), c(-2.0, 0.0)],
                vec![c(inf, 0.0), c(-inf, 0.0), c(0.0, 0.0)],
                vec![c(0.0, inf), c(0.0, -inf), c(1.0, 2.0)],
                vec![c(-0.0, -0.0), c(-0.0, -0.0), c(-0.0, -0.0)],
                vec![c(max, max), c(max, 0.0), c(-max, 0.0)],
            ]
        } else {
            let f = |v: f64| Elem::F(cases::float_input(dtype, v));
            let max = crate::reference::format(dtype).unwrap().max;
            vec![
                vec![f(1.0), f(f64::NAN), f(3.0)],
                vec![f(f64::NAN), f(2.0), f(f64::NAN)],
                vec![f(f64::INFINITY), f(1.0), f(-2.0)],
                vec![f(f64::NEG_INFINITY), f(-1.0), f(-2.0)],
                vec![f(f64::INFINITY), f(f64::NEG_INFINITY), f(0.0)],
                vec![f(2.0), f(5.0), f(5.0)],
                vec![f(-0.0), f(-0.0), f(-0.0)],
                vec![f(max), f(max), f(-max)],
            ]
        };
        let values: Vec<Elem> = rows.concat();
        let x = target.tensor(dtype, &[rows.len() as i64, 3], &values);
        check(target, op, dtype, "special values", &x, &values, &Axes { axes: Some(vec![-1]), keepdim: false });
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Transposed, strided and stride-0 inputs of shape [3, 4, 5].
pub fn reduce_non_contiguous(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "non-contiguous");
    let mut draw = Draw::new(52);
    for (op, dtype) in target.entries("reduce") {
        for layout in LAYOUTS {
            let (x, logical) =
                target.view(dtype, &[3, 4, 5], layout, &inputs(&mut draw, dtype, 60), cases::poison(dtype));
            for axes in axes_cases(op, false) {
                check(target, op, dtype, &format!("{layout:?} input"), &x, &logical, &axes);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty inputs (a sum of nothing is 0, a mean NaN; max, min, argmax refused unless the output
/// is empty too), 0-d inputs and one-element axes.
pub fn reduce_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "edge shapes");
    let mut draw = Draw::new(53);
    for (op, dtype) in target.entries("reduce") {
        let identity = matches!(op, "sum" | "prod" | "mean" | "all" | "any");
        // (shape, axes): an empty reduced axis, an empty kept axis, a unit axis
        let cases_: [(&[i64], Option<Vec<i64>>); 5] = [
            (&[3, 0], Some(vec![1])),
            (&[0, 4], Some(vec![1])),
            (&[0], Some(vec![0])),
            (&[4, 1], Some(vec![1])),
            (&[1], Some(vec![0])),
        ];
        for (shape, axes) in cases_ {
            let values = inputs(&mut draw, dtype, cases::numel(shape));
            let x = target.tensor(dtype, shape, &values);
            let axes = Axes { axes, keepdim: false };
            let reduced = axes.reduced(shape.len());
            let empty_group = shape.iter().zip(&reduced).any(|(&e, &r)| r && e == 0);
            let (out_shape, _) = groups(shape, &reduced, false);
            if empty_group && !identity && cases::numel(&out_shape) > 0 {
                assert_refused(
                    &target.what(op, dtype, &format!("{shape:?}: no elements")),
                    target.run(op, dtype, &axes.attrs(op), &[&x]),
                    &[op],
                );
            } else {
                check(target, op, dtype, &format!("shape {shape:?}"), &x, &values, &axes);
            }
        }
        // 0-d: every axis (argmax and argmin take none)
        if !one_axis(op) {
            let values = inputs(&mut draw, dtype, 1);
            let x = target.tensor(dtype, &[], &values);
            check(target, op, dtype, "0-d", &x, &values, &Axes { axes: None, keepdim: false });
            check(target, op, dtype, "0-d", &x, &values, &Axes { axes: None, keepdim: true });
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of each reduction (over a transposed view) captured and replayed on fresh inputs:
/// byte-equal to eager runs.
pub fn reduce_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "reduce", "capture/replay");
    let mut draw = Draw::new(54);
    for (op, dtype) in target.entries("reduce") {
        let axes = Axes { axes: Some(vec![0]), keepdim: op == "sum" };
        let attrs = axes.attrs(op);
        let mut input = || [target.tensor(dtype, &[6, 33], &inputs(&mut draw, dtype, 198))];
        let (first, fresh) = (input(), input());
        let model = |t: &[Tensor]| target.run(op, dtype, &attrs, &[&t[0].transpose(0, 1)?]);
        assert_replay_matches(&target.what(op, dtype, "capture/replay"), &first, &fresh, &model);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
