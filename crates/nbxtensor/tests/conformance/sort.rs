//! The sort family (`ops::spec::sort`): `sort` and `argsort` along one axis (ascending or
//! descending, always stable) and `searchsorted` of values in a sorted 1-d tensor.
//!
//! References: each line's positions sorted stably by key — NaN after every number ascending,
//! before every number descending, -0.0 equal to 0.0 — the values picked exactly (bits and
//! all); a search counts the sorted elements below a value (left) or not above it (right).

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Target, LAYOUTS};
use crate::reference::{assert_elems, is_int, is_real, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};
use std::cmp::Ordering;

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(op, "sort" | "argsort" | "searchsorted") && (is_real(dtype) || is_int(dtype))
}

/// The ascending order of two elements: NaN after every number, NaNs equal, -0.0 equal to 0.0.
fn order(a: Elem, b: Elem) -> Ordering {
    match (a, b) {
        (Elem::I(x), Elem::I(y)) => x.cmp(&y),
        _ => {
            let (x, y) = (a.f(), b.f());
            match (x.is_nan(), y.is_nan()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                _ => x.partial_cmp(&y).expect("numbers"),
            }
        }
    }
}

fn attrs(axis: i64, descending: bool) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(axis)).with("descending", AttrValue::Bool(descending))
}

/// Inputs with ties everywhere (few distinct values), NaN and signed zeros among the floats.
fn inputs(draw: &mut Draw, dtype: DType, n: usize) -> Vec<Elem> {
    (0..n)
        .map(|i| {
            let small = draw.int(if is_int(dtype) && !crate::reference::is_signed(dtype) { 0 } else { -4 }, 4);
            match () {
                _ if is_int(dtype) => Elem::I(small),
                _ if i % 11 == 3 => Elem::F(f64::NAN),
                _ if i % 13 == 5 => Elem::F(-0.0),
                _ => Elem::F(small as f64 / 2.0),
            }
        })
        .collect()
}

/// The reference of sort (`indices`: argsort) along `axis` of `values` of `shape`.
fn reference(indices: bool, descending: bool, shape: &[i64], values: &[Elem], axis: usize) -> Vec<Elem> {
    let (outer, extent, inner) = (cases::numel(&shape[..axis]), shape[axis] as usize, cases::numel(&shape[axis + 1..]));
    let mut out = vec![Elem::I(0); values.len()];
    for o in 0..outer {
        for j in 0..inner {
            let at = |k: usize| (o * extent + k) * inner + j;
            let mut positions: Vec<usize> = (0..extent).collect();
            // stable: equal keys keep their order
            positions.sort_by(|&p, &q| {
                let by_value = order(values[at(p)], values[at(q)]);
                if descending {
                    by_value.reverse()
                } else {
                    by_value
                }
            });
            for (r, &p) in positions.iter().enumerate() {
                out[at(r)] = if indices { Elem::I(p as i128) } else { values[at(p)] };
            }
        }
    }
    out
}

fn check(
    target: &Target,
    op: &str,
    dtype: DType,
    case: &str,
    x: &Tensor,
    logical: &[Elem],
    axis: i64,
    descending: bool,
) {
    let what = target.what(op, dtype, &format!("{case}, axis {axis}, descending {descending}"));
    let out = target.run1(op, dtype, &attrs(axis, descending), &[x]);
    let indices = op == "argsort";
    let resolved = axis.rem_euclid(x.ndim() as i64) as usize;
    let want = reference(indices, descending, x.shape(), logical, resolved);
    assert_eq!((out.dtype(), out.shape()), (if indices { DType::Int64 } else { dtype }, x.shape()), "{what}: meta");
    assert_elems(&what, out.dtype(), &read(&out), &want, |_| Tol::EXACT);
}

