//! The select family (`ops::spec::select`): `where(cond, a, b)` over elements of every dtype
//! (of 1, 2, 4 or 8 bytes; 16, complex128, on the CPU), and `masked_fill(x, mask)` with its value fitted to the dtype
//! (a float past the finite range clamps to it, ±inf stays where the format has one, NaN stays;
//! an integer clamps to the dtype's range; a fraction or NaN for an integer dtype and anything
//! but 0 or 1 for bool are refused). Both broadcast all their operands. Exact: they copy.

use crate::cases::{self, Draw, EDGE_SHAPES};
use crate::harness::{
    assert_refused, assert_replay_matches, broadcast_index, broadcast_shape, read, Coverage, Layout, Target,
};
use crate::reference::{assert_elems, format, int_range, is_int, width, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// The dtypes `where` selects: every dtype with a per-element width.
fn element_dtypes() -> Vec<DType> {
    DType::ALL.into_iter().filter(|d| d.itemsize().is_ok()).collect()
}

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    match op {
        "where" => dtype == DType::Bool,
        "masked_fill" => {
            dtype == DType::Bool || is_int(dtype) || format(dtype).is_some_and(|_| !crate::reference::is_complex(dtype))
        }
        _ => false,
    }
}

/// Checks `where(cond, a, b)` against the reference (shapes broadcast).
fn check_where(target: &Target, dtype: DType, case: &str, t: [&Tensor; 3], l: [&[Elem]; 3]) {
    let what = target.what("where", dtype, case);
    let out = target.run1("where", DType::Bool, &Attrs::new(), &t);
    let shape = broadcast_shape(&[t[0].shape(), t[1].shape(), t[2].shape()]);
    assert_eq!((out.dtype(), out.shape()), (dtype, &shape[..]), "{what}: output dtype and shape");
    let index: Vec<Vec<usize>> = t.iter().map(|x| broadcast_index(&shape, x.shape())).collect();
    let want: Vec<Elem> = (0..cases::numel(&shape))
        .map(|k| if l[0][index[0][k]].b() { l[1][index[1][k]] } else { l[2][index[2][k]] })
        .collect();
    assert_elems(&what, dtype, &read(&out), &want, |_| Tol::EXACT);
}

fn bools(draw: &mut Draw, n: usize) -> Vec<Elem> {
    cases::elems(draw, DType::Bool, n, 0.0, 1.0)
}

/// `where` on elements of every dtype, shapes broadcast three ways, non-contiguous operands,
/// and the edge shapes; complex128 (16 bytes) on the CPU, refused by name by a backend that
/// selects at most 8 bytes.
pub fn where_values(target: &Target) {
    let mut coverage = Coverage::new(target, "select", "where").only("where");
    if !target.has("where", DType::Bool) {
        return coverage.assert_complete();
    }
    let mut draw = Draw::new(20);
    // (cond, a, b) shapes
    let shapes: [[&[i64]; 3]; 5] = [
        [&[3, 5], &[3, 5], &[3, 5]],
        [&[4, 1], &[1, 5], &[]],
        [&[], &[3], &[2, 1]],
        [&[2, 3, 1], &[3, 4], &[1, 4]],
        [&[0, 1], &[1, 3], &[1]],
    ];
    for dtype in element_dtypes() {
        if width(dtype) > 8 && target.name != "cpu" {
            let t = target.tensor(dtype, &[2], &cases::elems(&mut draw, dtype, 2, -1.0, 1.0));
            let c = target.tensor(DType::Bool, &[2], &bools(&mut draw, 2));
            assert_refused(
                &target.what("where", dtype, "16-byte elements"),
                target.run("where", DType::Bool, &Attrs::new(), &[&c, &t, &t]),
                &["where", dtype.name()],
            );
            continue;
        }
        for s in shapes {
            let c = bools(&mut draw, cases::numel(s[0]));
            let a = cases::elems(&mut draw, dtype, cases::numel(s[1]), -9.0, 9.0);
            let b = cases::elems(&mut draw, dtype, cases::numel(s[2]), -9.0, 9.0);
            let t =
                [target.tensor(DType::Bool, s[0], &c), target.tensor(dtype, s[1], &a), target.tensor(dtype, s[2], &b)];
            check_where(target, dtype, &format!("shapes {s:?}"), [&t[0], &t[1], &t[2]], [&c, &a, &b]);
        }
        let n = 24;
        let poison = cases::poison(dtype);
        let (c, lc) = target.view(DType::Bool, &[4, 6], Layout::Transposed, &bools(&mut draw, n), Elem::B(false));
        let (a, la) =
            target.view(dtype, &[4, 6], Layout::Strided, &cases::elems(&mut draw, dtype, n, -9.0, 9.0), poison);
        let (b, lb) =
            target.view(dtype, &[4, 6], Layout::Broadcast, &cases::elems(&mut draw, dtype, n, -9.0, 9.0), poison);
        check_where(target, dtype, "non-contiguous", [&c, &a, &b], [&lc, &la, &lb]);
        for shape in EDGE_SHAPES {
            let k = cases::numel(shape);
            let (lc, la, lb) = (
                bools(&mut draw, k),
                cases::elems(&mut draw, dtype, k, -9.0, 9.0),
                cases::elems(&mut draw, dtype, k, -9.0, 9.0),
            );
            let t = [
                target.tensor(DType::Bool, shape, &lc),
                target.tensor(dtype, shape, &la),
                target.tensor(dtype, shape, &lb),
            ];
            check_where(target, dtype, &format!("shape {shape:?}"), [&t[0], &t[1], &t[2]], [&lc, &la, &lb]);
        }
        if crate::reference::is_real(dtype) {
            let s = cases::specials(dtype);
            let m = s.len();
            let (c, a) = (bools(&mut draw, m), target.tensor(dtype, &[m as i64], &s));
            let b: Vec<Elem> = s.iter().rev().copied().collect();
            let t = [target.tensor(DType::Bool, &[m as i64], &c), a, target.tensor(dtype, &[m as i64], &b)];
            check_where(target, dtype, "special values", [&t[0], &t[1], &t[2]], [&c, &s, &b]);
        }
    }
    coverage.saw("where", DType::Bool);
    coverage.assert_complete();
}

