//! The linalg family (`ops::spec::linalg`): factorizations and solvers of stacks of matrices,
//! float32 and float64, checked by what defines each answer rather than by one reference
//! (a factorization is unique only up to signs):
//! - cholesky: L lower triangular with a positive diagonal, L·Lᵀ = A (upper: U = Lᵀ);
//! - qr: Q·R = A, QᵀQ = I, R upper triangular (reduced and complete);
//! - svd: U·diag(S)·Vh = A, UᵀU = I, Vh·Vhᵀ = I, S non-negative and descending; svdvals = S;
//! - eigh: A·V = V·diag(w), VᵀV = I, w ascending; eigvalsh = w;
//! - solve: A·X = B (batches broadcast); inv: A·A⁻¹ = I;
//! - det and slogdet against this file's own LU with partial pivoting in float64.
//!
//! Inputs are well conditioned (a random matrix plus n·I, or a product with its transpose plus
//! n·I), so each identity holds to the dtype's precision: |residual| ≤ 64·n·ε·(|A| + 1), ε the
//! dtype's epsilon. A singular matrix is refused by `solve` and `inv`, a matrix not positive
//! definite by `cholesky`, each naming the op and the batch index; a non-square input of a
//! square op and a stack of fewer than 2 dims are refused naming the op.

use crate::cases::Draw;
use crate::harness::{assert_refused, assert_replay_matches, read, Coverage, Target};
use crate::reference::{Elem, F32, F64};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::{DType, Tensor};

/// Whether this suite has a check of `op` on `dtype`.
pub fn covers(op: &str, dtype: DType) -> bool {
    matches!(dtype, DType::Float32 | DType::Float64)
        && matches!(
            op,
            "cholesky" | "qr" | "svd" | "svdvals" | "eigh" | "eigvalsh" | "solve" | "inv" | "det" | "slogdet"
        )
}

/// A row-major matrix in float64.
#[derive(Clone, Debug)]
struct M {
    rows: usize,
    cols: usize,
    v: Vec<f64>,
}

impl M {
    fn at(&self, i: usize, j: usize) -> f64 {
        self.v[i * self.cols + j]
    }

    fn t(&self) -> M {
        let v = (0..self.cols).flat_map(|j| (0..self.rows).map(move |i| self.at(i, j))).collect();
        M { rows: self.cols, cols: self.rows, v }
    }

    fn mul(&self, b: &M) -> M {
        assert_eq!(self.cols, b.rows, "the test's own shapes");
        let v = (0..self.rows)
            .flat_map(|i| (0..b.cols).map(move |j| (0..self.cols).map(|l| self.at(i, l) * b.at(l, j)).sum()))
            .collect();
        M { rows: self.rows, cols: b.cols, v }
    }

    fn identity(n: usize) -> M {
        M { rows: n, cols: n, v: (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }).collect() }
    }

    /// The largest magnitude of an entry (0 for an empty matrix).
    fn norm(&self) -> f64 {
        self.v.iter().fold(0.0, |m, x| m.max(x.abs()))
    }
}

/// The dtype's epsilon.
fn eps(dtype: DType) -> f64 {
    let f = if dtype == DType::Float64 { F64 } else { F32 };
    crate::reference::pow2(-f.mantissa)
}

/// Asserts `got` equals `want` entry by entry within `scale · 64·n·ε`.
fn assert_close(what: &str, dtype: DType, got: &M, want: &M, scale: f64) {
    assert_eq!((got.rows, got.cols), (want.rows, want.cols), "{what}: shape");
    let n = got.rows.max(got.cols).max(1) as f64;
    let allowed = 64.0 * n * eps(dtype) * (scale + 1.0);
    for (k, (g, w)) in got.v.iter().zip(&want.v).enumerate() {
        assert!((g - w).abs() <= allowed, "{what}: entry {k}: {g} against {w} (allowed {allowed:e})");
    }
}

/// Matrix `index` of an output tensor whose last two dims are `rows × cols`.
fn matrix_of(values: &[f64], index: usize, rows: usize, cols: usize) -> M {
    M { rows, cols, v: values[index * rows * cols..(index + 1) * rows * cols].to_vec() }
}