/// sort and argsort of every dtype along each axis of a [5, 7, 6] input, ascending and
/// descending, and of non-contiguous views; empty and one-element lines; a 0-d input and an
/// axis out of range refused by name. searchsorted of every dtype on both sides.
pub fn sort_values(target: &Target) {
    let mut coverage = Coverage::new(target, "sort", "values");
    let mut draw = Draw::new(90);
    for (op, dtype) in target.entries("sort") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        if op == "searchsorted" {
            search(target, dtype, &mut draw);
            coverage.saw(op, dtype);
            continue;
        }
        let values = inputs(&mut draw, dtype, 210);
        let x = target.tensor(dtype, &[5, 7, 6], &values);
        for axis in [0, 1, 2, -1] {
            for descending in [false, true] {
                check(target, op, dtype, "values", &x, &values, axis, descending);
            }
        }
        for layout in LAYOUTS {
            let (v, logical) =
                target.view(dtype, &[3, 4, 5], layout, &inputs(&mut draw, dtype, 60), cases::poison(dtype));
            check(target, op, dtype, &format!("{layout:?} input"), &v, &logical, 1, false);
        }
        for shape in [&[0, 3][..], &[3, 0], &[1]] {
            let values = inputs(&mut draw, dtype, cases::numel(shape));
            let x = target.tensor(dtype, shape, &values);
            check(target, op, dtype, &format!("shape {shape:?}"), &x, &values, 0, true);
        }
        let scalar = target.tensor(dtype, &[], &inputs(&mut draw, dtype, 1));
        assert_refused(
            &target.what(op, dtype, "0-d"),
            target.run(op, dtype, &attrs(0, false), &[&scalar]),
            &[op, "0-d"],
        );
        assert_refused(&target.what(op, dtype, "axis 3"), target.run(op, dtype, &attrs(3, false), &[&x]), &[op, "3"]);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// searchsorted on `dtype`: a sorted input with repeats (and a trailing NaN for the floats),
/// values of shape [3, 9] (and a transposed view of them), both sides.
fn search(target: &Target, dtype: DType, draw: &mut Draw) {
    let mut sorted = inputs(draw, dtype, 40);
    sorted.sort_by(|&a, &b| order(a, b));
    let values = inputs(draw, dtype, 27);
    let s = target.tensor(dtype, &[40], &sorted);
    let v = target.tensor(dtype, &[3, 9], &values);
    for right in [false, true] {
        let what = target.what("searchsorted", dtype, &format!("right {right}"));
        let attrs = Attrs::new().with("right", AttrValue::Bool(right));
        let count = |x: Elem| {
            sorted
                .iter()
                .filter(|&&e| matches!((order(e, x), right), (Ordering::Less, _) | (Ordering::Equal, true)))
                .count()
        };
        let out = target.run1("searchsorted", dtype, &attrs, &[&s, &v]);
        assert_eq!((out.dtype(), out.shape()), (DType::Int64, &[3, 9][..]), "{what}: meta");
        let want: Vec<Elem> = values.iter().map(|&x| Elem::I(count(x) as i128)).collect();
        assert_elems(&what, DType::Int64, &read(&out), &want, |_| Tol::EXACT);
        let t = v.transpose(0, 1).unwrap();
        let out = target.run1("searchsorted", dtype, &attrs, &[&s, &t]);
        let want: Vec<Elem> = (0..27).map(|k| Elem::I(count(values[(k % 3) * 9 + k / 3]) as i128)).collect();
        assert_elems(&format!("{what}, transposed values"), DType::Int64, &read(&out), &want, |_| Tol::EXACT);
    }
    let matrix = target.tensor(dtype, &[4, 10], &sorted);
    assert_refused(
        &target.what("searchsorted", dtype, "a 2-d sorted input"),
        target.run("searchsorted", dtype, &Attrs::new(), &[&matrix, &v]),
        &["searchsorted", "1-d"],
    );
}

/// Programs of sort and argsort (over a transposed view) captured and replayed on fresh
/// inputs: byte-equal to eager runs; and of searchsorted.
pub fn sort_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "sort", "capture/replay");
    let mut draw = Draw::new(91);
    for (op, dtype) in target.entries("sort") {
        let what = target.what(op, dtype, "capture/replay");
        if op == "searchsorted" {
            let mut sorted = inputs(&mut draw, dtype, 16);
            sorted.sort_by(|&a, &b| order(a, b));
            let s = target.tensor(dtype, &[16], &sorted);
            let mut input = || [target.tensor(dtype, &[4, 5], &inputs(&mut draw, dtype, 20))];
            let (first, fresh) = (input(), input());
            let model = |t: &[Tensor]| target.run(op, dtype, &Attrs::new(), &[&s, &t[0]]);
            assert_replay_matches(&what, &first, &fresh, &model);
        } else {
            let mut input = || [target.tensor(dtype, &[6, 33], &inputs(&mut draw, dtype, 198))];
            let (first, fresh) = (input(), input());
            let model = |t: &[Tensor]| target.run(op, dtype, &attrs(1, true), &[&t[0].transpose(0, 1)?]);
            assert_replay_matches(&what, &first, &fresh, &model);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
