//! The rows family (`ops::spec::rows`): softmax and log_softmax along an axis, layer_norm and
//! rms_norm over the last dim, rope in both pairings, against float64 references;
//! add_rms_norm and add_layer_norm bit for bit against `add` then `rms_norm` or `layer_norm` on
//! the same backend (and their norms against the float64 reference of the rounded sums).
//!
//! Tolerances (ulps and eps of the compute type; half dtypes also their own rounding):
//! - softmax: (8 + |x − max| + s(n)) ulp: the exponential's error, the rounding of x − max
//!   magnified by the exponential, and s(n) = 2·log2 n + √n for a sum of n terms (a tree's
//!   depth, and the usual growth of rounding errors in a running sum, Higham §2.8);
//! - log_softmax: 4 ulp plus (8 + s(n))·eps·(|x − max| + |log Σ| + 1) absolute (the result is
//!   a difference);
//! - layer_norm: 4 ulp plus (8 + s(n))·eps·((|x| + |mean|)·|w| / √(var + eps) + |b|) absolute
//!   (x − mean cancels);
//! - rms_norm: (8 + s(n)) ulp (no cancellation);
//! - rope: 2 ulp plus 4·eps·(|x₁·c| + |x₂·s|) absolute (each output is a sum of two products).
//!
//! Rows run at several lengths, so that a backend's one-pass (row in registers) and
//! online paths are both exercised: 1, 37, 1000, 4099 and 20000 elements.

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read, read_bytes, Coverage, Layout, Target};
use crate::reference::{assert_elems, compute_format, is_real, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(op, "softmax" | "log_softmax" | "layer_norm" | "rms_norm" | "add_rms_norm" | "add_layer_norm" | "rope")
        && is_real(dtype)
}

/// The row lengths the value cases run.
const LENGTHS: [i64; 7] = [1, 37, 1000, 1024, 4096, 4099, 20000];

fn log2(n: usize) -> f64 {
    (n.max(1) as f64).log2()
}

/// `(A, R, B)` of `shape` around `axis`.
fn split(shape: &[i64], axis: i64) -> (usize, usize, usize) {
    let a = axis.rem_euclid(shape.len() as i64) as usize;
    let p = |d: &[i64]| d.iter().product::<i64>() as usize;
    (p(&shape[..a]), shape[a] as usize, p(&shape[a + 1..]))
}

/// softmax or log_softmax of `x` (shape `shape`) along `axis`: the values and tolerances.
fn softmax_reference(log: bool, dtype: DType, shape: &[i64], axis: i64, x: &[Elem]) -> (Vec<Elem>, Vec<Tol>) {
    let (outer, r, inner) = split(shape, axis);
    let eps = compute_format(dtype).eps();
    let mut want = vec![Elem::F(0.0); x.len()];
    let mut tols = vec![Tol::EXACT; x.len()];
    for o in 0..outer {
        for i in 0..inner {
            let at = |k: usize| o * r * inner + k * inner + i;
            let m = (0..r).map(|k| x[at(k)].f()).fold(f64::NEG_INFINITY, f64::max);
            let s: f64 = (0..r).map(|k| (x[at(k)].f() - m).exp()).sum();
            for k in 0..r {
                let d = x[at(k)].f() - m;
                let (value, tol) = if log {
                    let abs = (8.0 + 2.0 * log2(r) + (r as f64).sqrt()) * eps * (d.abs() + s.ln().abs() + 1.0);
                    (d - s.ln(), Tol::with_abs(4.0, if abs.is_finite() { abs } else { 0.0 }))
                } else {
                    let ulps = 8.0 + 2.0 * log2(r) + (r as f64).sqrt() + if d.is_finite() { d.abs() } else { 0.0 };
                    (d.exp() / s, Tol::ulps(ulps))
                };
                want[at(k)] = Elem::F(value);
                tols[at(k)] = tol;
            }
        }
    }
    (want, tols)
}

