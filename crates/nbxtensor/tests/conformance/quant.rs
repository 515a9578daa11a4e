//! The quant family (`ops::spec::quant`): `pack_int4` (a float weight `[N, K]` into the
//! int4-g128-asym layout: 4-bit codes two to a byte, low bits first, a float16 scale and minimum
//! per group of 128 consecutive elements of a row) and `matmul_int4` (x times the dequantized
//! weight, `w = code·scale + minimum`).
//!
//! pack_int4 is checked against its definition: each minimum is the group's minimum rounded to
//! float16 (exact); each scale is `(max − min) / 15` rounded to float16 (within 2 ulp of
//! float32 plus float16's rounding: it is computed in float32); each code is in [0, 15] and
//! reconstructs its element to within half a step (`|w − (c·s + m)| ≤ s/2`, plus 2⁻²⁰ of the
//! magnitudes for the float32 arithmetic), or is the end of the range an element rounds past.
//! matmul_int4 is checked against a float64 product with the dequantized weight of random
//! codes, scales and minima (independent of pack_int4): the kernels fold `scale·Σx·code +
//! minimum·Σx`, so the bound is k·2⁻²³·Σ|x|·(|code·scale| + |minimum|) plus 2 ulp of float32.
//!
//! `pack_int8` (a float weight `[N, K]` into the int8-g64 layout: a float32 scale per group of
//! 64 along a row, the codes in tiles of 16 rows × 4 codes, `[⌈N/16⌉, K/4, 16, 4]`) is checked
//! against its definition: each scale is the group's `max |w| / 127` (2 ulp of float32), each
//! code in −127..=127 reconstructs its element within half a step, the panel's rows past N are
//! zero codes. `matmul_int8` (x quantized per row to 8 bits over the range of its elements
//! within the threshold, widened to 0; the others, outliers, float32; the code products summed
//! exactly per group) is checked against the float64 product with random codes and scales,
//! within the error x's quantization allows: half a step of the row's range
//! (`(max − min) / 255` of the elements within the threshold, 0 included) times `Σ|w|`, plus 8
//! ulp of float32 of `Σ|x·w|` for the groups' scaling.

use crate::cases::{self, Draw};
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Layout, Target};
use crate::reference::{assert_elems, float_ok, pow2, Elem, Tol, F16};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Elements per group, bits per code, codes per byte (the table's int4-g128-asym).
const GROUP: usize = 128;
const LEVELS: u8 = 15;

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    let floats = matches!(dtype, DType::Float32 | DType::Float16 | DType::Bfloat16);
    (matches!(op, "pack_int4" | "matmul_int4" | "pack_int8") && floats)
        || (op == "matmul_int8" && dtype == DType::Float32)
}

/// Code `i` of a row of packed bytes.
fn code(row: &[u8], i: usize) -> u8 {
    (row[i / 2] >> (4 * (i % 2))) & 0x0F
}

/// Checks pack_int4 of `w` (`[n, k]`, logical elements `lw`).
fn check_pack(target: &Target, dtype: DType, case: &str, w: &Tensor, lw: &[Elem]) {
    let what = target.what("pack_int4", dtype, case);
    let (n, k) = (w.shape()[0] as usize, w.shape()[1] as usize);
    let groups = k / GROUP;
    let outputs = target.run("pack_int4", dtype, &Attrs::new(), &[w]).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(outputs.len(), 3, "{what}: packed, scales, minima");
    let metas: Vec<(DType, Vec<i64>)> = outputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect();
    let (n64, g64) = (n as i64, groups as i64);
    assert_eq!(
        metas,
        vec![
            (DType::Uint8, vec![n64, k as i64 / 2]),
            (DType::Float16, vec![n64, g64]),
            (DType::Float16, vec![n64, g64])
        ],
        "{what}: outputs"
    );
    let packed = crate::harness::read_bytes(&outputs[0]);
    let (scales, minima) = (read(&outputs[1]), read(&outputs[2]));
    for r in 0..n {
        let row = &packed[r * k / 2..(r + 1) * k / 2];
        for g in 0..groups {
            let values: Vec<f64> = (0..GROUP).map(|i| lw[r * k + g * GROUP + i].f()).collect();
            let low = values.iter().copied().fold(f64::INFINITY, f64::min);
            let high = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let (s, m) = (scales[r * groups + g].f(), minima[r * groups + g].f());
            let at = format!("{what}: row {r}, group {g}");
            assert_eq!(m, F16.round(low), "{at}: the minimum is the group's minimum rounded to float16");
            assert!(
                float_ok(DType::Float16, s, (high - low) / f64::from(LEVELS), Tol::ulps(2.0)),
                "{at}: scale {s} for the range {low}..{high}"
            );
            for (i, &x) in values.iter().enumerate() {
                let c = code(row, g * GROUP + i);
                assert!(c <= LEVELS, "{at}: code {c}");
                if s == 0.0 {
                    assert_eq!(c, 0, "{at}: a constant group codes 0");
                    continue;
                }
                let slack = pow2(-20) * (x.abs() + m.abs() + f64::from(LEVELS) * s);
                let error = (x - (f64::from(c) * s + m)).abs();
                let past_end = (c == 0 && x < m) || (c == LEVELS && x > f64::from(LEVELS) * s + m);
                assert!(
                    error <= s / 2.0 + slack || past_end,
                    "{at}: element {i} = {x} coded {c} (scale {s}, minimum {m})"
                );
            }
        }
    }
}

