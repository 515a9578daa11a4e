//! The sample family (`ops::spec::sample`): one token a row of logits, drawn from Philox word
//! `position` of stream `row`. The spec defines every step in integers or in named float32
//! operations, so a backend must give the reference's token exactly: the reference here is a
//! second implementation built on the spec's primitives (`weight`, `key`, `scaled`) with sorts
//! where the kernels select by radix, checked over vocabularies smaller and larger than a GPU
//! block, ties, NaN and infinite logits, every filter and the position's dtypes; and a replay
//! of a captured draw at fresh positions equals the eager draws.

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Target};
use crate::reference::Elem;
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::ops::spec::sample::{key, scaled, weight};
use nbxtensor::random::Words;
use nbxtensor::{DType, Tensor};

/// Whether this suite has a check of `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    op == "sample" && matches!(dtype, DType::Float32 | DType::Float16 | DType::Bfloat16)
}

/// The filters of a case: temperature, top_k, top_p.
#[derive(Clone, Copy, Debug)]
struct Filters {
    temperature: f64,
    top_k: usize,
    top_p: f64,
}

fn attrs(f: Filters, seed: u64) -> Attrs {
    Attrs::new()
        .with("temperature", AttrValue::Float(f.temperature))
        .with("top_k", AttrValue::Int(f.top_k as i64))
        .with("top_p", AttrValue::Float(f.top_p))
        .with("seed", AttrValue::Int(seed as i64))
}

/// The token of one row of (already rounded) logits, or `None` for a row with no finite logit.
fn reference(row: &[f64], f: Filters, seed: u64, stream: u64, position: u64) -> Option<i64> {
    let inverse = (1.0 / f.temperature) as f32;
    let zs: Vec<f32> =
        row.iter().map(|&x| (x as f32) * inverse).map(|z| if z.is_nan() { f32::NEG_INFINITY } else { z }).collect();
    let m = zs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return None;
    }
    if m == f32::INFINITY {
        return zs.iter().position(|&z| z == m).map(|j| j as i64);
    }
    let mut kept = vec![true; zs.len()];
    if f.top_k > 0 && f.top_k < zs.len() {
        let mut keys: Vec<u32> = zs.iter().map(|&z| key(z)).collect();
        keys.sort_unstable_by(|a, b| b.cmp(a));
        let edge = keys[f.top_k - 1];
        kept.iter_mut().zip(&zs).for_each(|(k, &z)| *k = key(z) >= edge);
    }
    let mut w: Vec<u64> = zs.iter().zip(&kept).map(|(&z, &k)| if k { weight(z - m) } else { 0 }).collect();
    if f.top_p < 1.0 {
        let fraction = (f.top_p * 4_294_967_296.0).round().min(u32::MAX as f64) as u32;
        let limit = scaled(fraction, w.iter().sum()).max(1);
        // a weight stays when the weights strictly heavier than it sum below the limit
        let mut sorted = w.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let sums: Vec<u64> = std::iter::once(0)
            .chain(sorted.iter().scan(0, |s, &x| {
                *s += x;
                Some(*s)
            }))
            .collect();
        let heavier = |x: u64| sums[sorted.partition_point(|&s| s > x)];
        let stays: Vec<bool> = w.iter().map(|&x| x > 0 && heavier(x) < limit).collect();
        w.iter_mut().zip(stays).for_each(|(x, s)| *x = if s { *x } else { 0 });
    }
    let mut word = [0u32];
    Words { seed, stream }.fill(position, &mut word);
    let target = scaled(word[0], w.iter().sum());
    let mut running = 0u64;
    w.iter()
        .position(|&x| {
            running += x;
            running > target
        })
        .map(|j| j as i64)
}