/// layer_norm (with `bias`) or rms_norm of `x` rows of `n`: the values and tolerances.
fn norm_reference(
    dtype: DType,
    n: usize,
    x: &[Elem],
    w: &[Elem],
    b: Option<&[Elem]>,
    eps: f64,
) -> (Vec<Elem>, Vec<Tol>) {
    let c = compute_format(dtype).eps();
    let k = 8.0 + 2.0 * log2(n) + (n as f64).sqrt();
    let mut want = Vec::with_capacity(x.len());
    let mut tols = Vec::with_capacity(x.len());
    for row in x.chunks(n.max(1)) {
        let v: Vec<f64> = row.iter().map(|e| e.f()).collect();
        match b {
            Some(b) => {
                let mean = v.iter().sum::<f64>() / n as f64;
                let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
                let inv = 1.0 / (var + eps).sqrt();
                for j in 0..row.len() {
                    let y = (v[j] - mean) * inv * w[j].f() + b[j].f();
                    want.push(Elem::F(y));
                    let abs = k * c * ((v[j].abs() + mean.abs()) * w[j].f().abs() * inv + b[j].f().abs());
                    tols.push(Tol::with_abs(4.0, abs));
                }
            }
            None => {
                let ms = v.iter().map(|x| x * x).sum::<f64>() / n as f64;
                let inv = 1.0 / (ms + eps).sqrt();
                for j in 0..row.len() {
                    want.push(Elem::F(v[j] * inv * w[j].f()));
                    tols.push(Tol::ulps(k));
                }
            }
        }
    }
    (want, tols)
}

/// rope of `x [.., seq, dim]` by `cos`, `sin [seq, dim/2]`: the values and tolerances.
fn rope_reference(
    dtype: DType,
    shape: &[i64],
    x: &[Elem],
    cos: &[Elem],
    sin: &[Elem],
    interleaved: bool,
) -> (Vec<Elem>, Vec<Tol>) {
    let nd = shape.len();
    let (seq, dim) = (shape[nd - 2] as usize, shape[nd - 1] as usize);
    let half = dim / 2;
    let eps = compute_format(dtype).eps();
    let mut want = vec![Elem::F(0.0); x.len()];
    let mut tols = vec![Tol::EXACT; x.len()];
    for (row_index, row) in x.chunks(dim.max(1)).enumerate() {
        let p = row_index % seq.max(1);
        for i in 0..half {
            let (j1, j2) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
            let (x1, x2) = (row[j1].f(), row[j2].f());
            let (c, s) = (cos[p * half + i].f(), sin[p * half + i].f());
            let base = row_index * dim;
            want[base + j1] = Elem::F(x1 * c - x2 * s);
            want[base + j2] = Elem::F(x2 * c + x1 * s);
            let abs = 4.0 * eps * ((x1 * c).abs() + (x2 * s).abs() + (x2 * c).abs() + (x1 * s).abs());
            tols[base + j1] = Tol::with_abs(2.0, abs);
            tols[base + j2] = Tol::with_abs(2.0, abs);
        }
    }
    (want, tols)
}

fn softmax_attrs(axis: i64) -> Attrs {
    Attrs::new().with("axis", AttrValue::Int(axis))
}

fn eps_attrs(eps: Option<f64>) -> Attrs {
    eps.map_or_else(Attrs::new, |e| Attrs::new().with("eps", AttrValue::Float(e)))
}

fn rope_attrs(interleaved: bool) -> Attrs {
    Attrs::new().with("interleaved", AttrValue::Bool(interleaved))
}