/// pack_int4 on every dtype: random rows, a constant group, a group spanning a wide range;
/// weights the spec refuses (K not a multiple of the group, a non-finite weight) named.
pub fn pack_int4_values(target: &Target) {
    let mut coverage = Coverage::new(target, "quant", "pack_int4").only("pack_int4");
    let mut draw = Draw::new(90);
    for (op, dtype) in target.entries("quant") {
        if op != "pack_int4" {
            continue;
        }
        let mut lw = cases::floats(&mut draw, dtype, 6 * 256, -2.0, 3.0);
        lw[..GROUP].iter_mut().for_each(|e| *e = Elem::F(0.75));
        for (i, e) in lw[256..256 + GROUP].iter_mut().enumerate() {
            *e = Elem::F(cases::float_input(dtype, (i as f64 - 60.0) * 37.0));
        }
        let w = target.tensor(dtype, &[6, 256], &lw);
        check_pack(target, dtype, "values", &w, &lw);
        let (wt, lt) = target.view(
            dtype,
            &[4, 128],
            Layout::Transposed,
            &cases::floats(&mut draw, dtype, 512, -1.0, 1.0),
            cases::poison(dtype),
        );
        check_pack(target, dtype, "transposed weight", &wt, &lt);
        let bad = target.tensor(dtype, &[2, 100], &cases::floats(&mut draw, dtype, 200, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "K = 100"),
            target.run(op, dtype, &Attrs::new(), &[&bad]),
            &["pack_int4", "100"],
        );
        let mut nan = cases::floats(&mut draw, dtype, 256, -1.0, 1.0);
        nan[130] = Elem::F(f64::NAN);
        let bad = target.tensor(dtype, &[2, 128], &nan);
        assert_refused(
            &target.what(op, dtype, "a NaN weight"),
            target.run(op, dtype, &Attrs::new(), &[&bad]),
            &["pack_int4"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Random packed weights `[n, k]`: packed bytes, scales and minima (float16), and the
/// dequantized weight in float64.
fn random_weight(target: &Target, draw: &mut Draw, n: usize, k: usize) -> ([Tensor; 3], Vec<f64>) {
    let groups = k / GROUP;
    let packed: Vec<u8> = (0..n * k / 2).map(|_| draw.bits() as u8).collect();
    let scales: Vec<Elem> = (0..n * groups).map(|_| Elem::F(F16.round(draw.uniform(0.002, 0.05)))).collect();
    let minima: Vec<Elem> = (0..n * groups).map(|_| Elem::F(F16.round(draw.uniform(-0.4, 0.1)))).collect();
    let mut w = Vec::with_capacity(n * k);
    for r in 0..n {
        let row = &packed[r * k / 2..(r + 1) * k / 2];
        for i in 0..k {
            let g = r * groups + i / GROUP;
            w.push(f64::from(code(row, i)) * scales[g].f() + minima[g].f());
        }
    }
    let p = Tensor::from_bytes(DType::Uint8, &[n as i64, (k / 2) as i64], &packed).unwrap().to(target.device).unwrap();
    let g = [n as i64, groups as i64];
    ([p, target.tensor(DType::Float16, &g, &scales), target.tensor(DType::Float16, &g, &minima)], w)
}

/// Checks matmul_int4 of `x` (`[.., k]`, logical elements `lx`) against the float64 product.
fn check_matmul(target: &Target, dtype: DType, case: &str, x: &Tensor, lx: &[Elem], weight: &[Tensor; 3], w: &[f64]) {
    let what = target.what("matmul_int4", dtype, &format!("{case}, x {:?}", x.shape()));
    let k = *x.shape().last().unwrap() as usize;
    let n = weight[0].shape()[0] as usize;
    let m = lx.len() / k.max(1);
    let out = target.run1("matmul_int4", dtype, &Attrs::new(), &[x, &weight[0], &weight[1], &weight[2]]);
    let mut shape = x.shape().to_vec();
    *shape.last_mut().unwrap() = n as i64;
    assert_eq!((out.dtype(), out.shape()), (dtype, &shape[..]), "{what}: output dtype and shape");
    let (mut want, mut tols) = (Vec::new(), Vec::new());
    let groups = k / GROUP;
    let minima = read(&weight[2]);
    for i in 0..m {
        for j in 0..n {
            let (mut dot, mut magnitude) = (0.0, 0.0);
            for l in 0..k {
                let xv = lx[i * k + l].f();
                dot += xv * w[j * k + l];
                let g = j * groups + l / GROUP;
                magnitude += xv.abs() * ((w[j * k + l] - minima[g].f()).abs() + minima[g].f().abs());
            }
            want.push(Elem::F(dot));
            tols.push(Tol::with_abs(2.0, k as f64 * pow2(-23) * magnitude));
        }
    }
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

/// matmul_int4 on every dtype: 1, 5, 16, 17 and 40 rows (a backend may take few rows one way
/// and many another), leading dims, a transposed x, K of one and several groups.
pub fn matmul_int4_values(target: &Target) {
    let mut coverage = Coverage::new(target, "quant", "matmul_int4").only("matmul_int4");
    let mut draw = Draw::new(91);
    for (op, dtype) in target.entries("quant") {
        if op != "matmul_int4" {
            continue;
        }
        for (n, k) in [(24usize, 256usize), (7, 128)] {
            let (weight, w) = random_weight(target, &mut draw, n, k);
            for rows in [&[1i64][..], &[5], &[16], &[17], &[40], &[2, 3]] {
                let mut shape = rows.to_vec();
                shape.push(k as i64);
                let lx = cases::floats(&mut draw, dtype, cases::numel(&shape), -1.0, 1.0);
                let x = target.tensor(dtype, &shape, &lx);
                check_matmul(target, dtype, &format!("W [{n}, {k}]"), &x, &lx, &weight, &w);
            }
            let (x, lx) = target.view(
                dtype,
                &[9, k as i64],
                Layout::Transposed,
                &cases::floats(&mut draw, dtype, 9 * k, -1.0, 1.0),
                cases::poison(dtype),
            );
            check_matmul(target, dtype, "transposed x", &x, &lx, &weight, &w);
            let x = target.tensor(dtype, &[0, k as i64], &[]);
            check_matmul(target, dtype, "no rows", &x, &[], &weight, &w);
        }
        let (weight, _) = random_weight(target, &mut draw, 4, 128);
        let x = target.tensor(dtype, &[2, 256], &cases::floats(&mut draw, dtype, 512, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "K of x differs"),
            target.run(op, dtype, &Attrs::new(), &[&x, &weight[0], &weight[1], &weight[2]]),
            &["matmul_int4"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of the family's ops captured and replayed on fresh inputs: byte-equal to eager
/// runs.
pub fn quant_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "quant", "capture/replay");
    let mut draw = Draw::new(92);
    for (op, dtype) in target.entries("quant") {
        let what = target.what(op, dtype, "capture/replay");
        if op.starts_with("pack_") {
            let mut input = || [target.tensor(dtype, &[3, 256], &cases::floats(&mut draw, dtype, 768, -1.0, 1.0))];
            let (first, fresh) = (input(), input());
            let model = |t: &[Tensor]| target.run(op, dtype, &Attrs::new(), &[&t[0]]);
            assert_replay_matches(&what, &first, &fresh, &model);
        } else {
            let weight = if op == "matmul_int4" {
                random_weight(target, &mut draw, 8, 256).0.to_vec()
            } else {
                let (codes, scales, _) = random_int8_weight(target, &mut draw, 8, 256);
                let bias = target.tensor(DType::Float32, &[8], &cases::floats(&mut draw, DType::Float32, 8, -1.0, 1.0));
                vec![codes, scales, bias]
            };
            for rows in [3usize, 20] {
                let mut input = || {
                    [target.tensor(dtype, &[rows as i64, 256], &cases::floats(&mut draw, dtype, rows * 256, -1.0, 1.0))]
                };
                let (first, fresh) = (input(), input());
                let model = |t: &[Tensor]| {
                    let inputs: Vec<&Tensor> = std::iter::once(&t[0]).chain(&weight).collect();
                    target.run(op, dtype, &Attrs::new(), &inputs)
                };
                assert_replay_matches(&what, &first, &fresh, &model);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// The position in pack_int8's tiles of row `r`, element `j` of a weight `k` codes wide.
fn tile_at(r: usize, j: usize, k: usize) -> usize {
    (((r / 16) * (k / 4) + j / 4) * 16 + r % 16) * 4 + j % 4
}

/// Elements per group of the table's int8-g64.
const INT8_GROUP: usize = 64;

/// Checks pack_int8 of `w` (`[n, k]`, logical elements `lw`).
fn check_pack_int8(target: &Target, dtype: DType, case: &str, w: &Tensor, lw: &[Elem]) {
    let what = target.what("pack_int8", dtype, case);
    let (n, k) = (w.shape()[0] as usize, w.shape()[1] as usize);
    let groups = k.div_ceil(INT8_GROUP);
    let outputs = target.run("pack_int8", dtype, &Attrs::new(), &[w]).unwrap_or_else(|e| panic!("{what}: {e}"));
    let metas: Vec<(DType, Vec<i64>)> = outputs.iter().map(|t| (t.dtype(), t.shape().to_vec())).collect();
    let panels = n.div_ceil(16) as i64;
    assert_eq!(
        metas,
        vec![(DType::Int8, vec![panels, k as i64 / 4, 16, 4]), (DType::Float32, vec![groups as i64, n as i64])],
        "{what}: outputs"
    );
    let codes: Vec<i8> = crate::harness::read_bytes(&outputs[0]).into_iter().map(|b| b as i8).collect();
    let scales = read(&outputs[1]);
    for r in 0..n {
        for g in 0..groups {
            let span = g * INT8_GROUP..((g + 1) * INT8_GROUP).min(k);
            let largest = span.clone().fold(0.0f64, |a, i| a.max(lw[r * k + i].f().abs()));
            let s = scales[g * n + r].f();
            let at = format!("{what}: row {r}, group {g}");
            assert!(
                float_ok(DType::Float32, s, largest / 127.0, Tol::ulps(2.0)),
                "{at}: scale {s} for |w| ≤ {largest}"
            );
            for i in span {
                let (x, c) = (lw[r * k + i].f(), codes[tile_at(r, i, k)]);
                assert!((-127..=127).contains(&c), "{at}: code {c}");
                if s == 0.0 {
                    assert_eq!(c, 0, "{at}: a group of zeros codes 0");
                    continue;
                }
                let error = (x - f64::from(c) * s).abs();
                assert!(error <= s / 2.0 + pow2(-20) * x.abs(), "{at}: element {i} = {x} coded {c} (scale {s})");
            }
        }
    }
    for r in n..n.div_ceil(16) * 16 {
        assert!((0..k).all(|j| codes[tile_at(r, j, k)] == 0), "{what}: padding row {r} holds codes");
    }
}

/// pack_int8 on every dtype: random rows of several magnitudes, a row of zeros, a transposed
/// weight; a non-finite weight, a weight that is not 2-d and a K that is not a multiple of 4
/// refused by name.
pub fn pack_int8_values(target: &Target) {
    let mut coverage = Coverage::new(target, "quant", "pack_int8").only("pack_int8");
    let mut draw = Draw::new(93);
    for (op, dtype) in target.entries("quant") {
        if op != "pack_int8" {
            continue;
        }
        let mut lw = cases::floats(&mut draw, dtype, 5 * 72, -2.0, 3.0);
        lw[72..144].iter_mut().for_each(|e| *e = Elem::F(0.0));
        for (i, e) in lw[144..216].iter_mut().enumerate() {
            *e = Elem::F(cases::float_input(dtype, (i as f64 - 30.0) * 37.0));
        }
        let w = target.tensor(dtype, &[5, 72], &lw);
        check_pack_int8(target, dtype, "values", &w, &lw);
        let lw = cases::floats(&mut draw, dtype, 17 * 200, -1.0, 1.0);
        check_pack_int8(target, dtype, "two panels, a partial group", &target.tensor(dtype, &[17, 200], &lw), &lw);
        let (wt, lt) = target.view(
            dtype,
            &[4, 36],
            Layout::Transposed,
            &cases::floats(&mut draw, dtype, 144, -1.0, 1.0),
            cases::poison(dtype),
        );
        check_pack_int8(target, dtype, "transposed weight", &wt, &lt);
        let mut nan = cases::floats(&mut draw, dtype, 40, -1.0, 1.0);
        nan[25] = Elem::F(f64::NAN);
        let bad = target.tensor(dtype, &[2, 20], &nan);
        assert_refused(
            &target.what(op, dtype, "a NaN weight"),
            target.run(op, dtype, &Attrs::new(), &[&bad]),
            &["pack_int8", "row 1"],
        );
        let flat = target.tensor(dtype, &[20], &cases::floats(&mut draw, dtype, 20, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "a 1-d weight"),
            target.run(op, dtype, &Attrs::new(), &[&flat]),
            &["pack_int8", "2-d"],
        );
        let odd = target.tensor(dtype, &[2, 10], &cases::floats(&mut draw, dtype, 20, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "K of 10"),
            target.run(op, dtype, &Attrs::new(), &[&odd]),
            &["pack_int8", "K = 10", "multiple of 4"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Random int8 weights `[n, k]` in pack_int8's layout: tiled codes (the extremes among them;
/// the padding rows zero) and float32 scales `[groups, n]`, and the dequantized weight in
/// float64.
fn random_int8_weight(target: &Target, draw: &mut Draw, n: usize, k: usize) -> (Tensor, Tensor, Vec<f64>) {
    let groups = k.div_ceil(INT8_GROUP);
    let mut codes = vec![0u8; n.div_ceil(16) * 16 * k];
    let mut w = vec![0.0; n * k];
    let scales: Vec<Elem> = (0..groups * n).map(|_| Elem::F(f64::from(draw.uniform(0.001, 0.05) as f32))).collect();
    for r in 0..n {
        for j in 0..k {
            let code = if (r * k + j) % 17 == 0 { 0x80 } else { draw.bits() as u8 };
            codes[tile_at(r, j, k)] = code;
            w[r * k + j] = f64::from(code as i8) * scales[(j / INT8_GROUP) * n + r].f();
        }
    }
    let shape = [n.div_ceil(16) as i64, (k / 4) as i64, 16, 4];
    let c = Tensor::from_bytes(DType::Int8, &shape, &codes).unwrap().to(target.device).unwrap();
    (c, target.tensor(DType::Float32, &[groups as i64, n as i64], &scales), w)
}

/// Checks matmul_int8 of `x` (`[.., k]`, logical elements `lx`) against the float64 product,
/// the elements past the default threshold (6) outliers.
fn check_matmul_int8(target: &Target, case: &str, x: &Tensor, lx: &[Elem], weight: &[Tensor], w: &[f64]) {
    let what = target.what("matmul_int8", DType::Float32, &format!("{case}, x {:?}", x.shape()));
    let k = *x.shape().last().unwrap() as usize;
    let n = weight[1].shape()[1] as usize;
    let m = lx.len() / k.max(1);
    let inputs: Vec<&Tensor> = std::iter::once(x).chain(weight).collect();
    let out = target.run1("matmul_int8", DType::Float32, &Attrs::new(), &inputs);
    let mut shape = x.shape().to_vec();
    *shape.last_mut().unwrap() = n as i64;
    assert_eq!((out.dtype(), out.shape()), (DType::Float32, &shape[..]), "{what}: output dtype and shape");
    let bias = weight.get(2).map(read);
    let (mut want, mut tols) = (Vec::new(), Vec::new());
    for i in 0..m {
        let row: Vec<f64> = (0..k).map(|l| lx[i * k + l].f()).collect();
        let inside = |v: f64| if v.abs() > 6.0 { 0.0 } else { v };
        let (low, high) = row.iter().fold((0.0f64, 0.0f64), |(l, h), &v| (l.min(inside(v)), h.max(inside(v))));
        let step = (high - low) / 255.0;
        for j in 0..n {
            let wj = &w[j * k..][..k];
            let dot: f64 = row.iter().zip(wj).map(|(a, b)| a * b).sum();
            let magnitude: f64 = row.iter().zip(wj).map(|(a, b)| (a * b).abs()).sum();
            let weights: f64 = wj.iter().map(|v| v.abs()).sum();
            want.push(Elem::F(dot + bias.as_ref().map_or(0.0, |b| b[j].f())));
            tols.push(Tol::with_abs(4.0, 0.5 * step * weights * (1.0 + 1e-6) + 8.0 * pow2(-24) * magnitude));
        }
    }
    assert_elems(&what, DType::Float32, &read(&out), &want, |i| tols[i]);
}

/// matmul_int8: 1, 5, 16, 17 and 70 rows, leading dims, a transposed x, no rows, with and
/// without a bias, K under, at and past one group, N across panels, outliers past the
/// threshold; operands the spec refuses named.
pub fn matmul_int8_values(target: &Target) {
    let mut coverage = Coverage::new(target, "quant", "matmul_int8").only("matmul_int8");
    let mut draw = Draw::new(94);
    for (op, dtype) in target.entries("quant") {
        if op != "matmul_int8" {
            continue;
        }
        for (n, k) in [(24usize, 200usize), (7, 64), (5, 12), (33, 132)] {
            let (codes, scales, w) = random_int8_weight(target, &mut draw, n, k);
            let bias =
                target.tensor(DType::Float32, &[n as i64], &cases::floats(&mut draw, DType::Float32, n, -1.0, 1.0));
            for weight in [vec![codes.clone(), scales.clone()], vec![codes.clone(), scales.clone(), bias]] {
                let case = format!("W [{n}, {k}], {} bias", if weight.len() == 3 { "a" } else { "no" });
                for rows in [&[1i64][..], &[5], &[16], &[17], &[70], &[2, 3]] {
                    let mut shape = rows.to_vec();
                    shape.push(k as i64);
                    let mut lx = cases::floats(&mut draw, dtype, cases::numel(&shape), -1.0, 1.5);
                    // an outlier feature (past the threshold of 6) in every other row
                    for (i, e) in lx.iter_mut().enumerate().filter(|(i, _)| i % k == 3 && (i / k) % 2 == 0) {
                        *e = Elem::F(if i % 4 == 0 { 40.0 } else { -17.5 });
                    }
                    let x = target.tensor(dtype, &shape, &lx);
                    check_matmul_int8(target, &case, &x, &lx, &weight, &w);
                }
                let (x, lx) = target.view(
                    dtype,
                    &[9, k as i64],
                    Layout::Transposed,
                    &cases::floats(&mut draw, dtype, 9 * k, -1.0, 1.0),
                    cases::poison(dtype),
                );
                check_matmul_int8(target, &format!("{case}, transposed x"), &x, &lx, &weight, &w);
                let x = target.tensor(dtype, &[0, k as i64], &[]);
                check_matmul_int8(target, &format!("{case}, no rows"), &x, &[], &weight, &w);
            }
        }
        let (codes, scales, _) = random_int8_weight(target, &mut draw, 4, 64);
        let x = target.tensor(dtype, &[2, 60], &cases::floats(&mut draw, dtype, 120, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "K of x differs"),
            target.run(op, dtype, &Attrs::new(), &[&x, &codes, &scales]),
            &["matmul_int8", "codes [1, 15, 16, 4]"],
        );
        let x = target.tensor(dtype, &[2, 64], &cases::floats(&mut draw, dtype, 128, -1.0, 1.0));
        assert_refused(
            &target.what(op, dtype, "a negative threshold"),
            target.run(op, dtype, &Attrs::new().with("threshold", AttrValue::Float(-1.0)), &[&x, &codes, &scales]),
            &["matmul_int8", "threshold must be ≥ 0"],
        );
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
