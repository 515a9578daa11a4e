//! The scan family (`ops::spec::scan`): `cumulative_sum` and `cumulative_prod` along one
//! axis, `include_initial` starting with the identity (one longer along the axis).
//!
//! References: the float64 running value in order along the axis (each output rounded once:
//! exact for float32 and float64, ½ ulp of float32 more for the half formats, which round
//! through it), the integers' running value wrapped to int64 or uint64 (the sum's dtype).

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Target, LAYOUTS};
use crate::reference::{assert_elems, is_int, is_real, is_signed, wrap, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(op, "cumulative_sum" | "cumulative_prod") && (is_real(dtype) || is_int(dtype))
}

fn attrs(axis: i64, include_initial: bool) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(axis)).with("include_initial", AttrValue::Bool(include_initial))
}

fn output_dtype(dtype: DType) -> DType {
    match (is_int(dtype), is_signed(dtype)) {
        (true, true) => DType::Int64,
        (true, false) => DType::Uint64,
        _ => dtype,
    }
}

/// The output shape and elements of `op` on `values` of `shape` along `axis`.
fn reference(
    op: &str,
    dtype: DType,
    shape: &[i64],
    values: &[Elem],
    axis: usize,
    first: bool,
) -> (Vec<i64>, Vec<Elem>) {
    let (outer, extent, inner) = (cases::numel(&shape[..axis]), shape[axis] as usize, cases::numel(&shape[axis + 1..]));
    let prod = op == "cumulative_prod";
    let out_dtype = output_dtype(dtype);
    let length = extent + usize::from(first);
    let mut out = vec![Elem::I(0); outer * length * inner];
    for o in 0..outer {
        for j in 0..inner {
            let (mut f, mut i) = (if prod { 1.0 } else { 0.0 }, if prod { 1i128 } else { 0 });
            let at = |k: usize| (o * length + k) * inner + j;
            let emit = |f: f64, i: i128| if is_int(dtype) { Elem::I(i) } else { Elem::F(f) };
            if first {
                out[at(0)] = emit(f, i);
            }
            for k in 0..extent {
                let x = values[(o * extent + k) * inner + j];
                if is_int(dtype) {
                    i = wrap(out_dtype, if prod { i.wrapping_mul(x.i()) } else { i + x.i() });
                } else {
                    f = if prod { f * x.f() } else { f + x.f() };
                }
                out[at(k + usize::from(first))] = emit(f, i);
            }
        }
    }
    let mut out_shape = shape.to_vec();
    out_shape[axis] = length as i64;
    (out_shape, out)
}

fn tolerance(dtype: DType) -> Tol {
    if matches!(dtype, DType::Float16 | DType::Bfloat16) {
        Tol::ulps(0.5)
    } else {
        Tol::EXACT_VALUE
    }
}

fn check(target: &Target, op: &str, dtype: DType, case: &str, x: &Tensor, logical: &[Elem], axis: i64, first: bool) {
    let what = target.what(op, dtype, &format!("{case}, axis {axis}, include_initial {first}"));
    let out = target.run1(op, dtype, &attrs(axis, first), &[x]);
    let resolved = axis.rem_euclid(x.ndim() as i64) as usize;
    let (shape, want) = reference(op, dtype, x.shape(), logical, resolved, first);
    assert_eq!((out.dtype(), out.shape()), (output_dtype(dtype), &shape[..]), "{what}: output dtype and shape");
    assert_elems(&what, out.dtype(), &read(&out), &want, |_| tolerance(dtype));
}

fn inputs(draw: &mut Draw, op: &str, dtype: DType, n: usize) -> Vec<Elem> {
    if is_int(dtype) {
        return cases::ints(draw, dtype, n);
    }
    let (low, high) = if op == "cumulative_prod" { (0.5, 1.5) } else { (-10.0, 10.0) };
    cases::floats(draw, dtype, n, low, high)
}

/// Every (op, dtype) along each axis of a [4, 6, 5] input and of its non-contiguous views,
/// with and without the initial value; empty axes, a 0-d input and an axis out of range.
pub fn scan_values(target: &Target) {
    let mut coverage = Coverage::new(target, "scan", "values");
    let mut draw = Draw::new(80);
    for (op, dtype) in target.entries("scan") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        let values = inputs(&mut draw, op, dtype, 120);
        let x = target.tensor(dtype, &[4, 6, 5], &values);
        for axis in [0, 1, 2, -1] {
            for first in [false, true] {
                check(target, op, dtype, "values", &x, &values, axis, first);
            }
        }
        for layout in LAYOUTS {
            let (v, logical) =
                target.view(dtype, &[3, 4, 5], layout, &inputs(&mut draw, op, dtype, 60), cases::poison(dtype));
            check(target, op, dtype, &format!("{layout:?} input"), &v, &logical, 1, true);
        }
        for shape in [&[0, 3][..], &[3, 0], &[1]] {
            let values = inputs(&mut draw, op, dtype, cases::numel(shape));
            let x = target.tensor(dtype, shape, &values);
            check(target, op, dtype, &format!("shape {shape:?}"), &x, &values, 0, true);
        }
        let scalar = target.tensor(dtype, &[], &inputs(&mut draw, op, dtype, 1));
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

/// Programs of each scan (over a transposed view) captured and replayed on fresh inputs:
/// byte-equal to eager runs.
pub fn scan_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "scan", "capture/replay");
    let mut draw = Draw::new(81);
    for (op, dtype) in target.entries("scan") {
        let mut input = || [target.tensor(dtype, &[6, 33], &inputs(&mut draw, op, dtype, 198))];
        let (first, fresh) = (input(), input());
        let model = |t: &[Tensor]| target.run(op, dtype, &attrs(1, true), &[&t[0].transpose(0, 1)?]);
        assert_replay_matches(&target.what(op, dtype, "capture/replay"), &first, &fresh, &model);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