fn floats(t: &Tensor) -> Vec<f64> {
    read(t).into_iter().map(Elem::f).collect()
}

/// `count` random `rows × cols` matrices of `dtype` (entries in [-1, 1), exactly representable),
/// with `shift` added to the diagonal.
fn randoms(draw: &mut Draw, dtype: DType, count: usize, rows: usize, cols: usize, shift: f64) -> Vec<M> {
    (0..count)
        .map(|_| {
            let mut v: Vec<f64> =
                crate::cases::floats(draw, dtype, rows * cols, -1.0, 1.0).into_iter().map(Elem::f).collect();
            for i in 0..rows.min(cols) {
                v[i * cols + i] = crate::cases::float_input(dtype, v[i * cols + i] + shift);
            }
            M { rows, cols, v }
        })
        .collect()
}

/// Symmetric positive definite matrices: B·Bᵀ + n·I, rounded to `dtype` (still symmetric).
fn spd(draw: &mut Draw, dtype: DType, count: usize, n: usize) -> Vec<M> {
    randoms(draw, dtype, count, n, n, 0.0)
        .into_iter()
        .map(|b| {
            let mut a = b.mul(&b.t());
            for i in 0..n {
                a.v[i * n + i] += n as f64;
            }
            a.v = a.v.iter().map(|&x| crate::cases::float_input(dtype, x)).collect();
            a
        })
        .collect()
}

fn stack(target: &Target, dtype: DType, batch: &[i64], ms: &[M]) -> Tensor {
    let (rows, cols) = (ms[0].rows as i64, ms[0].cols as i64);
    let values: Vec<Elem> = ms.iter().flat_map(|m| m.v.iter().map(|&x| Elem::F(x))).collect();
    target.tensor(dtype, &[batch, &[rows, cols]].concat(), &values)
}

/// The determinant by LU with partial pivoting, in float64.
fn det(a: &M) -> f64 {
    let n = a.rows;
    let mut m = a.v.clone();
    let mut d = 1.0;
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i * n + c].abs().total_cmp(&m[j * n + c].abs())).unwrap();
        if m[p * n + c] == 0.0 {
            return 0.0;
        }
        if p != c {
            for j in 0..n {
                m.swap(c * n + j, p * n + j);
            }
            d = -d;
        }
        d *= m[c * n + c];
        for i in c + 1..n {
            let f = m[i * n + c] / m[c * n + c];
            for j in c..n {
                m[i * n + j] -= f * m[c * n + j];
            }
        }
    }
    d
}

fn flag(name: &str, on: bool) -> Attrs {
    Attrs::new().with(name, AttrValue::Bool(on))
}