/// The row values of a logits case: drawn, then with ties, NaN, -inf and +inf placed as asked.
fn logits(draw: &mut Draw, dtype: DType, vocab: usize, spread: f64, special: &str) -> Vec<Elem> {
    let mut row = cases::floats(draw, dtype, vocab, -spread, spread);
    match special {
        "ties" => {
            for j in (0..vocab).step_by(3) {
                row[j] = Elem::F(cases::float_input(dtype, 2.5));
            }
        }
        "nan" => {
            row[vocab / 2] = Elem::F(f64::NAN);
            row[0] = Elem::F(f64::NEG_INFINITY);
        }
        "inf" => {
            row[vocab - 1] = Elem::F(f64::INFINITY);
            row[vocab / 3] = Elem::F(f64::INFINITY);
        }
        "none" => row.iter_mut().for_each(|x| *x = Elem::F(f64::NEG_INFINITY)),
        _ => {}
    }
    row
}

fn position(target: &Target, at: i64, dtype: DType, shape: &[i64]) -> Tensor {
    target.tensor(dtype, shape, &[Elem::I(i128::from(at))])
}

/// The tokens of a call against the reference, row by row.
#[allow(clippy::too_many_arguments)]
fn check(target: &Target, dtype: DType, shape: &[i64], values: &[Elem], f: Filters, seed: u64, at: i64, pdtype: DType) {
    let vocab = *shape.last().unwrap() as usize;
    let x = target.tensor(dtype, shape, values);
    let p = position(target, at, pdtype, if at % 2 == 0 { &[] } else { &[1] });
    let what = target.what("sample", dtype, &format!("{shape:?} {f:?} seed {seed} at {at}"));
    let out = target.run1("sample", dtype, &attrs(f, seed), &[&x, &p]);
    assert_eq!(out.shape(), &shape[..shape.len() - 1], "{what}: the output's shape");
    let tokens: Vec<i128> = read(&out).into_iter().map(Elem::i).collect();
    for (r, row) in values.chunks(vocab).enumerate() {
        let row: Vec<f64> = row.iter().map(|e| e.f()).collect();
        let want = reference(&row, f, seed, r as u64, at as u64).expect("a row with a finite logit");
        assert_eq!(tokens[r], i128::from(want), "{what}: row {r}");
    }
}

