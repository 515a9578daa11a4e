//! The attention family (`ops::spec::attention`): `sdpa(q, k, v[, mask])` with grouped-query
//! heads, causal masking aligned bottom-right, an additive mask broadcast to
//! `[b, hq, sq, sk]` and a scale, against a float64 reference; a query row with no visible key
//! is all zeros.
//!
//! Tolerance, per output row: a score's float32 dot product errs by up to d·2⁻²³·scale·Σ|q·k|
//! (δ); the softmax turns errors δ in the scores into relative errors of 2δ in the weights, and
//! the exponential, the normalisation and the weighted sum over sk keys add (8 + sk)·eps; so
//! |error| ≤ max|v|·(2δ + (8 + sk)·2⁻²³), plus 2 ulp of float32 and a half dtype's own rounding.
//! With the probabilities rounded to a half dtype before they weigh the values (the default
//! attention operands; cuDNN's fused kernel rounds its unnormalised weights the same way), each
//! weight errs by up to that dtype's eps relative, so up to eps·max|v| more (held to twice it).

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, broadcast_index, read, Coverage, Layout, Target};
use crate::reference::{assert_elems, pow2, Elem, Tol, BF16, F16};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    op == "sdpa" && matches!(dtype, DType::Float32 | DType::Float16 | DType::Bfloat16 | DType::Float64)
}

/// The sizes of a case.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub b: usize,
    pub hq: usize,
    pub hk: usize,
    pub sq: usize,
    pub sk: usize,
    pub d: usize,
    pub dv: usize,
}

impl Sizes {
    fn q(&self) -> [i64; 4] {
        [self.b as i64, self.hq as i64, self.sq as i64, self.d as i64]
    }
    fn k(&self) -> [i64; 4] {
        [self.b as i64, self.hk as i64, self.sk as i64, self.d as i64]
    }
    fn v(&self) -> [i64; 4] {
        [self.b as i64, self.hk as i64, self.sk as i64, self.dv as i64]
    }
}

/// The attributes of a case.
fn attrs(causal: bool, scale: Option<f64>) -> Attrs {
    let attrs = Attrs::new().with("causal", AttrValue::Bool(causal));
    match scale {
        Some(s) => attrs.with("scale", AttrValue::Float(s)),
        None => attrs,
    }
}

/// The reference output `[b, hq, sq, dv]` and each element's tolerance.
#[allow(clippy::too_many_arguments)]
pub fn reference(
    z: Sizes,
    q: &[Elem],
    k: &[Elem],
    v: &[Elem],
    mask: Option<(&[i64], &[Elem])>,
    causal: bool,
    scale: Option<f64>,
    rounding: f64,
) -> (Vec<Elem>, Vec<Tol>) {
    let scale = scale.unwrap_or(1.0 / (z.d as f64).sqrt());
    let target = [z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64];
    let mask_index = mask.map(|(shape, _)| broadcast_index(&target, shape));
    let group = z.hq / z.hk.max(1);
    let eps = pow2(-23);
    let (mut want, mut tols) = (Vec::new(), Vec::new());
    for b in 0..z.b {
        for h in 0..z.hq {
            let kh = h / group.max(1);
            for i in 0..z.sq {
                let visible = if causal { (i + 1 + z.sk).saturating_sub(z.sq).min(z.sk) } else { z.sk };
                let qi = |e: usize| q[((b * z.hq + h) * z.sq + i) * z.d + e].f();
                let kj = |j: usize, e: usize| k[((b * z.hk + kh) * z.sk + j) * z.d + e].f();
                let vj = |j: usize, e: usize| v[((b * z.hk + kh) * z.sk + j) * z.dv + e].f();
                let mut scores = Vec::with_capacity(visible);
                let mut delta: f64 = 0.0;
                for j in 0..visible {
                    let dot: f64 = (0..z.d).map(|e| qi(e) * kj(j, e)).sum();
                    let magnitude: f64 = (0..z.d).map(|e| (qi(e) * kj(j, e)).abs()).sum();
                    let mut s = dot * scale;
                    let mut err = z.d as f64 * eps * scale.abs() * magnitude;
                    if let (Some((_, m)), Some(index)) = (mask, &mask_index) {
                        let add = m[index[((b * z.hq + h) * z.sq + i) * z.sk + j]].f();
                        s += add;
                        if add.is_finite() {
                            err += eps * s.abs();
                        }
                    }
                    delta = delta.max(err);
                    scores.push(s);
                }
                let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> =
                    scores.iter().map(|&s| if top == f64::NEG_INFINITY { 0.0 } else { (s - top).exp() }).collect();
                let total: f64 = weights.iter().sum();
                let vmax = (0..visible)
                    .flat_map(|j| (0..z.dv).map(move |e| (j, e)))
                    .map(|(j, e)| vj(j, e).abs())
                    .fold(0.0, f64::max);
                let abs = vmax * (2.0 * delta + (8.0 + z.sk as f64) * eps + 2.0 * rounding);
                for e in 0..z.dv {
                    let o = if total > 0.0 {
                        (0..visible).map(|j| weights[j] * vj(j, e)).sum::<f64>() / total
                    } else {
                        0.0
                    };
                    want.push(Elem::F(o));
                    tols.push(Tol::with_abs(2.0, abs));
                }
            }
        }
    }
    (want, tols)
}

