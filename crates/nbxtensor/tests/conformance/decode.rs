//! The decode family (`ops::spec::decode`): `kv_cache_write(cache, new, position)` in place
//! and `decode_attention(q, k_cache, v_cache, length)` over the first `length` rows of the
//! caches, the position and length read from tensors (int32 or int64, `[]`, `[1]` or `[b]`).
//!
//! decode_attention on batch row `i` is sdpa over the first `length[i]` rows of the caches,
//! causal bottom-right: it is checked against the attention family's float64 reference (and
//! its tolerance) on those rows, with lengths 0, 1, ragged (not a multiple of any split) and the
//! whole cache. kv_cache_write is exact: the written rows hold the new rows' bytes, every
//! other byte of the cache is unchanged. A position or length past the cache is refused by a
//! backend that can read it before launching (the CPU); a backend that cannot (a GPU, the value
//! on the device) must write nothing outside the cache: the rows past the end are skipped and a
//! length is clamped to the cache.

use crate::attention::{reference, Sizes};
use crate::cases::{self, Draw};
use crate::harness::{assert_refused, read, read_bytes, Coverage, Layout, Target};
use crate::reference::{assert_elems, Elem};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a check of `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(op, "decode_attention" | "kv_cache_write")
        && matches!(dtype, DType::Float32 | DType::Float16 | DType::Bfloat16)
}

fn attrs(causal: bool, scale: Option<f64>) -> Attrs {
    let attrs = Attrs::new().with("causal", AttrValue::Bool(causal));
    match scale {
        Some(s) => attrs.with("scale", AttrValue::Float(s)),
        None => attrs,
    }
}

fn floats(draw: &mut Draw, dtype: DType, shape: &[i64]) -> Vec<Elem> {
    cases::floats(draw, dtype, cases::numel(shape), -1.0, 1.0)
}

/// An index tensor (a position or a length) of `dtype` and `shape` on the target.
fn index(target: &Target, values: &[i64], shape: &[i64], dtype: DType) -> Tensor {
    let elems: Vec<Elem> = values.iter().map(|&v| Elem::I(i128::from(v))).collect();
    target.tensor(dtype, shape, &elems)
}

/// One decode_attention case: caches of `z.sk` rows (as a view of longer caches when `view`),
/// `lengths` one per batch row (given as `[]`/`[1]` when they are one value), checked per batch
/// row against sdpa's reference over its first `lengths[i]` rows.
#[allow(clippy::too_many_arguments)]
fn check_attention(
    target: &Target,
    draw: &mut Draw,
    dtype: DType,
    z: Sizes,
    lengths: &[i64],
    length_dtype: DType,
    causal: bool,
    scale: Option<f64>,
    view: bool,
) {
    let t = z.sk;
    let what = target.what(
        "decode_attention",
        dtype,
        &format!("{z:?}, lengths {lengths:?} ({length_dtype}), causal {causal}, scale {scale:?}, view {view}"),
    );
    let q_shape = [z.b as i64, z.hq as i64, z.sq as i64, z.d as i64];
    let lq = floats(draw, dtype, &q_shape);
    let (lk, lv) = (
        floats(draw, dtype, &[z.b as i64, z.hk as i64, t as i64, z.d as i64]),
        floats(draw, dtype, &[z.b as i64, z.hk as i64, t as i64, z.dv as i64]),
    );
    let cache = |values: &[Elem], width: usize| {
        if !view {
            return target.tensor(dtype, &[z.b as i64, z.hk as i64, t as i64, width as i64], values);
        }
        // the caches as the first T rows of caches of T + 5 rows (rows 5 apart from their heads)
        let longer = t + 5;
        let mut padded = vec![cases::poison(dtype); z.b * z.hk * longer * width];
        for (row, chunk) in values.chunks(width.max(1)).enumerate() {
            let (head, j) = (row / t.max(1), row % t.max(1));
            padded[(head * longer + j) * width..][..width].copy_from_slice(chunk);
        }
        let full = target.tensor(dtype, &[z.b as i64, z.hk as i64, longer as i64, width as i64], &padded);
        full.narrow(2, 0, t as i64).unwrap()
    };
    let (q, k, v) = (target.tensor(dtype, &q_shape, &lq), cache(&lk, z.d), cache(&lv, z.dv));
    let length = match lengths {
        [one] => index(target, &[*one], if z.b == 1 { &[1] } else { &[] }, length_dtype),
        many => index(target, many, &[z.b as i64], length_dtype),
    };
    let out = target.run1("decode_attention", dtype, &attrs(causal, scale), &[&q, &k, &v, &length]);
    assert_eq!(
        (out.dtype(), out.shape()),
        (dtype, &[z.b as i64, z.hq as i64, z.sq as i64, z.dv as i64][..]),
        "{what}: output"
    );
    let got = read(&out);
    let per_batch = z.hq * z.sq * z.dv;
    for bi in 0..z.b {
        let len = lengths[if lengths.len() == 1 { 0 } else { bi }] as usize;
        let rows = |values: &[Elem], width: usize| -> Vec<Elem> {
            (0..z.hk).flat_map(|h| values[((bi * z.hk + h) * t) * width..][..len * width].to_vec()).collect()
        };
        let one = Sizes { b: 1, sk: len, ..z };
        let qb = &lq[bi * z.hq * z.sq * z.d..][..z.hq * z.sq * z.d];
        // decode_attention weighs the values by float32 probabilities: no rounding term
        let (want, tols) = reference(one, qb, &rows(&lk, z.d), &rows(&lv, z.dv), None, causal, scale, 0.0);
        assert_elems(&format!("{what}, batch row {bi}"), dtype, &got[bi * per_batch..][..per_batch], &want, |i| {
            tols[i]
        });
    }
}

/// decode_attention on every dtype: one and several queries, equal and grouped heads, head
/// dims 32 to 128, caches not a multiple of any split, lengths 0, 1, ragged and the whole
/// cache (per batch row and shared, int32 and int64), causal and not, a given scale, caches
/// that are views of longer ones.
pub fn decode_attention_values(target: &Target) {
    let mut coverage = Coverage::new(target, "decode", "values").only("decode_attention");
    let mut draw = Draw::new(90);
    for (op, dtype) in target.entries("decode") {
        assert!(covers(op, dtype), "{}: the suite has no reference", target.what(op, dtype, "values"));
        if op != "decode_attention" {
            continue;
        }
        let sizes = |b, hq, hk, sq, sk, d| Sizes { b, hq, hk, sq, sk, d, dv: d };
        for (n, z) in [
            sizes(1, 4, 4, 1, 300, 64),
            sizes(2, 8, 2, 1, 300, 128),
            sizes(1, 8, 2, 3, 129, 64),
            sizes(2, 4, 1, 8, 70, 32),
            Sizes { b: 1, hq: 2, hk: 1, sq: 2, sk: 50, d: 16, dv: 24 },
        ]
        .into_iter()
        .enumerate()
        {
            let t = z.sk as i64;
            let lengths: Vec<Vec<i64>> = if z.b == 1 {
                vec![vec![0], vec![1], vec![t], vec![t / 2 + 7]]
            } else {
                vec![vec![0, t], vec![1, 65], vec![t - 1, 3], vec![t]]
            };
            for (m, lens) in lengths.iter().enumerate() {
                let length_dtype = if (n + m) % 2 == 0 { DType::Int32 } else { DType::Int64 };
                for causal in [true, false] {
                    check_attention(target, &mut draw, dtype, z, lens, length_dtype, causal, None, false);
                }
            }
            check_attention(target, &mut draw, dtype, z, &[t - 2], DType::Int64, true, Some(0.3), true);
        }
        // a long cache: many splits, the valid length ragged in the last one
        let z = sizes(1, 32, 8, 1, 4100, 128);
        check_attention(target, &mut draw, dtype, z, &[4093], DType::Int32, true, None, false);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Writes `new` (logical elements `ln`, `s` rows) into a cache holding `lc` at `positions`,
/// and checks every element: the rows in the cache hold the new rows, the others are as
/// before. A position past the end is refused by a backend that reads it (the CPU must),
/// the cache unchanged; else only the rows inside the cache are written.
#[allow(clippy::too_many_arguments)]
fn check_write(
    target: &Target,
    dtype: DType,
    (b, h, t, d): (usize, usize, usize, usize),
    lc: &[Elem],
    new: &Tensor,
    ln: &[Elem],
    positions: &[i64],
    position_dtype: DType,
) {
    let s = new.shape()[2] as usize;
    let what = target.what("kv_cache_write", dtype, &format!("cache [{b}, {h}, {t}, {d}], {s} rows at {positions:?}"));
    let cache = target.tensor(dtype, &[b as i64, h as i64, t as i64, d as i64], lc);
    let before = read_bytes(&cache);
    let position = match positions {
        [one] => index(target, &[*one], &[], position_dtype),
        many => index(target, many, &[b as i64], position_dtype),
    };
    let result = target.run("kv_cache_write", dtype, &Attrs::new(), &[&cache, new, &position]);
    let at = |bi: usize| positions[if positions.len() == 1 { 0 } else { bi }];
    let past = (0..b).any(|bi| at(bi) < 0 || at(bi) as usize + s > t);
    if let Err(e) = &result {
        assert!(past, "{what}: refused: {e}");
        assert_refused(&what, result, &["kv_cache_write", "position"]);
        assert_eq!(read_bytes(&cache), before, "{what}: a refused write changed the cache");
        return;
    }
    assert!(!past || target.name != "cpu", "{what}: the host reads the position and must refuse it");
    assert!(result.unwrap().is_empty(), "{what}: the write has no output");
    let mut want = lc.to_vec();
    for bi in 0..b {
        for hh in 0..h {
            for j in 0..s {
                let row = at(bi) + j as i64;
                if (0..t as i64).contains(&row) {
                    let to = ((bi * h + hh) * t + row as usize) * d;
                    want[to..to + d].copy_from_slice(&ln[((bi * h + hh) * s + j) * d..][..d]);
                }
            }
        }
    }
    assert_elems(&what, dtype, &read(&cache), &want, |_| crate::reference::Tol::EXACT);
}

/// kv_cache_write on every dtype: at the start, in the middle, at the end of the cache (the
/// last row written), per batch row, the whole cache, no rows, new rows given as a transposed
/// view; past the end and before the start.
pub fn kv_cache_write_values(target: &Target) {
    let mut coverage = Coverage::new(target, "decode", "values").only("kv_cache_write");
    let mut draw = Draw::new(91);
    for (op, dtype) in target.entries("decode") {
        if op != "kv_cache_write" {
            continue;
        }
        let (b, h, t, d) = (2usize, 3usize, 20usize, 8usize);
        let shape = [b as i64, h as i64, t as i64, d as i64];
        for (s, positions, position_dtype) in [
            (4, vec![0], DType::Int32),
            (4, vec![16], DType::Int64),
            (4, vec![5, 16], DType::Int32),
            (1, vec![19, 0], DType::Int64),
            (20, vec![0], DType::Int64),
            (0, vec![20], DType::Int32),
            (4, vec![17], DType::Int32),
            (4, vec![3, -1], DType::Int64),
            (2, vec![40, 19], DType::Int64),
        ] {
            let lc = floats(&mut draw, dtype, &shape);
            let new_shape = [b as i64, h as i64, s as i64, d as i64];
            let ln = floats(&mut draw, dtype, &new_shape);
            let layout = if s % 2 == 0 { Layout::Transposed } else { Layout::Contiguous };
            let (new, ln) = target.view(dtype, &new_shape, layout, &ln, cases::poison(dtype));
            check_write(target, dtype, (b, h, t, d), &lc, &new, &ln, &positions, position_dtype);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Shapes and operands the spec refuses are named; empty queries and batches give empty
/// outputs; a write whose new rows are a view of the cache is refused.
pub fn decode_edge_cases(target: &Target) {
    let mut coverage = Coverage::new(target, "decode", "edge cases");
    let mut draw = Draw::new(92);
    for (op, dtype) in target.entries("decode") {
        let cache = target.tensor(dtype, &[2, 2, 16, 8], &floats(&mut draw, dtype, &[2, 2, 16, 8]));
        let length = index(target, &[5, 3], &[2], DType::Int32);
        let what = |case: &str| target.what(op, dtype, case);
        if op == "decode_attention" {
            let q = |shape: &[i64], draw: &mut Draw| target.tensor(dtype, shape, &floats(draw, dtype, shape));
            let run =
                |q: &Tensor, length: &Tensor| target.run(op, dtype, &attrs(true, None), &[q, &cache, &cache, length]);
            assert_refused(
                &what("9 queries"),
                run(&q(&[2, 4, 9, 8], &mut draw), &length),
                &["decode_attention", "at most 8"],
            );
            assert_refused(
                &what("3 query heads over 2"),
                run(&q(&[2, 3, 1, 8], &mut draw), &length),
                &["decode_attention", "hq"],
            );
            let floaty = target.tensor(DType::Float32, &[2], &[Elem::F(1.0), Elem::F(2.0)]);
            assert_refused(
                &what("a float length"),
                run(&q(&[2, 4, 1, 8], &mut draw), &floaty),
                &["decode_attention", "length"],
            );
            let three = index(target, &[1, 2, 3], &[3], DType::Int64);
            assert_refused(
                &what("3 lengths for 2 rows"),
                run(&q(&[2, 4, 1, 8], &mut draw), &three),
                &["decode_attention", "length"],
            );
            let empty = run(&q(&[2, 4, 0, 8], &mut draw), &length).unwrap().remove(0);
            assert_eq!(empty.shape(), &[2, 4, 0, 8], "{}", what("no query"));
            let none = target.tensor(dtype, &[0, 2, 16, 8], &[]);
            let out = target
                .run(
                    op,
                    dtype,
                    &attrs(true, None),
                    &[&q(&[0, 4, 1, 8], &mut draw), &none, &none, &index(target, &[3], &[], DType::Int32)],
                )
                .unwrap()
                .remove(0);
            assert_eq!(out.shape(), &[0, 4, 1, 8], "{}", what("no batch"));
        } else {
            let new = target.tensor(dtype, &[2, 2, 17, 8], &floats(&mut draw, dtype, &[2, 2, 17, 8]));
            let at = index(target, &[0], &[], DType::Int32);
            assert_refused(
                &what("17 rows into 16"),
                target.run(op, dtype, &Attrs::new(), &[&cache, &new, &at]),
                &["kv_cache_write", "17 new rows"],
            );
            let own = cache.narrow(2, 0, 2).unwrap();
            assert_refused(
                &what("new rows of the cache itself"),
                target.run(op, dtype, &Attrs::new(), &[&cache, &own, &at]),
                &["kv_cache_write", "view of the cache"],
            );
            let wide = target.tensor(dtype, &[2, 2, 2, 4], &floats(&mut draw, dtype, &[2, 2, 2, 4]));
            assert_refused(
                &what("rows of another width"),
                target.run(op, dtype, &Attrs::new(), &[&cache, &wide, &at]),
                &["kv_cache_write", "do not fit"],
            );
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A decode step (the new key and value written at the position, attention over position + 1
/// rows) traced with the caches as state the model holds, captured once and replayed at many
/// positions: every replay equals the same step run eagerly on a second pair of caches, byte
/// for byte, and so do the caches at the end. A program that writes into its own input is
/// refused when traced.
pub fn decode_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "decode", "capture/replay");
    let mut draw = Draw::new(93);
    let dtypes: Vec<DType> =
        target.entries("decode").into_iter().filter(|(op, _)| *op == "decode_attention").map(|(_, d)| d).collect();
    for dtype in dtypes {
        if !target.has("kv_cache_write", dtype) {
            continue;
        }
        let (hq, hk, t, d) = (4i64, 2i64, 150i64, 64i64);
        let lk = floats(&mut draw, dtype, &[1, hk, t, d]);
        let lv = floats(&mut draw, dtype, &[1, hk, t, d]);
        let caches = || (target.tensor(dtype, &[1, hk, t, d], &lk), target.tensor(dtype, &[1, hk, t, d], &lv));
        let ((kc, vc), (ke, ve)) = (caches(), caches());
        let step = |k: &Tensor, v: &Tensor, x: &[Tensor]| -> Result<Vec<Tensor>, ProgramError> {
            target.run("kv_cache_write", dtype, &Attrs::new(), &[k, &x[1], &x[3]])?;
            target.run("kv_cache_write", dtype, &Attrs::new(), &[v, &x[2], &x[3]])?;
            Ok(target.run("decode_attention", dtype, &attrs(true, None), &[&x[0], k, v, &x[4]])?)
        };
        let mut inputs = |at: i64| {
            let rows = |heads: i64, draw: &mut Draw| {
                target.tensor(dtype, &[1, heads, 1, d], &floats(draw, dtype, &[1, heads, 1, d]))
            };
            let (q, k, v) = (rows(hq, &mut draw), rows(hk, &mut draw), rows(hk, &mut draw));
            vec![q, k, v, index(target, &[at], &[], DType::Int64), index(target, &[at + 1], &[1], DType::Int32)]
        };
        let what = target.what("decode_attention", dtype, "a decode step captured and replayed");
        let first = inputs(0);
        let traced = program::trace(&first, |x| step(&kc, &vc, x)).unwrap_or_else(|e| panic!("{what}: trace: {e}"));
        let plan = traced.plan().unwrap_or_else(|e| panic!("{what}: plan: {e}"));
        let refs: Vec<&Tensor> = first.iter().collect();
        let replay =
            Executable::new(traced, plan).unwrap().capture(&refs).unwrap_or_else(|e| panic!("{what}: capture: {e}"));
        step(&ke, &ve, &first).unwrap();
        for at in [1, 2, 3, 64, 65, 127, 128, 149] {
            let x = inputs(at);
            let refs: Vec<&Tensor> = x.iter().collect();
            let replayed = replay.run(&refs).unwrap_or_else(|e| panic!("{what}: replay at {at}: {e}"));
            let eager = step(&ke, &ve, &x).unwrap();
            assert_eq!(
                read_bytes(&replayed[0]),
                read_bytes(&eager[0]),
                "{what}: the replay at {at} differs from eager"
            );
        }
        assert_eq!(read_bytes(&kc), read_bytes(&ke), "{what}: the key caches differ");
        assert_eq!(read_bytes(&vc), read_bytes(&ve), "{what}: the value caches differ");
        // the cache as a program input: a write into it would not outlive the run
        let mut with_cache = inputs(0);
        with_cache.push(kc.clone());
        let refused = program::trace(&with_cache, |x| step(&x[5], &vc, x));
        let message = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(message.contains("updates its input 0 in place"), "{what}: a write into a program input: {message}");
        coverage.saw("decode_attention", dtype);
        coverage.saw("kv_cache_write", dtype);
    }
    coverage.assert_complete();
}