/// Runs `op` on a batch of 2 matrices of each shape and checks what defines its answer.
fn check_op(target: &Target, draw: &mut Draw, op: &str, dtype: DType) {
    let what = |case: &str| target.what(op, dtype, case);
    let tol = |a: &M| a.norm();
    match op {
        "cholesky" => {
            let a = spd(draw, dtype, 2, 5);
            let x = stack(target, dtype, &[2], &a);
            for upper in [false, true] {
                let out = floats(&target.run1(op, dtype, &flag("upper", upper), &[&x]));
                for (b, a) in a.iter().enumerate() {
                    let f = matrix_of(&out, b, 5, 5);
                    let l = if upper { f.t() } else { f.clone() };
                    assert!((0..5).all(|i| l.at(i, i) > 0.0 && (i + 1..5).all(|j| l.at(i, j) == 0.0)), "{}", what("L"));
                    assert_close(&what(&format!("L·Lᵀ = A, upper {upper}")), dtype, &l.mul(&l.t()), a, tol(a));
                }
            }
            let not_pd = M { rows: 2, cols: 2, v: vec![1.0, 2.0, 2.0, 1.0] };
            let bad = stack(target, dtype, &[2], &[M::identity(2), not_pd]);
            assert_refused(
                &what("not positive definite"),
                target.run(op, dtype, &Attrs::new(), &[&bad]),
                &[op, "batch index 1", "positive definite"],
            );
        }
        "qr" => {
            for (m, n) in [(6, 4), (4, 6), (5, 5)] {
                let a = randoms(draw, dtype, 2, m, n, 0.0);
                let x = stack(target, dtype, &[2], &a);
                for complete in [false, true] {
                    let out = target.run(op, dtype, &flag("complete", complete), &[&x]).unwrap();
                    let k = if complete { m } else { m.min(n) };
                    assert_eq!(
                        (out[0].shape(), out[1].shape()),
                        (&[2, m as i64, k as i64][..], &[2, k as i64, n as i64][..]),
                        "{}",
                        what("shapes")
                    );
                    let (q, r) = (floats(&out[0]), floats(&out[1]));
                    for (b, a) in a.iter().enumerate() {
                        let (q, r) = (matrix_of(&q, b, m, k), matrix_of(&r, b, k, n));
                        assert!(
                            (0..k).all(|i| (0..n.min(i)).all(|j| r.at(i, j) == 0.0)),
                            "{}: R upper triangular: {r:?} ({m}×{n}, complete {complete})",
                            what("R")
                        );
                        assert_close(&what("Q·R = A"), dtype, &q.mul(&r), a, tol(a));
                        assert_close(&what("QᵀQ = I"), dtype, &q.t().mul(&q), &M::identity(k), 1.0);
                    }
                }
            }
        }
        "svd" | "svdvals" => {
            for (m, n) in [(6, 4), (4, 6)] {
                let k = m.min(n);
                let a = randoms(draw, dtype, 2, m, n, 0.0);
                let x = stack(target, dtype, &[2], &a);
                let s_of = |values: &[f64], b: usize| values[b * k..(b + 1) * k].to_vec();
                if op == "svdvals" {
                    let s = floats(&target.run1(op, dtype, &Attrs::new(), &[&x]));
                    // svd's S of the same values in float64
                    let wide = stack(target, DType::Float64, &[2], &a);
                    let want =
                        floats(&target.run("svd", DType::Float64, &flag("full_matrices", false), &[&wide]).unwrap()[1]);
                    for b in 0..2 {
                        let (got, want) = (s_of(&s, b), s_of(&want, b));
                        let scale = tol(&a[b]) * k as f64;
                        assert_close(
                            &what("svdvals = svd's S"),
                            dtype,
                            &M { rows: 1, cols: k, v: got },
                            &M { rows: 1, cols: k, v: want },
                            scale,
                        );
                    }
                    continue;
                }
                for full in [true, false] {
                    let out = target.run(op, dtype, &flag("full_matrices", full), &[&x]).unwrap();
                    let (uc, vr) = if full { (m, n) } else { (k, k) };
                    let (u, s, vh) = (floats(&out[0]), floats(&out[1]), floats(&out[2]));
                    for (b, a) in a.iter().enumerate() {
                        let (u, s, vh) = (matrix_of(&u, b, m, uc), s_of(&s, b), matrix_of(&vh, b, vr, n));
                        assert!(
                            s.windows(2).all(|w| w[0] >= w[1]) && s[k - 1] >= 0.0,
                            "{}: {s:?}",
                            what("S descending")
                        );
                        let us = M {
                            rows: m,
                            cols: k,
                            v: (0..m).flat_map(|i| (0..k).map(|j| u.at(i, j) * s[j]).collect::<Vec<_>>()).collect(),
                        };
                        let vk = M { rows: k, cols: n, v: vh.v[..k * n].to_vec() };
                        assert_close(&what("U·S·Vh = A"), dtype, &us.mul(&vk), a, tol(a) * k as f64);
                        assert_close(&what("UᵀU = I"), dtype, &u.t().mul(&u), &M::identity(uc), 1.0);
                        assert_close(&what("Vh·Vhᵀ = I"), dtype, &vh.mul(&vh.t()), &M::identity(vr), 1.0);
                    }
                }
            }
        }
        "eigh" | "eigvalsh" => {
            let n = 5;
            let a: Vec<M> = randoms(draw, dtype, 2, n, n, 0.0)
                .into_iter()
                .map(|b| M {
                    rows: n,
                    cols: n,
                    v: b.v.iter().zip(&b.t().v).map(|(x, y)| crate::cases::float_input(dtype, x + y)).collect(),
                })
                .collect();
            let x = stack(target, dtype, &[2], &a);
            let out = target.run(op, dtype, &Attrs::new(), &[&x]).unwrap();
            let w = floats(&out[0]);
            for (b, a) in a.iter().enumerate() {
                let w = &w[b * n..(b + 1) * n];
                assert!(w.windows(2).all(|p| p[0] <= p[1]), "{}: {w:?}", what("w ascending"));
                // trace and Frobenius norm: Σw = tr A, Σw² = |A|²
                let trace: f64 = (0..n).map(|i| a.at(i, i)).sum();
                let frob: f64 = a.v.iter().map(|x| x * x).sum();
                let sums = M { rows: 1, cols: 2, v: vec![w.iter().sum(), w.iter().map(|x| x * x).sum()] };
                assert_close(
                    &what("Σw = tr A, Σw² = |A|²"),
                    dtype,
                    &sums,
                    &M { rows: 1, cols: 2, v: vec![trace, frob] },
                    frob,
                );
                if op == "eigh" {
                    let v = matrix_of(&floats(&out[1]), b, n, n);
                    let vw = M { rows: n, cols: n, v: (0..n * n).map(|i| v.v[i] * w[i % n]).collect() };
                    assert_close(&what("A·V = V·diag(w)"), dtype, &a.mul(&v), &vw, tol(a) * n as f64);
                    assert_close(&what("VᵀV = I"), dtype, &v.t().mul(&v), &M::identity(n), 1.0);
                }
            }
        }
        "solve" => {
            let n = 5;
            let a = randoms(draw, dtype, 2, n, n, n as f64);
            let b = randoms(draw, dtype, 3, n, 2, 0.0);
            // A [2, 1, n, n] against B [3, n, 2]: X [2, 3, n, 2]
            let xa = stack(target, dtype, &[2, 1], &a);
            let xb = stack(target, dtype, &[3], &b);
            let out = target.run1(op, dtype, &Attrs::new(), &[&xa, &xb]);
            assert_eq!(out.shape(), &[2, 3, n as i64, 2], "{}", what("broadcast shape"));
            let x = floats(&out);
            for i in 0..2 {
                for j in 0..3 {
                    let xm = matrix_of(&x, i * 3 + j, n, 2);
                    assert_close(&what("A·X = B"), dtype, &a[i].mul(&xm), &b[j], tol(&a[i]) * n as f64);
                }
            }
            let mut singular = a[1].clone();
            singular.v[n..2 * n].fill(0.0);
            let bad = stack(target, dtype, &[2], &[a[0].clone(), singular]);
            let rhs = stack(target, dtype, &[2], &b[..2]);
            assert_refused(
                &what("singular"),
                target.run(op, dtype, &Attrs::new(), &[&bad, &rhs]),
                &[op, "batch index 1", "singular"],
            );
        }
        "inv" => {
            let n = 5;
            let a = randoms(draw, dtype, 2, n, n, n as f64);
            let out = floats(&target.run1(op, dtype, &Attrs::new(), &[&stack(target, dtype, &[2], &a)]));
            for (b, a) in a.iter().enumerate() {
                assert_close(
                    &what("A·A⁻¹ = I"),
                    dtype,
                    &a.mul(&matrix_of(&out, b, n, n)),
                    &M::identity(n),
                    tol(a) * n as f64,
                );
            }
            let mut singular = a[0].clone();
            singular.v[..n].fill(0.0);
            let bad = stack(target, dtype, &[1], &[singular]);
            assert_refused(
                &what("singular"),
                target.run(op, dtype, &Attrs::new(), &[&bad]),
                &[op, "batch index 0", "singular"],
            );
        }
        "det" | "slogdet" => {
            let n = 5;
            let mut a = randoms(draw, dtype, 3, n, n, 1.0);
            // a singular one: det 0, slogdet (0, -inf)
            a[2].v[2 * n..3 * n].fill(0.0);
            let out = target.run(op, dtype, &Attrs::new(), &[&stack(target, dtype, &[3], &a)]).unwrap();
            for (b, a) in a.iter().enumerate() {
                let want = det(a);
                let got = if op == "det" {
                    floats(&out[0])[b]
                } else {
                    let (sign, log) = (floats(&out[0])[b], floats(&out[1])[b]);
                    if want == 0.0 {
                        assert!(sign == 0.0 && log == f64::NEG_INFINITY, "{}: ({sign}, {log})", what("singular"));
                    }
                    sign * log.exp()
                };
                let scale = a.norm().powi(n as i32) * n as f64;
                assert_close(
                    &what("det"),
                    dtype,
                    &M { rows: 1, cols: 1, v: vec![got] },
                    &M { rows: 1, cols: 1, v: vec![want] },
                    scale,
                );
            }
        }
        other => panic!("no check of {other}"),
    }
}