/// Every dtype: rows of 1, 7, 1,000, 5,000 and 40,000 logits, the filters alone and together,
/// top-k of 1 and past the vocabulary, a tiny top-p, ties, NaN and -inf, +inf; the draws of
/// many positions cover the distribution (and a two-token row is drawn about evenly).
pub fn sample_values(target: &Target) {
    let mut coverage = Coverage::new(target, "sample", "values");
    let mut draw = Draw::new(141);
    let plain = Filters { temperature: 1.0, top_k: 0, top_p: 1.0 };
    for (op, dtype) in target.entries("sample") {
        for (shape, f, spread, special) in [
            (vec![7i64], plain, 2.0, ""),
            (vec![1], plain, 2.0, ""),
            (vec![3, 1000], Filters { temperature: 0.7, top_k: 50, top_p: 1.0 }, 4.0, ""),
            (vec![2, 1, 5000], Filters { temperature: 1.3, top_k: 0, top_p: 0.9 }, 6.0, ""),
            (vec![40_000], Filters { temperature: 1.0, top_k: 40, top_p: 0.8 }, 8.0, ""),
            (vec![2, 1500], Filters { temperature: 0.5, top_k: 1, top_p: 1.0 }, 3.0, ""),
            (vec![1500], Filters { temperature: 1.0, top_k: 5000, top_p: 1e-9 }, 3.0, ""),
            (vec![2, 3000], Filters { temperature: 2.0, top_k: 9, top_p: 0.95 }, 1.0, "ties"),
            (vec![3000], Filters { temperature: 0.9, top_k: 0, top_p: 0.5 }, 1.0, "ties"),
            (vec![2, 700], Filters { temperature: 1.0, top_k: 20, top_p: 0.7 }, 5.0, "nan"),
            (vec![2, 700], plain, 5.0, "inf"),
        ] {
            let vocab = *shape.last().unwrap() as usize;
            let rows = cases::numel(&shape) / vocab;
            let values: Vec<Elem> = (0..rows).flat_map(|_| logits(&mut draw, dtype, vocab, spread, special)).collect();
            for (k, at) in [0i64, 1, 2, 77, 1_000_003].into_iter().enumerate() {
                let pdtype = if k % 2 == 0 { DType::Int64 } else { DType::Int32 };
                check(target, dtype, &shape, &values, f, 2024 + k as u64, at, pdtype);
            }
        }
        // two equal logits: 400 draws split about evenly (a fair coin within 5 sigma)
        let x = target.tensor(dtype, &[2], &[Elem::F(0.0), Elem::F(0.0)]);
        let ones: i128 = (0..400)
            .map(|at| {
                let out =
                    target.run1("sample", dtype, &attrs(plain, 9), &[&x, &position(target, at, DType::Int64, &[])]);
                read(&out)[0].i()
            })
            .sum();
        assert!((100..=300).contains(&ones), "{}: {ones} of 400 draws took token 1", target.what(op, dtype, "a coin"));
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A row with no finite logit: refused by name by a backend that reads it before returning
/// (the CPU), token -1 on a GPU; a float position, one of shape [2], a zero temperature and a
/// top_p of 0 are refused by name; no rows give an empty output.
pub fn sample_edge_cases(target: &Target) {
    let mut coverage = Coverage::new(target, "sample", "edge cases");
    let mut draw = Draw::new(142);
    let plain = Filters { temperature: 1.0, top_k: 0, top_p: 1.0 };
    for (op, dtype) in target.entries("sample") {
        let what = |case: &str| target.what(op, dtype, case);
        let none = target.tensor(dtype, &[1, 40], &logits(&mut draw, dtype, 40, 1.0, "none"));
        let at = position(target, 3, DType::Int64, &[]);
        let result = target.run(op, dtype, &attrs(plain, 1), &[&none, &at]);
        if target.device.kind == nbxtensor::memory::DeviceKind::Cpu {
            assert_refused(&what("no finite logit"), result, &["sample", "no finite logit"]);
        } else {
            let out = result.unwrap_or_else(|e| panic!("{}: {e}", what("no finite logit")));
            assert_eq!(read(&out[0])[0].i(), -1, "{}", what("no finite logit"));
        }
        let x = target.tensor(dtype, &[1, 40], &logits(&mut draw, dtype, 40, 1.0, ""));
        let floaty = target.tensor(DType::Float32, &[], &[Elem::F(1.0)]);
        assert_refused(
            &what("a float position"),
            target.run(op, dtype, &attrs(plain, 1), &[&x, &floaty]),
            &["position"],
        );
        let two = target.tensor(DType::Int64, &[2], &[Elem::I(1), Elem::I(2)]);
        assert_refused(&what("two positions"), target.run(op, dtype, &attrs(plain, 1), &[&x, &two]), &["position"]);
        let cold = Filters { temperature: 0.0, ..plain };
        assert_refused(&what("temperature 0"), target.run(op, dtype, &attrs(cold, 1), &[&x, &at]), &["argmax"]);
        let empty_p = Filters { top_p: 0.0, ..plain };
        assert_refused(&what("top_p 0"), target.run(op, dtype, &attrs(empty_p, 1), &[&x, &at]), &["top_p"]);
        let rowless = target.tensor(dtype, &[0, 40], &[]);
        let out = target.run1(op, dtype, &attrs(plain, 1), &[&rowless, &at]);
        assert_eq!(out.shape(), &[0], "{}", what("no rows"));
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A draw traced with its position as the program's input, captured once and replayed at fresh
/// positions: each replay equals the eager draw.
pub fn sample_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "sample", "capture/replay");
    let mut draw = Draw::new(143);
    let f = Filters { temperature: 0.8, top_k: 30, top_p: 0.9 };
    for (op, dtype) in target.entries("sample") {
        let x = target.tensor(dtype, &[2, 3000], &logits(&mut draw, dtype, 6000, 4.0, ""));
        let model = |t: &[Tensor]| target.run(op, dtype, &attrs(f, 5), &[&x, &t[0]]);
        for at in [1i64, 50, 99] {
            let what = target.what(op, dtype, &format!("replayed at {at}"));
            let first = [position(target, 0, DType::Int64, &[1])];
            assert_replay_matches(&what, &first, &[position(target, at, DType::Int64, &[1])], &model);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