fn check_softmax(target: &Target, op: &str, dtype: DType, case: &str, x: &Tensor, logical: &[Elem], axis: i64) {
    let what = target.what(op, dtype, &format!("{case}, axis {axis}"));
    let out = target.run1(op, dtype, &softmax_attrs(axis), &[x]);
    assert_eq!((out.dtype(), out.shape()), (dtype, x.shape()), "{what}: output dtype and shape");
    let (want, tols) = softmax_reference(op == "log_softmax", dtype, x.shape(), axis, logical);
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

fn check_norm(
    target: &Target,
    op: &str,
    dtype: DType,
    case: &str,
    inputs: &[&Tensor],
    logical: &[&[Elem]],
    eps: Option<f64>,
) {
    let what = target.what(op, dtype, &format!("{case}, eps {eps:?}"));
    let out = target.run1(op, dtype, &eps_attrs(eps), inputs);
    assert_eq!((out.dtype(), out.shape()), (dtype, inputs[0].shape()), "{what}: output dtype and shape");
    let n = *inputs[0].shape().last().unwrap() as usize;
    let layer = op == "layer_norm";
    let eps = eps.unwrap_or(if layer { 1e-5 } else { 1e-6 });
    let (want, tols) = norm_reference(dtype, n, logical[0], logical[1], layer.then(|| logical[2]), eps);
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

/// The norm an add_ op ends in: `rms_norm` after add_rms_norm, `layer_norm` after add_layer_norm.
fn norm_after(op: &str) -> &'static str {
    if op == "add_layer_norm" {
        "layer_norm"
    } else {
        "rms_norm"
    }
}

/// add_rms_norm of `[x, residual, weight]` or add_layer_norm of `[x, residual, weight, bias]`:
/// its sum and norm byte for byte those of `add` then the norm on the same backend, the norm
/// within that norm's tolerance of the float64 reference of the rounded sums.
fn check_add_norm(target: &Target, op: &str, dtype: DType, case: &str, inputs: &[&Tensor], eps: Option<f64>) {
    let what = target.what(op, dtype, &format!("{case}, eps {eps:?}"));
    let out = target.run(op, dtype, &eps_attrs(eps), inputs).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(out.len(), 2, "{what}: two outputs");
    for t in &out {
        assert_eq!((t.dtype(), t.shape()), (dtype, inputs[0].shape()), "{what}: output dtype and shape");
    }
    let norm = norm_after(op);
    let sum = target.run1("add", dtype, &Attrs::new(), &inputs[..2]);
    let mut norm_inputs = vec![&sum];
    norm_inputs.extend(&inputs[2..]);
    let normed = target.run1(norm, dtype, &eps_attrs(eps), &norm_inputs);
    assert_eq!(read_bytes(&out[0]), read_bytes(&sum), "{what}: the sum is add's");
    assert_eq!(read_bytes(&out[1]), read_bytes(&normed), "{what}: the norm is {norm}'s of the sum");
    let n = *inputs[0].shape().last().unwrap() as usize;
    let layer = norm == "layer_norm";
    let bias = inputs.get(3).map(|b| read(b));
    let eps = eps.unwrap_or(if layer { 1e-5 } else { 1e-6 });
    let (want, tols) = norm_reference(dtype, n, &read(&sum), &read(inputs[2]), bias.as_deref(), eps);
    assert_elems(&what, dtype, &read(&out[1]), &want, |i| tols[i]);
}

#[allow(clippy::too_many_arguments)]
fn check_rope(target: &Target, dtype: DType, case: &str, t: [&Tensor; 3], l: [&[Elem]; 3], interleaved: bool) {
    let what = target.what("rope", dtype, &format!("{case}, interleaved {interleaved}"));
    let out = target.run1("rope", dtype, &rope_attrs(interleaved), &t);
    assert_eq!((out.dtype(), out.shape()), (dtype, t[0].shape()), "{what}: output dtype and shape");
    let (want, tols) = rope_reference(dtype, t[0].shape(), l[0], l[1], l[2], interleaved);
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

/// Random rope tables: cos and sin of `p·θ_i` for position p and frequency θ_i.
fn rope_tables(dtype: DType, seq: usize, half: usize) -> (Vec<Elem>, Vec<Elem>) {
    let angle = |p: usize, i: usize| p as f64 * 10000f64.powf(-(i as f64) / half.max(1) as f64);
    let table = |f: fn(f64) -> f64| {
        (0..seq * half).map(|k| Elem::F(cases::float_input(dtype, f(angle(k / half, k % half))))).collect()
    };
    (table(f64::cos), table(f64::sin))
}

/// softmax and log_softmax on every dtype: rows of every length in [`LENGTHS`], other axes of
/// a 3-d input, rows holding -inf (masked entries: 0, or -inf for log_softmax), and large
/// inputs that only a max-subtracting kernel survives.
pub fn softmax_values(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "softmax values").only("softmax").only("log_softmax");
    let mut draw = Draw::new(60);
    for (op, dtype) in target.entries("rows") {
        if !matches!(op, "softmax" | "log_softmax") {
            continue;
        }
        for n in LENGTHS {
            let rows = if n > 1000 { 2 } else { 5 };
            let values = cases::floats(&mut draw, dtype, (rows * n) as usize, -6.0, 6.0);
            let x = target.tensor(dtype, &[rows, n], &values);
            check_softmax(target, op, dtype, &format!("rows of {n}"), &x, &values, -1);
        }
        let values = cases::floats(&mut draw, dtype, 60, -6.0, 6.0);
        let x = target.tensor(dtype, &[5, 4, 3], &values);
        for axis in [0, 1, -3] {
            check_softmax(target, op, dtype, "3-d", &x, &values, axis);
        }
        let f = |v: f64| Elem::F(cases::float_input(dtype, v));
        let ninf = f64::NEG_INFINITY;
        let special = vec![
            f(ninf),
            f(1.0),
            f(ninf),
            f(2.0),
            f(1000.0),
            f(1001.0),
            f(999.0),
            f(-1000.0),
            f(3.0),
            f(3.0),
            f(3.0),
            f(3.0),
        ];
        let x = target.tensor(dtype, &[3, 4], &special);
        check_softmax(target, op, dtype, "masked and large", &x, &special, -1);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// layer_norm and rms_norm on every dtype: rows of every length, the default eps and others,
/// leading dims.
pub fn norm_values(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "norm values")
        .only("layer_norm")
        .only("rms_norm")
        .only("add_rms_norm")
        .only("add_layer_norm");
    let mut draw = Draw::new(61);
    for (op, dtype) in target.entries("rows") {
        if !matches!(op, "layer_norm" | "rms_norm" | "add_rms_norm" | "add_layer_norm") {
            continue;
        }
        for (shape, eps) in LENGTHS.iter().map(|&n| (vec![if n > 1000 { 2 } else { 4 }, n], None)).chain([
            (vec![3, 2, 33], Some(1e-3)),
            (vec![2, 16], Some(0.0)),
            (vec![1, 8], Some(0.5)),
        ]) {
            let n = *shape.last().unwrap() as usize;
            let count = cases::numel(&shape);
            let x = cases::floats(&mut draw, dtype, count, -3.0, 5.0);
            let w = cases::floats(&mut draw, dtype, n, -2.0, 2.0);
            let b = cases::floats(&mut draw, dtype, n, -1.0, 1.0);
            let tensors = [
                target.tensor(dtype, &shape, &x),
                target.tensor(dtype, &[n as i64], &w),
                target.tensor(dtype, &[n as i64], &b),
            ];
            if op.starts_with("add_") {
                let r = target.tensor(dtype, &shape, &cases::floats(&mut draw, dtype, count, -4.0, 4.0));
                let mut inputs = vec![&tensors[0], &r, &tensors[1]];
                if op == "add_layer_norm" {
                    inputs.push(&tensors[2]);
                }
                check_add_norm(target, op, dtype, &format!("shape {shape:?}"), &inputs, eps);
                continue;
            }
            let k = if op == "layer_norm" { 3 } else { 2 };
            let refs: Vec<&Tensor> = tensors.iter().take(k).collect();
            let logical: Vec<&[Elem]> = [&x[..], &w[..], &b[..]].into_iter().take(k).collect();
            check_norm(target, op, dtype, &format!("shape {shape:?}"), &refs, &logical, eps);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// rope on every dtype, both pairings, several shapes (one pair; many heads; 64-wide heads).
pub fn rope_values(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "rope values").only("rope");
    let mut draw = Draw::new(62);
    for (op, dtype) in target.entries("rows") {
        if op != "rope" {
            continue;
        }
        for shape in [&[2i64, 3, 5, 8][..], &[1, 4, 7, 64], &[1, 1, 1, 2], &[3, 9, 6]] {
            let nd = shape.len();
            let (seq, dim) = (shape[nd - 2] as usize, shape[nd - 1] as usize);
            let x = cases::floats(&mut draw, dtype, cases::numel(shape), -4.0, 4.0);
            let (cos, sin) = rope_tables(dtype, seq, dim / 2);
            let half = [seq as i64, dim as i64 / 2];
            let t =
                [target.tensor(dtype, shape, &x), target.tensor(dtype, &half, &cos), target.tensor(dtype, &half, &sin)];
            for interleaved in [false, true] {
                check_rope(
                    target,
                    dtype,
                    &format!("shape {shape:?}"),
                    [&t[0], &t[1], &t[2]],
                    [&x, &cos, &sin],
                    interleaved,
                );
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Every row op on non-contiguous inputs: softmax of a transposed tensor along either axis,
/// norms of strided rows with strided weights, rope of transposed and strided inputs and of
/// stride-0 tables.
pub fn rows_non_contiguous(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "non-contiguous");
    let mut draw = Draw::new(63);
    for (op, dtype) in target.entries("rows") {
        let poison = cases::poison(dtype);
        match op {
            "softmax" | "log_softmax" => {
                for layout in [Layout::Transposed, Layout::Strided, Layout::Broadcast] {
                    let (x, l) =
                        target.view(dtype, &[6, 9], layout, &cases::floats(&mut draw, dtype, 54, -6.0, 6.0), poison);
                    for axis in [-1, 0] {
                        check_softmax(target, op, dtype, &format!("{layout:?} input"), &x, &l, axis);
                    }
                }
            }
            "add_rms_norm" | "add_layer_norm" => {
                for (lx, lr) in [
                    (Layout::Transposed, Layout::Contiguous),
                    (Layout::Contiguous, Layout::Strided),
                    (Layout::Broadcast, Layout::Transposed),
                ] {
                    let (x, _) =
                        target.view(dtype, &[5, 12], lx, &cases::floats(&mut draw, dtype, 60, -3.0, 5.0), poison);
                    let (r, _) =
                        target.view(dtype, &[5, 12], lr, &cases::floats(&mut draw, dtype, 60, -3.0, 3.0), poison);
                    let (w, _) = target.view(
                        dtype,
                        &[12],
                        Layout::Strided,
                        &cases::floats(&mut draw, dtype, 12, -2.0, 2.0),
                        poison,
                    );
                    let (b, _) = target.view(
                        dtype,
                        &[12],
                        Layout::Broadcast,
                        &cases::floats(&mut draw, dtype, 12, -1.0, 1.0),
                        poison,
                    );
                    let mut inputs = vec![&x, &r, &w];
                    if op == "add_layer_norm" {
                        inputs.push(&b);
                    }
                    check_add_norm(target, op, dtype, &format!("{lx:?} x, {lr:?} residual"), &inputs, None);
                }
            }
            "layer_norm" | "rms_norm" => {
                for layout in [Layout::Transposed, Layout::Strided, Layout::Broadcast] {
                    let (x, lx) =
                        target.view(dtype, &[5, 12], layout, &cases::floats(&mut draw, dtype, 60, -3.0, 5.0), poison);
                    let (w, lw) = target.view(
                        dtype,
                        &[12],
                        Layout::Strided,
                        &cases::floats(&mut draw, dtype, 12, -2.0, 2.0),
                        poison,
                    );
                    let (b, lb) = target.view(
                        dtype,
                        &[12],
                        Layout::Broadcast,
                        &cases::floats(&mut draw, dtype, 12, -1.0, 1.0),
                        poison,
                    );
                    let case = format!("{layout:?} input");
                    if op == "layer_norm" {
                        check_norm(target, op, dtype, &case, &[&x, &w, &b], &[&lx, &lw, &lb], None);
                    } else {
                        check_norm(target, op, dtype, &case, &[&x, &w], &[&lx, &lw], None);
                    }
                }
            }
            _ => {
                let shape = [2i64, 3, 4, 8];
                let (cos, sin) = rope_tables(dtype, 4, 4);
                for (lx, lt) in [
                    (Layout::Transposed, Layout::Contiguous),
                    (Layout::Strided, Layout::Transposed),
                    (Layout::Contiguous, Layout::Broadcast),
                ] {
                    let (x, vx) =
                        target.view(dtype, &shape, lx, &cases::floats(&mut draw, dtype, 192, -4.0, 4.0), poison);
                    let (c, vc) = target.view(dtype, &[4, 4], lt, &cos, poison);
                    let (s, vs) = target.view(dtype, &[4, 4], lt, &sin, poison);
                    for interleaved in [false, true] {
                        check_rope(
                            target,
                            dtype,
                            &format!("{lx:?} x, {lt:?} tables"),
                            [&x, &c, &s],
                            [&vx, &vc, &vs],
                            interleaved,
                        );
                    }
                }
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty inputs (an empty axis, no rows, seq 0), one-element rows, and inputs the ops refuse
/// naming themselves: softmax of a 0-d tensor, a norm of a 0-d tensor or with a weight of
/// another length, rope with an odd head dim.
pub fn rows_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "edge shapes");
    let mut draw = Draw::new(64);
    for (op, dtype) in target.entries("rows") {
        let floats = |draw: &mut Draw, n: usize| cases::floats(draw, dtype, n, -2.0, 2.0);
        match op {
            "softmax" | "log_softmax" => {
                for (shape, axis) in [(&[3i64, 0][..], -1), (&[0, 4], -1), (&[0, 4], 0), (&[4, 1], -1), (&[1], 0)] {
                    let v = floats(&mut draw, cases::numel(shape));
                    let x = target.tensor(dtype, shape, &v);
                    check_softmax(target, op, dtype, &format!("shape {shape:?}"), &x, &v, axis);
                }
                let x = target.tensor(dtype, &[], &floats(&mut draw, 1));
                assert_refused(&target.what(op, dtype, "0-d"), target.run(op, dtype, &softmax_attrs(-1), &[&x]), &[op]);
            }
            "add_rms_norm" | "add_layer_norm" => {
                // the inputs after x and the residual: weight, and bias for add_layer_norm
                let k = if op == "add_layer_norm" { 4 } else { 3 };
                for shape in [&[0i64, 8][..], &[2, 0], &[3, 1], &[1]] {
                    let n = *shape.last().unwrap() as usize;
                    let count = cases::numel(shape);
                    let (x, r) = (floats(&mut draw, count), floats(&mut draw, count));
                    let (w, b) = (floats(&mut draw, n), floats(&mut draw, n));
                    let t = [
                        target.tensor(dtype, shape, &x),
                        target.tensor(dtype, shape, &r),
                        target.tensor(dtype, &[n as i64], &w),
                        target.tensor(dtype, &[n as i64], &b),
                    ];
                    let inputs: Vec<&Tensor> = t.iter().take(k).collect();
                    check_add_norm(target, op, dtype, &format!("shape {shape:?}"), &inputs, Some(1e-3));
                }
                let x = target.tensor(dtype, &[2, 4], &floats(&mut draw, 8));
                let short = target.tensor(dtype, &[2, 3], &floats(&mut draw, 6));
                let w = target.tensor(dtype, &[4], &floats(&mut draw, 4));
                let shorts: Vec<&Tensor> = [&x, &short].into_iter().chain(std::iter::repeat_n(&w, k - 2)).collect();
                assert_refused(
                    &target.what(op, dtype, "a residual of another shape"),
                    target.run(op, dtype, &Attrs::new(), &shorts),
                    &[op, "residual"],
                );
                let count = format!("{k} inputs");
                assert_refused(
                    &target.what(op, dtype, "too few inputs"),
                    target.run(op, dtype, &Attrs::new(), &[&x, &w]),
                    &[op, &count],
                );
                let narrow = target.tensor(dtype, &[3], &floats(&mut draw, 3));
                let narrows: Vec<&Tensor> = [&x, &x].into_iter().chain(std::iter::repeat_n(&narrow, k - 2)).collect();
                assert_refused(
                    &target.what(op, dtype, "weight of 3 for rows of 4"),
                    target.run(op, dtype, &Attrs::new(), &narrows),
                    &[op, "weight"],
                );
            }
            "layer_norm" | "rms_norm" => {
                let k = if op == "layer_norm" { 3 } else { 2 };
                for shape in [&[0i64, 8][..], &[2, 0], &[3, 1], &[1]] {
                    let n = *shape.last().unwrap() as usize;
                    let (x, w, b) =
                        (floats(&mut draw, cases::numel(shape)), floats(&mut draw, n), floats(&mut draw, n));
                    let t = [
                        target.tensor(dtype, shape, &x),
                        target.tensor(dtype, &[n as i64], &w),
                        target.tensor(dtype, &[n as i64], &b),
                    ];
                    let refs: Vec<&Tensor> = t.iter().take(k).collect();
                    let logical: Vec<&[Elem]> = [&x[..], &w[..], &b[..]].into_iter().take(k).collect();
                    check_norm(target, op, dtype, &format!("shape {shape:?}"), &refs, &logical, Some(1e-3));
                }
                let x = target.tensor(dtype, &[], &floats(&mut draw, 1));
                let w = target.tensor(dtype, &[1], &floats(&mut draw, 1));
                let inputs: Vec<&Tensor> = std::iter::repeat_n(&w, k - 1).collect();
                let zero_d: Vec<&Tensor> = std::iter::once(&x).chain(inputs.iter().copied()).collect();
                assert_refused(&target.what(op, dtype, "0-d"), target.run(op, dtype, &Attrs::new(), &zero_d), &[op]);
                let x = target.tensor(dtype, &[2, 4], &floats(&mut draw, 8));
                let w = target.tensor(dtype, &[3], &floats(&mut draw, 3));
                let wrong: Vec<&Tensor> = std::iter::once(&x).chain(std::iter::repeat_n(&w, k - 1)).collect();
                assert_refused(
                    &target.what(op, dtype, "weight of 3 for rows of 4"),
                    target.run(op, dtype, &Attrs::new(), &wrong),
                    &[op],
                );
            }
            _ => {
                for shape in [&[2i64, 3, 0, 8][..], &[0, 2, 3, 4]] {
                    let nd = shape.len();
                    let (seq, dim) = (shape[nd - 2] as usize, shape[nd - 1] as usize);
                    let x = floats(&mut draw, cases::numel(shape));
                    let (cos, sin) = rope_tables(dtype, seq, dim / 2);
                    let half = [seq as i64, dim as i64 / 2];
                    let t = [
                        target.tensor(dtype, shape, &x),
                        target.tensor(dtype, &half, &cos),
                        target.tensor(dtype, &half, &sin),
                    ];
                    check_rope(
                        target,
                        dtype,
                        &format!("shape {shape:?}"),
                        [&t[0], &t[1], &t[2]],
                        [&x, &cos, &sin],
                        false,
                    );
                }
                let x = target.tensor(dtype, &[1, 2, 3], &floats(&mut draw, 6));
                let c = target.tensor(dtype, &[2, 1], &floats(&mut draw, 2));
                assert_refused(
                    &target.what(op, dtype, "odd head dim"),
                    target.run(op, dtype, &Attrs::new(), &[&x, &c, &c]),
                    &["rope"],
                );
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of every row op captured and replayed on fresh inputs: byte-equal to eager runs.
pub fn rows_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "rows", "capture/replay");
    let mut draw = Draw::new(65);
    for (op, dtype) in target.entries("rows") {
        let what = target.what(op, dtype, "capture/replay");
        let mut floats = |shape: &[i64]| {
            target.tensor(dtype, shape, &cases::floats(&mut draw, dtype, cases::numel(shape), -2.0, 2.0))
        };
        match op {
            "softmax" | "log_softmax" => {
                let (first, fresh) = ([floats(&[7, 40])], [floats(&[7, 40])]);
                let model = |t: &[Tensor]| target.run(op, dtype, &softmax_attrs(-1), &[&t[0]]);
                assert_replay_matches(&what, &first, &fresh, &model);
            }
            "add_rms_norm" | "add_layer_norm" => {
                let (w, b) = (floats(&[40]), floats(&[40]));
                let (first, fresh) = ([floats(&[7, 40]), floats(&[7, 40])], [floats(&[7, 40]), floats(&[7, 40])]);
                let model = |t: &[Tensor]| {
                    let mut inputs = vec![&t[0], &t[1], &w];
                    if op == "add_layer_norm" {
                        inputs.push(&b);
                    }
                    target.run(op, dtype, &Attrs::new(), &inputs)
                };
                assert_replay_matches(&what, &first, &fresh, &model);
            }
            "layer_norm" | "rms_norm" => {
                let (w, b) = (floats(&[40]), floats(&[40]));
                let (first, fresh) = ([floats(&[7, 40])], [floats(&[7, 40])]);
                let model = |t: &[Tensor]| {
                    let inputs: Vec<&Tensor> = if op == "layer_norm" { vec![&t[0], &w, &b] } else { vec![&t[0], &w] };
                    target.run(op, dtype, &Attrs::new(), &inputs)
                };
                assert_replay_matches(&what, &first, &fresh, &model);
            }
            _ => {
                let (c, s) = (floats(&[5, 4]), floats(&[5, 4]));
                let (first, fresh) = ([floats(&[2, 3, 5, 8])], [floats(&[2, 3, 5, 8])]);
                let model = |t: &[Tensor]| target.run(op, dtype, &rope_attrs(true), &[&t[0], &c, &s]);
                assert_replay_matches(&what, &first, &fresh, &model);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