/// Every (op, dtype) of the table on batches of matrices, tall, wide and square where the op
/// takes them, with the refusals of the matrices it has no answer for.
pub fn linalg_values(target: &Target) {
    let mut coverage = Coverage::new(target, "linalg", "values");
    let mut draw = Draw::new(90);
    for (op, dtype) in target.entries("linalg") {
        assert!(covers(op, dtype), "{}: the suite has no check", target.what(op, dtype, "values"));
        check_op(target, &mut draw, op, dtype);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// Empty batches give empty outputs of the right shapes; a non-square input of a square op and
/// a 1-d input are refused naming the op.
pub fn linalg_edge_shapes(target: &Target) {
    let mut coverage = Coverage::new(target, "linalg", "edge shapes");
    for (op, dtype) in target.entries("linalg") {
        let empty = target.tensor(dtype, &[0, 3, 3], &[]);
        let inputs: Vec<&Tensor> = if op == "solve" { vec![&empty, &empty] } else { vec![&empty] };
        let out = target
            .run(op, dtype, &Attrs::new(), &inputs)
            .unwrap_or_else(|e| panic!("{}: {e}", target.what(op, dtype, "empty batch")));
        assert!(
            out.iter().all(|t| t.shape().first() == Some(&0)),
            "{}: outputs of an empty batch",
            target.what(op, dtype, "empty batch")
        );
        let vector = target.tensor(dtype, &[3], &[Elem::F(1.0); 3]);
        let args: Vec<&Tensor> = if op == "solve" { vec![&vector, &vector] } else { vec![&vector] };
        assert_refused(&target.what(op, dtype, "1-d input"), target.run(op, dtype, &Attrs::new(), &args), &[op]);
        if !matches!(op, "qr" | "svd" | "svdvals") {
            let wide = target.tensor(dtype, &[2, 3], &[Elem::F(1.0); 6]);
            let args: Vec<&Tensor> = if op == "solve" { vec![&wide, &wide] } else { vec![&wide] };
            assert_refused(&target.what(op, dtype, "not square"), target.run(op, dtype, &Attrs::new(), &args), &[op]);
        }
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}

/// A program of each op on a batch of well-conditioned matrices, captured and replayed on
/// fresh ones: byte-equal to an eager run.
pub fn linalg_capture_replay(target: &Target) {
    let mut coverage = Coverage::new(target, "linalg", "capture/replay");
    let mut draw = Draw::new(91);
    for (op, dtype) in target.entries("linalg") {
        let mut input = || {
            let a =
                if op == "cholesky" { spd(&mut draw, dtype, 2, 4) } else { randoms(&mut draw, dtype, 2, 4, 4, 4.0) };
            stack(target, dtype, &[2], &a)
        };
        let (first, fresh) = ([input(), input()], [input(), input()]);
        let model = |t: &[Tensor]| {
            let args: Vec<&Tensor> = if op == "solve" { vec![&t[0], &t[1]] } else { vec![&t[0]] };
            target.run(op, dtype, &Attrs::new(), &args)
        };
        assert_replay_matches(&target.what(op, dtype, "capture/replay"), &first, &fresh, &model);
        coverage.saw(op, dtype);
    }
    coverage.assert_complete();
}