/// Runs sdpa on the given tensors and checks it.
#[allow(clippy::too_many_arguments)]
fn check(
    target: &Target,
    dtype: DType,
    case: &str,
    z: Sizes,
    t: &[&Tensor],
    l: &[&[Elem]],
    causal: bool,
    scale: Option<f64>,
) {
    let what = target.what("sdpa", dtype, &format!("{case}, {z:?}, causal {causal}, scale {scale:?}"));
    let out = target.run1("sdpa", dtype, &attrs(causal, scale), t);
    let shape = [z.b as i64, z.hq as i64, z.sq as i64, z.dv as i64];
    assert_eq!((out.dtype(), out.shape()), (dtype, &shape[..]), "{what}: output dtype and shape");
    let mask = t.get(3).map(|m| (m.shape(), l[3]));
    let rounded =
        nbxtensor::settings::host::attention_operands() == nbxtensor::settings::host::AttentionOperands::Input;
    let rounding = match dtype {
        DType::Float16 if rounded => F16.eps(),
        DType::Bfloat16 if rounded => BF16.eps(),
        _ => 0.0,
    };
    let (want, tols) = reference(z, l[0], l[1], l[2], mask, causal, scale, rounding);
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

fn floats(draw: &mut Draw, dtype: DType, shape: &[i64]) -> Vec<Elem> {
    cases::floats(draw, dtype, cases::numel(shape), -1.0, 1.0)
}

/// Runs a case of sizes `z`: contiguous q, k, v (and a mask of `mask` shape, when given).
#[allow(clippy::too_many_arguments)]
fn run_case(
    target: &Target,
    draw: &mut Draw,
    dtype: DType,
    case: &str,
    z: Sizes,
    mask: Option<&[i64]>,
    causal: bool,
    scale: Option<f64>,
) {
    let (lq, lk, lv) = (floats(draw, dtype, &z.q()), floats(draw, dtype, &z.k()), floats(draw, dtype, &z.v()));
    let mut tensors =
        vec![target.tensor(dtype, &z.q(), &lq), target.tensor(dtype, &z.k(), &lk), target.tensor(dtype, &z.v(), &lv)];
    let mut logical = vec![lq, lk, lv];
    if let Some(shape) = mask {
        // an additive mask: 0 or -2 mostly, -inf at a few places
        let lm: Vec<Elem> = (0..cases::numel(shape))
            .map(|i| {
                Elem::F(if i % 7 == 3 {
                    f64::NEG_INFINITY
                } else if i % 3 == 0 {
                    -2.0
                } else {
                    0.0
                })
            })
            .collect();
        tensors.push(target.tensor(dtype, shape, &lm));
        logical.push(lm);
    }
    let refs: Vec<&Tensor> = tensors.iter().collect();
    let lrefs: Vec<&[Elem]> = logical.iter().map(|v| &v[..]).collect();
    check(target, dtype, case, z, &refs, &lrefs, causal, scale);
}

/// sdpa on every dtype: heads equal and grouped, causal with fewer, as many and more queries
/// than keys, masks of several broadcast shapes, a given scale, and non-contiguous q, k, v.
pub fn sdpa_values(target: &Target) {
    let mut coverage = Coverage::new(target, "attention", "values");
    let mut draw = Draw::new(80);
    for (op, dtype) in target.entries("attention") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        let plain = Sizes { b: 2, hq: 4, hk: 4, sq: 5, sk: 7, d: 16, dv: 16 };
        let grouped = Sizes { b: 1, hq: 8, hk: 2, sq: 6, sk: 9, d: 32, dv: 24 };
        run_case(target, &mut draw, dtype, "plain", plain, None, false, None);
        run_case(target, &mut draw, dtype, "grouped", grouped, None, false, Some(0.3));
        for (sq, sk) in [(3, 10), (6, 6), (8, 5)] {
            let z = Sizes { b: 1, hq: 4, hk: 2, sq, sk, d: 16, dv: 8 };
            run_case(target, &mut draw, dtype, "causal", z, None, true, None);
        }
        let z = Sizes { b: 2, hq: 4, hk: 2, sq: 5, sk: 11, d: 16, dv: 16 };
        for mask in [&[5i64, 11][..], &[2, 1, 1, 11], &[1, 4, 5, 11], &[2, 4, 5, 11]] {
            run_case(target, &mut draw, dtype, &format!("mask {mask:?}"), z, Some(mask), false, None);
            run_case(target, &mut draw, dtype, &format!("mask {mask:?}"), z, Some(mask), true, None);
        }
        // q, k, v as views: q and v transposed in their last two dims, k strided
        let z = Sizes { b: 1, hq: 2, hk: 2, sq: 6, sk: 8, d: 12, dv: 12 };
        let poison = cases::poison(dtype);
        let (q, lq) = target.view(dtype, &z.q(), Layout::Transposed, &floats(&mut draw, dtype, &z.q()), poison);
        let (k, lk) = target.view(dtype, &z.k(), Layout::Strided, &floats(&mut draw, dtype, &z.k()), poison);
        let (v, lv) = target.view(dtype, &z.v(), Layout::Transposed, &floats(&mut draw, dtype, &z.v()), poison);
        check(target, dtype, "non-contiguous", z, &[&q, &k, &v], &[&lq, &lk, &lv], true, None);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Long rows of keys: one query over 300 and 1000 keys (a backend may split them into
/// partials), two queries over 600, with and without a mask, head dims 64 and 128.
pub fn sdpa_long_rows(target: &Target) {
    let mut coverage = Coverage::new(target, "attention", "long rows");
    let mut draw = Draw::new(81);
    for (op, dtype) in target.entries("attention") {
        for (sq, sk, d) in [(1, 300, 64), (1, 1000, 128), (2, 600, 64)] {
            let z = Sizes { b: 1, hq: 4, hk: 2, sq, sk, d, dv: d };
            run_case(target, &mut draw, dtype, "long rows", z, None, false, None);
            run_case(target, &mut draw, dtype, "long rows, causal", z, None, true, None);
            run_case(
                target,
                &mut draw,
                dtype,
                "long rows, masked",
                z,
                Some(&[1, 1, sq as i64, sk as i64]),
                false,
                None,
            );
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Rows with no visible key are zeros (a mask of -inf everywhere, no keys at all); empty
/// queries and batches give empty outputs; shapes the spec refuses are named.
pub fn sdpa_edge_cases(target: &Target) {
    let mut coverage = Coverage::new(target, "attention", "edge cases");
    let mut draw = Draw::new(82);
    for (op, dtype) in target.entries("attention") {
        // a mask of -inf over every key of query row 1
        let z = Sizes { b: 1, hq: 2, hk: 1, sq: 3, sk: 4, d: 8, dv: 8 };
        let (lq, lk, lv) =
            (floats(&mut draw, dtype, &z.q()), floats(&mut draw, dtype, &z.k()), floats(&mut draw, dtype, &z.v()));
        let lm: Vec<Elem> = (0..12).map(|i| Elem::F(if i / 4 == 1 { f64::NEG_INFINITY } else { 0.5 })).collect();
        let t = [
            target.tensor(dtype, &z.q(), &lq),
            target.tensor(dtype, &z.k(), &lk),
            target.tensor(dtype, &z.v(), &lv),
            target.tensor(dtype, &[3, 4], &lm),
        ];
        check(
            target,
            dtype,
            "a row masked everywhere",
            z,
            &[&t[0], &t[1], &t[2], &t[3]],
            &[&lq, &lk, &lv, &lm],
            false,
            None,
        );
        for z in [
            Sizes { b: 1, hq: 2, hk: 2, sq: 3, sk: 0, d: 8, dv: 4 },
            Sizes { b: 1, hq: 2, hk: 2, sq: 0, sk: 5, d: 8, dv: 4 },
            Sizes { b: 0, hq: 2, hk: 2, sq: 3, sk: 5, d: 8, dv: 4 },
            Sizes { b: 1, hq: 1, hk: 1, sq: 1, sk: 1, d: 1, dv: 1 },
        ] {
            run_case(target, &mut draw, dtype, "edge sizes", z, None, false, None);
        }
        let q = target.tensor(dtype, &[1, 3, 2, 4], &floats(&mut draw, dtype, &[1, 3, 2, 4]));
        let k = target.tensor(dtype, &[1, 2, 2, 4], &floats(&mut draw, dtype, &[1, 2, 2, 4]));
        assert_refused(
            &target.what(op, dtype, "3 query heads over 2"),
            target.run(op, dtype, &Attrs::new(), &[&q, &k, &k]),
            &["sdpa"],
        );
        let q = target.tensor(dtype, &[1, 2, 2, 4], &floats(&mut draw, dtype, &[1, 2, 2, 4]));
        let mask = target.tensor(dtype, &[3, 2], &floats(&mut draw, dtype, &[3, 2]));
        assert_refused(
            &target.what(op, dtype, "a mask that does not broadcast"),
            target.run(op, dtype, &Attrs::new(), &[&q, &k, &k, &mask]),
            &["sdpa", "mask"],
        );
        let flat = target.tensor(dtype, &[2, 2, 4], &floats(&mut draw, dtype, &[2, 2, 4]));
        assert_refused(
            &target.what(op, dtype, "3-d q"),
            target.run(op, dtype, &Attrs::new(), &[&flat, &k, &k]),
            &["sdpa"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A causal, masked sdpa program captured and replayed on fresh queries: byte-equal to an
/// eager run (a decode over 300 keys included).
pub fn sdpa_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "attention", "capture/replay");
    let mut draw = Draw::new(83);
    for (op, dtype) in target.entries("attention") {
        for z in [
            Sizes { b: 1, hq: 4, hk: 2, sq: 6, sk: 9, d: 16, dv: 16 },
            Sizes { b: 1, hq: 2, hk: 2, sq: 1, sk: 300, d: 64, dv: 64 },
        ] {
            let k = target.tensor(dtype, &z.k(), &floats(&mut draw, dtype, &z.k()));
            let v = target.tensor(dtype, &z.v(), &floats(&mut draw, dtype, &z.v()));
            let mask_shape = [z.sq as i64, z.sk as i64];
            let mask = target.tensor(dtype, &mask_shape, &floats(&mut draw, dtype, &mask_shape));
            let mut input = || [target.tensor(dtype, &z.q(), &floats(&mut draw, dtype, &z.q()))];
            let (first, fresh) = (input(), input());
            let model = |t: &[Tensor]| target.run(op, dtype, &attrs(true, None), &[&t[0], &k, &v, &mask]);
            assert_replay_matches(&target.what(op, dtype, &format!("capture/replay, {z:?}")), &first, &fresh, &model);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