/// A masked_fill value and the element it fills `dtype` with (`None`: the spec refuses it).
fn fitted(dtype: DType, value: &AttrValue) -> Option<Elem> {
    let real = match *value {
        AttrValue::Float(v) => v,
        AttrValue::Int(v) => v as f64,
        AttrValue::Bool(b) => f64::from(u8::from(b)),
        _ => return None,
    };
    if dtype == DType::Bool {
        return match real {
            0.0 => Some(Elem::B(false)),
            1.0 => Some(Elem::B(true)),
            _ => None,
        };
    }
    if let Some((low, high)) = int_range(dtype) {
        let integral = match *value {
            AttrValue::Int(v) => i128::from(v),
            _ if real.is_nan() || real.fract() != 0.0 && real.is_finite() => return None,
            _ => real as i128,
        };
        return Some(Elem::I(integral.clamp(low, high)));
    }
    let f = format(dtype)?;
    let clamped = if real.is_nan() || real.is_infinite() && f.inf { real } else { real.clamp(-f.max, f.max) };
    // float64 holds the value as given; narrower floats round it through float32, as the
    // spec's kernels write it
    Some(Elem::F(if dtype == DType::Float64 { clamped } else { f.round(clamped as f32 as f64) }))
}

/// The fill values a case runs on `dtype`, the refused ones included.
fn fill_values(dtype: DType) -> Vec<AttrValue> {
    if dtype == DType::Bool {
        return vec![AttrValue::Bool(true), AttrValue::Bool(false), AttrValue::Int(1), AttrValue::Int(2)];
    }
    if is_int(dtype) {
        return vec![
            AttrValue::Int(7),
            AttrValue::Int(-1000),
            AttrValue::Int(i64::MAX),
            AttrValue::Int(i64::MIN),
            AttrValue::Float(3.0),
            AttrValue::Float(f64::NEG_INFINITY),
            AttrValue::Float(2.5),
            AttrValue::Float(f64::NAN),
        ];
    }
    vec![
        AttrValue::Float(0.5),
        AttrValue::Float(0.1),
        AttrValue::Float(-3.39e38),
        AttrValue::Float(f64::NEG_INFINITY),
        AttrValue::Float(f64::NAN),
        AttrValue::Int(-3),
    ]
}

/// Checks masked_fill of `x` under `mask` with `value` against the reference.
fn check_fill(
    target: &Target,
    dtype: DType,
    case: &str,
    x: &Tensor,
    mask: &Tensor,
    lx: &[Elem],
    lm: &[Elem],
    value: &AttrValue,
) {
    let what = target.what("masked_fill", dtype, &format!("{case}, value {value:?}"));
    let attrs = Attrs::new().with("value", value.clone());
    let Some(fill) = fitted(dtype, value) else {
        return assert_refused(&what, target.run("masked_fill", dtype, &attrs, &[x, mask]), &["masked_fill"]);
    };
    let out = target.run1("masked_fill", dtype, &attrs, &[x, mask]);
    let shape = broadcast_shape(&[x.shape(), mask.shape()]);
    assert_eq!(out.shape(), &shape[..], "{what}: output shape");
    let (ix, im) = (broadcast_index(&shape, x.shape()), broadcast_index(&shape, mask.shape()));
    let want: Vec<Elem> = ix.iter().zip(&im).map(|(&i, &j)| if lm[j].b() { fill } else { lx[i] }).collect();
    assert_elems(&what, dtype, &read(&out), &want, |_| Tol::EXACT);
}

