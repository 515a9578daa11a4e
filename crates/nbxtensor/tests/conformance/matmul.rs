//! The matmul family (`ops::spec::matmul`): numpy's matmul (transpose attributes, batch dims
//! broadcast, vector operands), linear (`x · wᵀ + bias`) and its packed form (`pack_linear`'s
//! panels, `linear_packed`), against float64 dot products.
//!
//! Tolerance: float32 accumulation of k products may err by k·u·Σ|aᵢbᵢ| (u = 2⁻²⁴) in any
//! summation order; the suite allows twice that, k·2⁻²³·Σ|aᵢbᵢ|, plus one ulp of float32 for
//! the bias and the final rounding, and a half dtype's own rounding of the result. A product
//! over k = 0 is exactly 0. Complex products (complex64, complex128, matmul only): each of the
//! k terms is four real products and two sums, so twice the real allowance, counted from
//! Σ|aᵢ||bᵢ|, in ulps of the part's format.

use crate::cases::{self, Draw};
use crate::complex;
use crate::harness::{
    assert_refused, assert_replay_matches, broadcast_index, broadcast_shape, read, Coverage, Layout, Target,
};
use crate::reference::{assert_elems, is_complex, is_int, is_real, is_signed, pow2, wrap, Elem, Tol};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a reference for `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    let float = is_real(dtype) && dtype != DType::Float8E4m3fn && dtype != DType::Float8E5m2;
    (matches!(op, "matmul" | "linear") && float)
        || (op == "matmul" && (is_int(dtype) || is_complex(dtype)))
        || (matches!(op, "pack_linear" | "linear_packed") && dtype == DType::Float32)
}

/// The ops of the plain products (the packed ones have their own checks, [`packed_values`]).
fn plain(op: &str) -> bool {
    matches!(op, "matmul" | "linear")
}

/// `n` inputs of `dtype`: floats in [-1, 1); integers small (|v| ≤ 3, or 0..=3 unsigned), so
/// that every dot product is exact in float64 before it wraps to the dtype.
fn values_of(draw: &mut Draw, dtype: DType, n: usize) -> Vec<Elem> {
    if is_int(dtype) {
        let low = if is_signed(dtype) { -3 } else { 0 };
        return (0..n).map(|_| Elem::I(draw.int(low, 3))).collect();
    }
    if is_complex(dtype) {
        return complex::draws(draw, dtype, n, -1.0, 1.0);
    }
    cases::floats(draw, dtype, n, -1.0, 1.0)
}

/// The logical matrix (batch dims, rows, cols, elements) of an operand of `shape`, read
/// transposed in its last two dims when `t`; a vector is a row (`left`) or a column.
fn matrix(
    shape: &[i64],
    values: &[Elem],
    t: bool,
    left: bool,
) -> (Vec<i64>, usize, usize, Vec<num_complex::Complex64>) {
    if shape.len() == 1 {
        let n = shape[0] as usize;
        let v = values.iter().map(|&e| complex::z(e)).collect();
        return if left { (vec![], 1, n, v) } else { (vec![], n, 1, v) };
    }
    let nd = shape.len();
    let (r, c) = (shape[nd - 2] as usize, shape[nd - 1] as usize);
    let batch = shape[..nd - 2].to_vec();
    let mut out = Vec::with_capacity(values.len());
    for p in 0..cases::numel(&batch) {
        for i in 0..if t { c } else { r } {
            for j in 0..if t { r } else { c } {
                let at = if t { p * r * c + j * c + i } else { p * r * c + i * c + j };
                out.push(complex::z(values[at]));
            }
        }
    }
    let (r, c) = if t { (c, r) } else { (r, c) };
    (batch, r, c, out)
}

/// numpy's matmul of `a` and `b` in float64 (with `bias` added to every row): the output's
/// shape, values and tolerances.
#[allow(clippy::too_many_arguments)]
fn reference(
    dtype: DType,
    sa: &[i64],
    a: &[Elem],
    ta: bool,
    sb: &[i64],
    b: &[Elem],
    tb: bool,
    bias: Option<&[Elem]>,
) -> (Vec<i64>, Vec<Elem>, Vec<Tol>) {
    let (ba, m, k, am) = matrix(sa, a, ta, true);
    let (bb, kb, n, bm) = matrix(sb, b, tb, false);
    assert_eq!(k, kb, "the test's own shapes");
    let batch = broadcast_shape(&[&ba, &bb]);
    let (ia, ib) = (broadcast_index(&batch, &ba), broadcast_index(&batch, &bb));
    let (mut want, mut tols) = (Vec::new(), Vec::new());
    for p in 0..cases::numel(&batch) {
        for i in 0..m {
            for j in 0..n {
                let (mut dot, mut magnitude) = (num_complex::Complex64::new(0.0, 0.0), 0.0);
                for l in 0..k {
                    let prod = am[ia[p] * m * k + i * k + l] * bm[ib[p] * k * n + l * n + j];
                    dot += prod;
                    magnitude += prod.norm();
                }
                if let Some(bias) = bias {
                    dot += complex::z(bias[j]);
                    magnitude += complex::z(bias[j]).norm();
                }
                if is_int(dtype) {
                    // small integers: the float64 dot is exact, then wraps as the dtype does
                    want.push(Elem::I(wrap(dtype, dot.re as i128)));
                    tols.push(Tol::EXACT);
                } else if is_complex(dtype) {
                    let u = if dtype == DType::Complex128 { pow2(-52) } else { pow2(-23) };
                    want.push(complex::elem(dot));
                    tols.push(Tol::with_abs(2.0, 2.0 * (k as f64 + 1.0) * u * magnitude));
                } else {
                    want.push(Elem::F(dot.re));
                    tols.push(Tol::with_abs(1.0, (k as f64 + 1.0) * pow2(-23) * magnitude));
                }
            }
        }
    }
    let mut shape = batch;
    if sa.len() > 1 {
        shape.push(m as i64);
    }
    if sb.len() > 1 {
        shape.push(n as i64);
    }
    (shape, want, tols)
}

fn transposes(ta: bool, tb: bool) -> Attrs {
    Attrs::new().with("transpose_a", AttrValue::Bool(ta)).with("transpose_b", AttrValue::Bool(tb))
}

/// Runs matmul on `a`, `b` and checks it.
#[allow(clippy::too_many_arguments)]
fn check_matmul(
    target: &Target,
    dtype: DType,
    case: &str,
    a: &Tensor,
    la: &[Elem],
    b: &Tensor,
    lb: &[Elem],
    ta: bool,
    tb: bool,
) {
    let what = target.what("matmul", dtype, &format!("{case}: {:?}·{:?}, ta={ta}, tb={tb}", a.shape(), b.shape()));
    let out = target.run1("matmul", dtype, &transposes(ta, tb), &[a, b]);
    let (shape, want, tols) = reference(dtype, a.shape(), la, ta, b.shape(), lb, tb, None);
    assert_eq!((out.dtype(), out.shape()), (dtype, &shape[..]), "{what}: output dtype and shape");
    assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
}

fn operand(target: &Target, draw: &mut Draw, dtype: DType, shape: &[i64]) -> (Tensor, Vec<Elem>) {
    let v = values_of(draw, dtype, cases::numel(shape));
    (target.tensor(dtype, shape, &v), v)
}

/// Shapes of matmul's value cases: (a, b, transpose_a, transpose_b).
const SHAPES: [(&[i64], &[i64], bool, bool); 15] = [
    (&[33, 70], &[70, 45], false, false),
    (&[70, 33], &[70, 45], true, false),
    (&[33, 70], &[45, 70], false, true),
    (&[70, 33], &[45, 70], true, true),
    (&[3, 2, 17, 24], &[24, 9], false, false),
    (&[2, 17, 24], &[3, 1, 24, 9], false, false),
    (&[24], &[4, 24, 5], false, false),
    (&[6, 24], &[24], false, false),
    (&[24], &[24], false, false),
    (&[5, 1], &[1, 7], false, false),
    // past 128 rows and columns, ragged: the large tiles of a GPU backend
    (&[130, 70], &[70, 141], false, false),
    (&[2, 150, 40], &[160, 40], false, true),
    // depths and sides in whole 4-element vectors, ragged against the tiles (a GPU backend's
    // vector form): each factor in rows along its depth and along its side
    (&[132, 44], &[44, 136], false, false),
    (&[44, 132], &[44, 140], true, false),
    (&[2, 44, 132], &[131, 44], true, true),
];

/// matmul on every dtype over [`SHAPES`]: plain, transposed by attribute, batched with
/// broadcasting, vectors on either side (a 0-d result for two), k = 1, past 128 on both sides.
pub fn matmul_values(target: &Target) {
    let mut coverage = Coverage::new(target, "matmul", "matmul values").only("matmul");
    let mut draw = Draw::new(70);
    for (op, dtype) in target.entries("matmul") {
        if op != "matmul" {
            continue;
        }
        for (sa, sb, ta, tb) in SHAPES {
            let (a, la) = operand(target, &mut draw, dtype, sa);
            let (b, lb) = operand(target, &mut draw, dtype, sb);
            check_matmul(target, dtype, "values", &a, &la, &b, &lb, ta, tb);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// linear on every dtype: leading dims, with and without bias, a vector input.
pub fn linear_values(target: &Target) {
    let mut coverage = Coverage::new(target, "matmul", "linear values").only("linear");
    let mut draw = Draw::new(71);
    for (op, dtype) in target.entries("matmul") {
        if op != "linear" {
            continue;
        }
        // a few rows with long ones, as a decode step's products have them, and one row more
        let shapes = [
            (&[5i64, 7, 64][..], 48i64),
            (&[3, 16], 8),
            (&[16], 8),
            (&[2, 1, 1, 9], 1),
            (&[1, 2400], 33),
            (&[2, 4, 2400], 5),
            (&[9, 2400], 3),
            // past the large tiles, in whole vectors of depth, an odd number of outputs
            (&[2, 130, 36], 131),
        ];
        for (sx, out_features) in shapes {
            let in_features = *sx.last().unwrap();
            let (x, lx) = operand(target, &mut draw, dtype, sx);
            let (w, lw) = operand(target, &mut draw, dtype, &[out_features, in_features]);
            let (bias, lbias) = operand(target, &mut draw, dtype, &[out_features]);
            for with_bias in [false, true] {
                let what = target.what(op, dtype, &format!("x {sx:?}, {out_features} outputs, bias {with_bias}"));
                let inputs: Vec<&Tensor> = if with_bias { vec![&x, &w, &bias] } else { vec![&x, &w] };
                let out = target.run1(op, dtype, &Attrs::new(), &inputs);
                let (shape, want, tols) = reference(
                    dtype,
                    sx,
                    &lx,
                    false,
                    &[out_features, in_features],
                    &lw,
                    true,
                    with_bias.then_some(&lbias[..]),
                );
                assert_eq!((out.dtype(), out.shape()), (dtype, &shape[..]), "{what}: output dtype and shape");
                assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
            }
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Non-contiguous operands: transposed and strided views, stride-0 rows, a batch dim expanded
/// from 1 (stride 0), for matmul and linear.
pub fn matmul_non_contiguous(target: &Target) {
    let mut coverage = Coverage::new(target, "matmul", "non-contiguous").only("matmul").only("linear");
    let mut draw = Draw::new(72);
    for (op, dtype) in target.entries("matmul").into_iter().filter(|(op, _)| plain(op)) {
        let poison = cases::poison(dtype);
        for (la_, lb_) in [
            (Layout::Transposed, Layout::Contiguous),
            (Layout::Strided, Layout::Transposed),
            (Layout::Broadcast, Layout::Strided),
            (Layout::Contiguous, Layout::Broadcast),
        ] {
            let (a, va) = target.view(dtype, &[12, 20], la_, &values_of(&mut draw, dtype, 240), poison);
            if op == "matmul" {
                let (b, vb) = target.view(dtype, &[20, 9], lb_, &values_of(&mut draw, dtype, 180), poison);
                check_matmul(target, dtype, &format!("{la_:?}·{lb_:?}"), &a, &va, &b, &vb, false, false);
            } else {
                let (w, vw) = target.view(dtype, &[9, 20], lb_, &values_of(&mut draw, dtype, 180), poison);
                let what = target.what(op, dtype, &format!("{la_:?} x, {lb_:?} weight"));
                let out = target.run1(op, dtype, &Attrs::new(), &[&a, &w]);
                let (shape, want, tols) = reference(dtype, &[12, 20], &va, false, &[9, 20], &vw, true, None);
                assert_eq!(out.shape(), &shape[..], "{what}: output shape");
                assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
            }
        }
        if op == "matmul" {
            // a batch of 3 expanded from 1 against a real batch
            let (a1, va) = operand(target, &mut draw, dtype, &[1, 4, 6]);
            let a = a1.expand(&[3, 4, 6]).unwrap();
            let va3: Vec<Elem> = (0..3).flat_map(|_| va.iter().copied()).collect();
            let (b, vb) = operand(target, &mut draw, dtype, &[3, 6, 5]);
            check_matmul(target, dtype, "stride-0 batch", &a, &va3, &b, &vb, false, false);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty products (k = 0 gives zeros; m, n or a batch of 0 give empty outputs) and operands the
/// ops refuse naming themselves: 0-d operands, contracted dims that differ, a transpose of a
/// vector, a bias of another length.
pub fn matmul_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "matmul", "edge shapes").only("matmul").only("linear");
    let mut draw = Draw::new(73);
    for (op, dtype) in target.entries("matmul").into_iter().filter(|(op, _)| plain(op)) {
        if op == "matmul" {
            for (sa, sb) in [
                (&[3i64, 0][..], &[0i64, 4][..]),
                (&[0, 5], &[5, 3]),
                (&[2, 5], &[5, 0]),
                (&[0, 2, 3], &[3, 4]),
                (&[0], &[0]),
            ] {
                let (a, la) = operand(target, &mut draw, dtype, sa);
                let (b, lb) = operand(target, &mut draw, dtype, sb);
                check_matmul(target, dtype, "empty", &a, &la, &b, &lb, false, false);
            }
            let (s, _) = operand(target, &mut draw, dtype, &[]);
            let (m, _) = operand(target, &mut draw, dtype, &[3, 4]);
            let (v, _) = operand(target, &mut draw, dtype, &[4]);
            assert_refused(
                &target.what(op, dtype, "0-d operand"),
                target.run(op, dtype, &Attrs::new(), &[&s, &m]),
                &["matmul"],
            );
            assert_refused(
                &target.what(op, dtype, "k differs"),
                target.run(op, dtype, &Attrs::new(), &[&m, &m]),
                &["matmul"],
            );
            assert_refused(
                &target.what(op, dtype, "a vector transposed"),
                target.run(op, dtype, &transposes(false, true), &[&m, &v]),
                &["matmul", "transpose_b"],
            );
        } else {
            let (x, lx) = operand(target, &mut draw, dtype, &[3, 0]);
            let (w, lw) = operand(target, &mut draw, dtype, &[4, 0]);
            let (bias, lbias) = operand(target, &mut draw, dtype, &[4]);
            let what = target.what(op, dtype, "k = 0 with bias");
            let out = target.run1(op, dtype, &Attrs::new(), &[&x, &w, &bias]);
            let (_, want, tols) = reference(dtype, &[3, 0], &lx, false, &[4, 0], &lw, true, Some(&lbias));
            assert_elems(&what, dtype, &read(&out), &want, |i| tols[i]);
            let (x, _) = operand(target, &mut draw, dtype, &[3, 5]);
            let (w, _) = operand(target, &mut draw, dtype, &[4, 5]);
            let (bad, _) = operand(target, &mut draw, dtype, &[3]);
            assert_refused(
                &target.what(op, dtype, "bias of 3 for 4 outputs"),
                target.run(op, dtype, &Attrs::new(), &[&x, &w, &bad]),
                &["linear", "bias"],
            );
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Programs of matmul (batched, transposed) and linear (with bias) captured and replayed on
/// fresh inputs: byte-equal to eager runs.
pub fn matmul_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "matmul", "capture/replay").only("matmul").only("linear");
    let mut draw = Draw::new(74);
    for (op, dtype) in target.entries("matmul").into_iter().filter(|(op, _)| plain(op)) {
        let what = target.what(op, dtype, "capture/replay");
        let (w, _) = operand(target, &mut draw, dtype, &[16, 32]);
        let (bias, _) = operand(target, &mut draw, dtype, &[16]);
        let mut input = || [operand(target, &mut draw, dtype, &[2, 8, 32]).0];
        let (first, fresh) = (input(), input());
        if op == "matmul" {
            let model = |t: &[Tensor]| target.run(op, dtype, &transposes(false, true), &[&t[0], &w]);
            assert_replay_matches(&what, &first, &fresh, &model);
        } else {
            let model = |t: &[Tensor]| target.run(op, dtype, &Attrs::new(), &[&t[0], &w, &bias]);
            assert_replay_matches(&what, &first, &fresh, &model);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// `pack_linear`'s panels hold the weight's columns in order, zeros past its rows; `linear_packed`
/// on them gives linear's values (ragged rows and outputs, leading dims, strided x, k = 0, with
/// and without a bias), refuses panels of another shape naming itself, and replays byte-equal.
pub fn packed_values(target: &Target) {
    use nbxtensor::ops::spec::matmul::PANEL;
    let mut coverage = Coverage::new(target, "matmul", "packed weights").only("pack_linear").only("linear_packed");
    let mut draw = Draw::new(75);
    let entries = target.entries("matmul");
    let served = |op: &str| entries.iter().any(|&(o, d)| o == op && d == DType::Float32);
    if !(served("pack_linear") && served("linear_packed")) {
        assert!(!served("pack_linear") && !served("linear_packed"), "{}: one packed op without the other", target.name);
        coverage.assert_complete();
        return;
    }
    let f = DType::Float32;
    let pack = |w: &Tensor| target.run1("pack_linear", f, &Attrs::new(), &[w]);
    let features = |n: i64| Attrs::new().with("features", AttrValue::Int(n));
    for (sx, n) in [(&[13i64, 37][..], 50i64), (&[2, 9, 64], 96), (&[1, 5], 1), (&[4, 0], 7), (&[0, 8], 48)] {
        let k = *sx.last().unwrap();
        let (x, lx) = operand(target, &mut draw, f, sx);
        let (w, lw) = operand(target, &mut draw, f, &[n, k]);
        let (bias, lbias) = operand(target, &mut draw, f, &[n]);
        let panels = pack(&w);
        let count = (n as usize).div_ceil(PANEL) as i64;
        let what = target.what("pack_linear", f, &format!("[{n}, {k}]"));
        assert_eq!(panels.shape(), &[count, k, PANEL as i64], "{what}: shape");
        let want: Vec<Elem> = (0..count as usize * k as usize * PANEL)
            .map(|e| {
                let (p, kk, j) = (e / (k as usize * PANEL), e / PANEL % k as usize, e % PANEL);
                let row = p * PANEL + j;
                if row < n as usize {
                    lw[row * k as usize + kk]
                } else {
                    Elem::F(0.0)
                }
            })
            .collect();
        assert_elems(&what, f, &read(&panels), &want, |_| Tol::EXACT);
        for with_bias in [false, true] {
            let what = target.what("linear_packed", f, &format!("x {sx:?}, {n} outputs, bias {with_bias}"));
            let inputs: Vec<&Tensor> = if with_bias { vec![&x, &panels, &bias] } else { vec![&x, &panels] };
            let out = target.run1("linear_packed", f, &features(n), &inputs);
            let (shape, want, tols) = reference(f, sx, &lx, false, &[n, k], &lw, true, with_bias.then_some(&lbias[..]));
            assert_eq!(out.shape(), &shape[..], "{what}: output shape");
            assert_elems(&what, f, &read(&out), &want, |i| tols[i]);
        }
    }
    // x transposed in memory, read through its layout
    let poison = cases::poison(f);
    let (x, vx) = target.view(f, &[12, 20], Layout::Transposed, &values_of(&mut draw, f, 240), poison);
    let (w, lw) = operand(target, &mut draw, f, &[9, 20]);
    let out = target.run1("linear_packed", f, &features(9), &[&x, &pack(&w)]);
    let (_, want, tols) = reference(f, &[12, 20], &vx, false, &[9, 20], &lw, true, None);
    assert_elems(&target.what("linear_packed", f, "transposed x"), f, &read(&out), &want, |i| tols[i]);
    // panels for other features, or of another depth, are refused by name
    let panels = pack(&w);
    assert_refused(
        &target.what("linear_packed", f, "features past the panels"),
        target.run("linear_packed", f, &features(60), &[&x, &panels]),
        &["linear_packed", "panels must be"],
    );
    let (deeper, _) = operand(target, &mut draw, f, &[12, 21]);
    assert_refused(
        &target.what("linear_packed", f, "another depth"),
        target.run("linear_packed", f, &features(9), &[&deeper, &panels]),
        &["linear_packed", "pack_linear"],
    );
    // a program of it captured and replayed on fresh inputs: byte-equal to eager runs
    let (bias, _) = operand(target, &mut draw, f, &[9]);
    let mut input = || [operand(target, &mut draw, f, &[2, 8, 20]).0];
    let (first, fresh) = (input(), input());
    let model = |t: &[Tensor]| target.run("linear_packed", f, &features(9), &[&t[0], &panels, &bias]);
    assert_replay_matches(&target.what("linear_packed", f, "capture/replay"), &first, &fresh, &model);
    coverage.saw("pack_linear", f);
    coverage.saw("linear_packed", f);
    coverage.assert_complete();
}