/// masked_fill on every dtype of the table: each fill value (clamped, rounded, refused), masks
/// broadcast both ways, non-contiguous operands, the edge shapes.
pub fn masked_fill_values(target: &Target) {
    let mut coverage = Coverage::new(target, "select", "masked_fill").only("masked_fill");
    let mut draw = Draw::new(21);
    let shapes: [(&[i64], &[i64]); 5] =
        [(&[3, 5], &[3, 5]), (&[3, 5], &[5]), (&[3, 5], &[3, 1]), (&[3, 5], &[2, 3, 5]), (&[4], &[])];
    for (op, dtype) in target.entries("select") {
        if op != "masked_fill" {
            continue;
        }
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        for value in fill_values(dtype) {
            for (sx, sm) in shapes {
                let lx = cases::elems(&mut draw, dtype, cases::numel(sx), -9.0, 9.0);
                let lm = bools(&mut draw, cases::numel(sm));
                let (x, m) = (target.tensor(dtype, sx, &lx), target.tensor(DType::Bool, sm, &lm));
                check_fill(target, dtype, &format!("{sx:?} masked by {sm:?}"), &x, &m, &lx, &lm, &value);
            }
        }
        let value = fill_values(dtype).remove(0);
        let (x, lx) = target.view(
            dtype,
            &[4, 6],
            Layout::Transposed,
            &cases::elems(&mut draw, dtype, 24, -9.0, 9.0),
            cases::poison(dtype),
        );
        let (m, lm) = target.view(DType::Bool, &[4, 6], Layout::Strided, &bools(&mut draw, 24), Elem::B(true));
        check_fill(target, dtype, "non-contiguous", &x, &m, &lx, &lm, &value);
        let (m, lm) = target.view(DType::Bool, &[4, 6], Layout::Broadcast, &bools(&mut draw, 24), Elem::B(true));
        check_fill(target, dtype, "stride-0 mask", &x, &m, &lx, &lm, &value);
        for shape in EDGE_SHAPES {
            let k = cases::numel(shape);
            let (lx, lm) = (cases::elems(&mut draw, dtype, k, -9.0, 9.0), bools(&mut draw, k));
            let (x, m) = (target.tensor(dtype, shape, &lx), target.tensor(DType::Bool, shape, &lm));
            check_fill(target, dtype, &format!("shape {shape:?}"), &x, &m, &lx, &lm, &value);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of where (on every element width) and masked_fill (on every dtype) captured and
/// replayed on fresh inputs: byte-equal to eager runs.
pub fn select_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "select", "capture/replay");
    let mut draw = Draw::new(22);
    for (op, dtype) in target.entries("select") {
        if op == "where" {
            for element in element_dtypes().into_iter().filter(|&d| width(d) <= 8) {
                let mut inputs = || {
                    [
                        target.tensor(DType::Bool, &[3, 4], &bools(&mut draw, 12)),
                        target.tensor(element, &[4], &cases::elems(&mut draw, element, 4, -9.0, 9.0)),
                        target.tensor(element, &[3, 4], &cases::elems(&mut draw, element, 12, -9.0, 9.0)),
                    ]
                };
                let (first, fresh) = (inputs(), inputs());
                let model = |t: &[Tensor]| target.run("where", DType::Bool, &Attrs::new(), &[&t[0], &t[1], &t[2]]);
                assert_replay_matches(&target.what("where", element, "capture/replay"), &first, &fresh, &model);
            }
        } else {
            let attrs = Attrs::new().with("value", fill_values(dtype).remove(0));
            let mut inputs = || {
                [
                    target.tensor(dtype, &[3, 4], &cases::elems(&mut draw, dtype, 12, -9.0, 9.0)),
                    target.tensor(DType::Bool, &[4], &bools(&mut draw, 4)),
                ]
            };
            let (first, fresh) = (inputs(), inputs());
            let model = |t: &[Tensor]| target.run(op, dtype, &attrs, &[&t[0], &t[1]]);
            assert_replay_matches(&target.what(op, dtype, "capture/replay"), &first, &fresh, &model);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
