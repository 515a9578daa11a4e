//! The factorizations and solvers on the host (`ops::spec::linalg` says what they compute),
//! by the `faer` crate: each matrix of the stack is copied into a float64 `faer::Mat` of its
//! own (float32 is computed in float64 and rounded once; the copy gives every matrix the same
//! alignment, so a matrix's result never depends on where it sits in the stack), factored
//! sequentially, and its outputs written back; the matrices of a stack run on the pool, each
//! computed alone, so results are independent of the thread count. faer's scratch, the copies
//! and the float64 results held until they are written are counted against the memory limit
//! while the kernel runs ([`charge`]: an upper estimate, as they are allocated outside the
//! library's allocator).
//!
//! numpy's answers where the math has none: `solve` and `inv` of a matrix whose LU has an
//! exact zero pivot, `cholesky` of a matrix that is not positive definite, and an `svd` or
//! `eigh` that does not converge are refused naming the op and the matrix's batch index;
//! `det` of a singular matrix is 0 and `slogdet` gives (0, −inf).

use super::buffers::{read, write};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::memory::{host_allocator, HostCharge};
use crate::ops::spec::linalg::{Linalg, LinalgOp, Matrices, LINALG_DTYPES};
use crate::settings::threads;
use crate::tensor::{Element, TensorError};
use faer::linalg::solvers::{DenseSolveCore, PartialPivLu, Qr, SelfAdjointEigen, Solve, Svd};
use faer::{Mat, MatRef, Side};
use rayon::prelude::*;

/// An element the factorizations read and write: float32 or float64, computed in float64.
trait Entry: Element + Copy + Send + Sync {
    /// The value as float64.
    fn wide(self) -> f64;
    /// The float64 value rounded to `Self`.
    fn narrow(value: f64) -> Self;
}

impl Entry for f32 {
    fn wide(self) -> f64 {
        f64::from(self)
    }
    fn narrow(value: f64) -> f32 {
        value as f32
    }
}

impl Entry for f64 {
    fn wide(self) -> f64 {
        self
    }
    fn narrow(value: f64) -> f64 {
        value
    }
}

/// The outputs of one matrix, each in row-major order.
type Outputs = Vec<Vec<f64>>;

/// `m`'s entries in row-major order.
fn row_major(m: MatRef<'_, f64>) -> Vec<f64> {
    (0..m.nrows()).flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)])).collect()
}

/// Matrix `index` of a row-major stack of `rows × cols` matrices, as a float64 `Mat`.
fn matrix<T: Entry>(stack: &[T], index: usize, rows: usize, cols: usize) -> Mat<f64> {
    let at = index * rows * cols;
    Mat::from_fn(rows, cols, |i, j| stack[at + i * cols + j].wide())
}

/// The refusal of matrix `index` of `op`'s stack, for `problem`.
fn refused(op: &str, index: usize, problem: &str) -> KernelError {
    KernelError::Invalid(format!("{op}: the matrix at batch index {index} {problem}"))
}

/// The LU factorization of `a`, refused (as numpy's) when a pivot is exactly zero.
fn invertible(op: &str, index: usize, a: &Mat<f64>) -> Result<PartialPivLu<f64>> {
    let lu = PartialPivLu::new(a.as_ref());
    if lu.U().diagonal().column_vector().iter().any(|&u| u == 0.0) {
        return Err(refused(op, index, "is singular (its LU factorization has a zero pivot)"));
    }
    Ok(lu)
}

/// The parity of a permutation (−1 odd, 1 even), from its cycles.
fn permutation_sign(forward: &[usize]) -> f64 {
    let mut seen = vec![false; forward.len()];
    let mut sign = 1.0;
    for start in 0..forward.len() {
        let mut at = start;
        let mut length = 0;
        while !seen[at] {
            seen[at] = true;
            at = forward[at];
            length += 1;
        }
        if length % 2 == 0 && length > 0 {
            sign = -sign;
        }
    }
    sign
}

/// The sign and log abs determinant from `a`'s partial-pivot LU: the permutation's parity
/// times the signs of U's diagonal, and the sum of the logs of its magnitudes (0 and −inf for
/// a zero pivot; NaN propagates).
fn sign_and_log(lu: &PartialPivLu<f64>) -> (f64, f64) {
    let mut sign = permutation_sign(lu.P().arrays().0);
    let mut log = 0.0;
    for &u in lu.U().diagonal().column_vector().iter() {
        sign *= if u.is_nan() {
            f64::NAN
        } else if u == 0.0 {
            0.0
        } else {
            u.signum()
        };
        log += u.abs().ln();
    }
    (sign, log)
}

/// The `n × n` identity in row-major order.
fn identity(n: usize) -> Vec<f64> {
    (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }).collect()
}

/// The outputs of `op` on an empty `m × n` matrix (`m` or `n` zero), made here: faer's
/// scratch sizes underflow on some empty matrices. The factors are empty but for the
/// complete Q and the full U and Vh (identities), and the determinant of the 0 × 0 matrix
/// (1, log 0).
fn empty_factor(op: LinalgOp, m: usize, n: usize) -> Outputs {
    match op {
        LinalgOp::Qr { complete: true } => vec![identity(m), Vec::new()],
        LinalgOp::Svd { full_matrices: true } => vec![identity(m), Vec::new(), identity(n)],
        LinalgOp::Qr { .. } | LinalgOp::Eigh => vec![Vec::new(); 2],
        LinalgOp::Svd { .. } => vec![Vec::new(); 3],
        LinalgOp::Det => vec![vec![1.0]],
        LinalgOp::Slogdet => vec![vec![1.0], vec![0.0]],
        LinalgOp::Cholesky { .. } | LinalgOp::Svdvals | LinalgOp::Eigvalsh | LinalgOp::Inv | LinalgOp::Solve => {
            vec![Vec::new()]
        }
    }
}

/// The outputs of `op` on the matrix `a` (number `index` of its stack).
fn factor(op: LinalgOp, index: usize, a: Mat<f64>) -> Result<Outputs> {
    if a.nrows() == 0 || a.ncols() == 0 {
        return Ok(empty_factor(op, a.nrows(), a.ncols()));
    }
    let name = op.name();
    Ok(match op {
        LinalgOp::Cholesky { upper } => {
            let llt = faer::linalg::solvers::Llt::new(a.as_ref(), Side::Lower)
                .map_err(|_| refused(name, index, "is not positive definite"))?;
            vec![if upper { row_major(llt.L().transpose()) } else { row_major(llt.L()) }]
        }
        LinalgOp::Qr { complete } => {
            let qr = Qr::new(a.as_ref());
            if complete {
                // faer's R has min(M, N) rows: the complete one is padded with zero rows to M
                let thin = qr.thin_R();
                let r = Mat::from_fn(a.nrows(), a.ncols(), |i, j| if i < thin.nrows() { thin[(i, j)] } else { 0.0 });
                vec![row_major(qr.compute_Q().as_ref()), row_major(r.as_ref())]
            } else {
                vec![row_major(qr.compute_thin_Q().as_ref()), row_major(qr.thin_R())]
            }
        }
        LinalgOp::Svd { full_matrices } => {
            let svd = if full_matrices { Svd::new(a.as_ref()) } else { Svd::new_thin(a.as_ref()) }
                .map_err(|_| refused(name, index, "did not converge"))?;
            let s = svd.S().column_vector().iter().copied().collect();
            vec![row_major(svd.U()), s, row_major(svd.V().transpose())]
        }
        LinalgOp::Svdvals => vec![a.singular_values().map_err(|_| refused(name, index, "did not converge"))?],
        LinalgOp::Eigh => {
            let evd =
                SelfAdjointEigen::new(a.as_ref(), Side::Lower).map_err(|_| refused(name, index, "did not converge"))?;
            vec![evd.S().column_vector().iter().copied().collect(), row_major(evd.U())]
        }
        LinalgOp::Eigvalsh => {
            vec![a.self_adjoint_eigenvalues(Side::Lower).map_err(|_| refused(name, index, "did not converge"))?]
        }
        LinalgOp::Inv => vec![row_major(invertible(name, index, &a)?.inverse().as_ref())],
        LinalgOp::Det => {
            // the permutation's parity times the product of the pivots (not exp(log): exact
            // where the pivots' product is)
            let lu = PartialPivLu::new(a.as_ref());
            let pivots: f64 = lu.U().diagonal().column_vector().iter().product();
            vec![vec![permutation_sign(lu.P().arrays().0) * pivots]]
        }
        LinalgOp::Slogdet => {
            let (sign, log) = sign_and_log(&PartialPivLu::new(a.as_ref()));
            vec![vec![sign], vec![log]]
        }
        LinalgOp::Solve => return Err(KernelError::Invalid("solve: takes two inputs (a launch bug)".into())),
    })
}

/// Writes each matrix's outputs, in stack order, into the launch's outputs.
fn write_outputs<T: Entry>(launch: &Launch<'_>, results: &[Outputs]) -> Result<()> {
    for (o, output) in launch.outputs.iter().enumerate() {
        // SAFETY: each output is this launch's own buffer, written by this loop alone.
        let out = unsafe { write::<T>(output)? };
        let values = results.iter().flat_map(|r| r[o].iter());
        for (slot, &v) in out.iter_mut().zip(values) {
            *slot = T::narrow(v);
        }
    }
    Ok(())
}

/// Position `index` of a broadcast batch `out` in a batch `dims` (right-aligned, dims of
/// one repeated), as a flat index.
fn broadcast_index(index: usize, out: &[i64], dims: &[i64]) -> usize {
    let (mut rest, mut flat, mut stride) = (index, 0, 1);
    for (k, &extent) in out.iter().enumerate().rev() {
        let coordinate = rest % extent as usize;
        rest /= extent as usize;
        if let Some(offset) = (k + dims.len()).checked_sub(out.len()) {
            let own = dims[offset] as usize;
            flat += if own == 1 { 0 } else { coordinate * stride };
            stride *= own;
        }
    }
    flat
}

/// `solve` over the broadcast batch: each A's LU (refused when singular) applied to its B.
fn solve<T: Entry>(spec: &Linalg, launch: &Launch<'_>) -> Result<Vec<Outputs>> {
    let (sa, sb, out) = spec.solve_stacks(launch.inputs[0].shape(), launch.inputs[1].shape())?;
    let (a, b) = (read::<T>(&launch.inputs[0])?, read::<T>(&launch.inputs[1])?);
    let (a, b): (&[T], &[T]) = (&a, &b);
    let (m, r) = (out.rows as usize, out.cols as usize);
    threads::install(|| {
        (0..out.count() as usize)
            .into_par_iter()
            .map(|index| {
                let ia = broadcast_index(index, &out.batch, &sa.batch);
                let lu = invertible("solve", index, &matrix(a, ia, m, m))?;
                let mut x = matrix(b, broadcast_index(index, &out.batch, &sb.batch), m, r);
                lu.solve_in_place(x.as_mut());
                Ok(vec![row_major(x.as_ref())])
            })
            .collect()
    })
}

/// Counts against the memory limit, until it is dropped, what the kernel holds outside the
/// allocator: every matrix's results in float64 until they are written back, and per thread of
/// the pool the float64 work of one matrix of `rows × cols`, taken as twice `(rows + cols)²`
/// values (its copy, the factors U and V of an SVD, faer's scratch).
fn charge(launch: &Launch<'_>, rows: i64, cols: i64) -> Result<HostCharge> {
    let results = launch.outputs.iter().map(|o| o.numel() as u64).fold(0u64, u64::saturating_add);
    let side = (rows.max(0) as u64).saturating_add(cols.max(0) as u64);
    let work = side.saturating_mul(side).saturating_mul(2).saturating_mul(threads::threads() as u64);
    let bytes = results.saturating_add(work).saturating_mul(8);
    host_allocator().charge(bytes).map_err(|e| TensorError::from(e).into())
}

fn run<T: Entry>(spec: &Linalg, launch: &Launch<'_>) -> Result<()> {
    let shape = launch.inputs[0].shape();
    let [.., rows, cols] = shape else {
        return Err(KernelError::Invalid(format!(
            "{}: takes a stack of matrices, got shape {shape:?}",
            spec.op.name()
        )));
    };
    // outputs of no element (a stack of empty matrices, however many: 2^63 of them once made a
    // list of 2^63 results, found by the fuzzer) have nothing to write
    if launch.outputs.iter().all(|o| o.numel() == 0) {
        return Ok(());
    }
    let _counted =
        charge(launch, *rows, *cols + launch.inputs.get(1).and_then(|b| b.shape().last()).copied().unwrap_or(0))?;
    let results = if spec.op == LinalgOp::Solve {
        solve::<T>(spec, launch)?
    } else {
        let input = &launch.inputs[0];
        let stack = Matrices::of(spec.op.name(), input.shape(), spec.op.square())?;
        let elements = read::<T>(input)?;
        let x: &[T] = &elements;
        let (rows, cols) = (stack.rows as usize, stack.cols as usize);
        threads::install(|| {
            (0..stack.count() as usize)
                .into_par_iter()
                .map(|index| factor(spec.op, index, matrix(x, index, rows, cols)))
                .collect::<Result<Vec<_>>>()
        })?
    };
    write_outputs::<T>(launch, &results)
}

fn launch(spec: &Linalg, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, &launch),
        DType::Float64 => run::<f64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.op.name()))),
    }
}

/// Registers the factorizations and solvers on float32 and float64.
pub fn register(table: &mut LaunchTable) {
    for op in ["cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh", "solve", "inv", "det", "slogdet"] {
        table.register(op, &LINALG_DTYPES, launch);
    }
}

#[cfg(test)]
mod tests {
    use super::identity;
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::spec::linalg::LINALG_DTYPES;
    use crate::tensor::Tensor;

    /// `count` values in [-1, 1) from a fixed linear congruential sequence.
    fn values(count: usize, seed: u64) -> Vec<f64> {
        let mut state = seed;
        (0..count)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    /// The product of the row-major `a` (m × k) and `b` (k × n).
    fn mm(a: &[f64], b: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
        (0..m).flat_map(|i| (0..n).map(move |j| (0..k).map(|l| a[i * k + l] * b[l * n + j]).sum())).collect()
    }

    /// The transpose of the row-major `a` (m × n).
    fn t(a: &[f64], m: usize, n: usize) -> Vec<f64> {
        (0..n).flat_map(|j| (0..m).map(move |i| a[i * n + j])).collect()
    }

    fn close(a: &[f64], b: &[f64], tolerance: f64) {
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() <= tolerance, "{a:?} vs {b:?}");
        }
    }

    fn tensor(v: &[f64], shape: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    fn vec(t: &Tensor) -> Vec<f64> {
        t.to_vec::<f64>().unwrap()
    }

    #[test]
    fn solve_and_inv_reconstruct_and_a_singular_matrix_is_refused_by_index() {
        let n = 4;
        let a = values(2 * n * n, 1);
        let b = values(2 * n * 3, 2);
        let x = tensor(&a, &[2, 4, 4]).solve(&tensor(&b, &[2, 4, 3])).unwrap();
        assert_eq!(x.shape(), &[2, 4, 3]);
        let x = vec(&x);
        for m in 0..2 {
            let ax = mm(&a[m * 16..(m + 1) * 16], &x[m * 12..(m + 1) * 12], 4, 4, 3);
            close(&ax, &b[m * 12..(m + 1) * 12], 1e-12);
        }
        let inv = vec(&tensor(&a, &[2, 4, 4]).inv().unwrap());
        for m in 0..2 {
            close(&mm(&a[m * 16..(m + 1) * 16], &inv[m * 16..(m + 1) * 16], 4, 4, 4), &identity(4), 1e-12);
        }
        // the batches broadcast, and a 1-d B is one vector for every A
        let x = tensor(&a, &[2, 1, 4, 4]).solve(&tensor(&values(3 * 4 * 2, 3), &[3, 4, 2])).unwrap();
        assert_eq!(x.shape(), &[2, 3, 4, 2]);
        let v = values(4, 4);
        let x = vec(&tensor(&a, &[2, 4, 4]).solve(&tensor(&v, &[4])).unwrap());
        close(&mm(&a[16..], &x[4..], 4, 4, 1), &v, 1e-12);
        // float32 is computed in float64 and rounded once
        let a32 = Tensor::from_vec(a[..16].iter().map(|&v| v as f32).collect(), &[4, 4]).unwrap();
        let inv32 = a32.inv().unwrap();
        let wide: Vec<f64> = a[..16].iter().map(|&v| f64::from(v as f32)).collect();
        let expected = vec(&tensor(&wide, &[4, 4]).inv().unwrap());
        let got: Vec<f64> = inv32.to_vec::<f32>().unwrap().into_iter().map(f64::from).collect();
        close(&got, &expected.iter().map(|&v| f64::from(v as f32)).collect::<Vec<_>>(), 0.0);
        let mut singular = a.clone();
        singular[16..20].copy_from_slice(&[0.0; 4]);
        let err = tensor(&singular, &[2, 4, 4]).inv().unwrap_err().to_string();
        assert!(err.contains("inv: the matrix at batch index 1 is singular"), "{err}");
        let err = tensor(&singular, &[2, 4, 4]).solve(&tensor(&b, &[2, 4, 3])).unwrap_err().to_string();
        assert!(err.contains("solve: the matrix at batch index 1 is singular"), "{err}");
        let err = Tensor::from_vec(vec![1i32; 4], &[2, 2]).unwrap().inv().unwrap_err().to_string();
        assert!(err.contains("inv is not defined on int32"), "{err}");
    }

    #[test]
    fn det_and_slogdet_are_the_products_of_known_triangular_factors() {
        // A = L·U with unit-diagonal L and U's diagonal (2, -3, 0.5): det -3, two rows swapped: 3
        let l = [1.0, 0.0, 0.0, 0.5, 1.0, 0.0, -0.25, 2.0, 1.0];
        let u = [2.0, 1.0, -1.0, 0.0, -3.0, 4.0, 0.0, 0.0, 0.5];
        let a = mm(&l, &u, 3, 3, 3);
        let swapped: Vec<f64> = [&a[3..6], &a[0..3], &a[6..9]].concat();
        let stack = tensor(&[a.clone(), swapped].concat(), &[2, 3, 3]);
        close(&vec(&stack.det().unwrap()), &[-3.0, 3.0], 1e-12);
        let (sign, log) = stack.slogdet().unwrap();
        assert_eq!(vec(&sign), vec![-1.0, 1.0]);
        close(&vec(&log), &[3f64.ln(), 3f64.ln()], 1e-12);
        // singular: det 0, slogdet (0, -inf); 0×0: det 1, slogdet (1, 0)
        let zero = tensor(&[1.0, 2.0, 2.0, 4.0], &[2, 2]);
        assert_eq!(vec(&zero.det().unwrap()), vec![0.0]);
        let (sign, log) = zero.slogdet().unwrap();
        assert_eq!((vec(&sign), vec(&log)), (vec![0.0], vec![f64::NEG_INFINITY]));
        let empty = tensor(&[], &[0, 0]);
        assert_eq!(vec(&empty.det().unwrap()), vec![1.0]);
        let (sign, log) = empty.slogdet().unwrap();
        assert_eq!((vec(&sign), vec(&log)), (vec![1.0], vec![0.0]));
        assert_eq!(tensor(&[], &[0, 3, 3]).det().unwrap().shape(), &[0]);
        let err = tensor(&[1.0; 6], &[2, 3]).det().unwrap_err().to_string();
        assert!(err.contains("det: takes square matrices"), "{err}");
        assert!(vec(&tensor(&[f64::NAN, 1.0, 1.0, 1.0], &[2, 2]).det().unwrap())[0].is_nan());
    }

    #[test]
    fn cholesky_reconstructs_and_refuses_a_matrix_not_positive_definite() {
        let m = values(9, 5);
        let mut a = mm(&m, &t(&m, 3, 3), 3, 3, 3);
        for i in 0..3 {
            a[i * 4] += 3.0;
        }
        let l = vec(&tensor(&a, &[3, 3]).cholesky(false).unwrap());
        assert!(l[1] == 0.0 && l[2] == 0.0 && l[5] == 0.0, "{l:?}");
        close(&mm(&l, &t(&l, 3, 3), 3, 3, 3), &a, 1e-12);
        assert_eq!(vec(&tensor(&a, &[3, 3]).cholesky(true).unwrap()), t(&l, 3, 3));
        let err = tensor(&[1.0, 2.0, 2.0, 1.0], &[1, 2, 2]).cholesky(false).unwrap_err().to_string();
        assert!(err.contains("cholesky: the matrix at batch index 0 is not positive definite"), "{err}");
    }

    #[test]
    fn qr_reconstructs_tall_and_wide_matrices_reduced_and_complete() {
        for (m, n) in [(5, 3), (3, 5), (4, 4)] {
            let a = values(2 * m * n, 7);
            let x = tensor(&a, &[2, m as i64, n as i64]);
            for complete in [false, true] {
                let (q, r) = x.qr(complete).unwrap();
                let qc = if complete { m } else { m.min(n) };
                assert_eq!((q.shape(), r.shape()), (&[2, m as i64, qc as i64][..], &[2, qc as i64, n as i64][..]));
                let (q, r) = (vec(&q), vec(&r));
                for b in 0..2 {
                    let (q, r) = (&q[b * m * qc..(b + 1) * m * qc], &r[b * qc * n..(b + 1) * qc * n]);
                    close(&mm(q, r, m, qc, n), &a[b * m * n..(b + 1) * m * n], 1e-12);
                    close(&mm(&t(q, m, qc), q, qc, m, qc), &identity(qc), 1e-12);
                    assert!((0..qc).all(|i| (0..n.min(i)).all(|j| r[i * n + j] == 0.0)), "R upper triangular");
                }
            }
        }
    }

    #[test]
    fn svd_reconstructs_and_its_values_come_largest_first() {
        for (m, n) in [(5, 3), (3, 5)] {
            let a = values(m * n, 11);
            let k = m.min(n);
            let x = tensor(&a, &[m as i64, n as i64]);
            for full in [true, false] {
                let (u, s, vh) = x.svd(full).unwrap();
                let (uc, vr) = if full { (m, n) } else { (k, k) };
                assert_eq!(
                    (u.shape(), s.shape(), vh.shape()),
                    (&[m as i64, uc as i64][..], &[k as i64][..], &[vr as i64, n as i64][..])
                );
                let (u, s, vh) = (vec(&u), vec(&s), vec(&vh));
                assert!(s.windows(2).all(|w| w[0] >= w[1]) && s[k - 1] >= 0.0, "{s:?}");
                // U[:, :K]·diag(S)·Vh[:K, :]
                let us: Vec<f64> =
                    (0..m).flat_map(|i| (0..k).map(|j| u[i * uc + j] * s[j]).collect::<Vec<_>>()).collect();
                close(&mm(&us, &vh[..k * n], m, k, n), &a, 1e-12);
                close(&mm(&t(&u, m, uc), &u, uc, m, uc), &identity(uc), 1e-12);
                close(&vec(&x.svdvals().unwrap()), &s, 1e-12);
            }
        }
    }

    #[test]
    fn eigh_reconstructs_symmetric_matrices_with_eigenvalues_ascending() {
        let m = values(16, 13);
        let st = t(&m, 4, 4);
        let a: Vec<f64> = m.iter().zip(&st).map(|(x, y)| x + y).collect();
        let (w, v) = tensor(&a, &[1, 4, 4]).eigh().unwrap();
        assert_eq!((w.shape(), v.shape()), (&[1, 4][..], &[1, 4, 4][..]));
        let (w, v) = (vec(&w), vec(&v));
        assert!(w.windows(2).all(|p| p[0] <= p[1]), "{w:?}");
        let vw: Vec<f64> = (0..16).map(|i| v[i] * w[i % 4]).collect();
        close(&mm(&vw, &t(&v, 4, 4), 4, 4, 4), &a, 1e-12);
        close(&vec(&tensor(&a, &[4, 4]).eigvalsh().unwrap()), &w, 1e-12);
        // only the lower triangle is read
        let mut lower = a.clone();
        lower[1] = 100.0;
        close(&vec(&tensor(&lower, &[4, 4]).eigvalsh().unwrap()), &w, 1e-12);
    }

    #[test]
    fn the_host_serves_every_linalg_op_and_a_gpu_refuses_them_naming_op_dtype_and_backend() {
        let names: Vec<&str> =
            crate::ops::spec::catalogue().iter().filter(|d| d.family == "linalg").map(|d| d.name).collect();
        assert_eq!(names.len(), 10);
        let [host, gpus @ ..] = &crate::backend::tables()[..] else { panic!("the host's table first") };
        assert_eq!(gpus.len(), 2, "the CUDA and wgpu tables");
        for name in names {
            for dtype in LINALG_DTYPES {
                assert!(host.has(name, dtype), "{name} {dtype}");
                for gpu in gpus {
                    let err = gpu.bind(name, dtype, &Attrs::new()).err().expect("no GPU launch").to_string();
                    let backend = gpu.backend();
                    assert_eq!(err, format!("no kernel for op '{name}' on dtype {dtype} in the {backend} backend"));
                }
            }
        }
    }

    #[test]
    fn every_op_takes_every_empty_matrix_in_both_dtypes() {
        // faer's scratch sizes underflow on some empty matrices (eigh of 0 × 0 did, found by
        // the fuzzer): the kernel makes these factors itself
        for dtype in LINALG_DTYPES {
            for shape in [[0i64, 0], [3, 0], [0, 3], [2, 0]] {
                let x = Tensor::zeros(dtype, &[2, shape[0], shape[1]]).unwrap();
                let square = shape[0] == shape[1];
                for op in ["cholesky", "eigh", "eigvalsh", "inv", "det", "slogdet", "qr", "svd", "svdvals"] {
                    let square_only = !matches!(op, "qr" | "svd" | "svdvals");
                    // the reduced SVD here (the full one's U and Vh are identities, below)
                    let attrs = if op == "svd" {
                        Attrs::new().with("full_matrices", AttrValue::Bool(false))
                    } else {
                        Attrs::new()
                    };
                    let outputs = crate::ops::call(op, &attrs, &[&x]);
                    if square_only && !square {
                        assert!(outputs.unwrap_err().to_string().contains("square"), "{op} {shape:?}");
                        continue;
                    }
                    let outputs = outputs.unwrap_or_else(|e| panic!("{op} {dtype} {shape:?}: {e}"));
                    let wide: Vec<Vec<f64>> =
                        outputs.iter().map(|t| t.cast(crate::DType::Float64).unwrap().to_vec().unwrap()).collect();
                    match op {
                        "det" => assert_eq!(wide, [vec![1.0, 1.0]]),
                        "slogdet" => assert_eq!(wide, [vec![1.0, 1.0], vec![0.0, 0.0]]),
                        _ => assert!(wide.iter().all(|w| w.is_empty()), "{op} {shape:?}: {wide:?}"),
                    }
                }
                let (m, n) = (shape[0] as usize, shape[1] as usize);
                let complete =
                    crate::ops::call("qr", &Attrs::new().with("complete", AttrValue::Bool(true)), &[&x]).unwrap();
                let q: Vec<f64> = complete[0].cast(crate::DType::Float64).unwrap().to_vec().unwrap();
                assert_eq!(q, [identity(m), identity(m)].concat(), "{shape:?}");
                let full =
                    crate::ops::call("svd", &Attrs::new().with("full_matrices", AttrValue::Bool(true)), &[&x]).unwrap();
                let vh: Vec<f64> = full[2].cast(crate::DType::Float64).unwrap().to_vec().unwrap();
                assert_eq!(vh, [identity(n), identity(n)].concat(), "{shape:?}");
                // a huge stack of empty matrices: nothing to compute, at once
                let huge = Tensor::zeros(dtype, &[i64::MAX, shape[0], shape[1]]).unwrap();
                let op = if square { "inv" } else { "svdvals" };
                let out = crate::ops::call(op, &Attrs::new(), &[&huge]).unwrap().remove(0);
                assert_eq!(out.numel(), 0, "{op} {shape:?}");
                assert_eq!(out.shape()[0], i64::MAX);
                if square {
                    let b = Tensor::zeros(dtype, &[2, shape[0], 3]).unwrap();
                    assert_eq!(crate::ops::call("solve", &Attrs::new(), &[&x, &b]).unwrap()[0].shape(), &[2, 0, 3]);
                }
            }
        }
    }

    #[test]
    fn empty_matrices_give_the_empty_factors_and_identities() {
        let (q, r) = tensor(&[], &[3, 0]).qr(true).unwrap();
        assert_eq!((vec(&q), r.shape()), (identity(3), &[3, 0][..]));
        let (q, r) = tensor(&[], &[3, 0]).qr(false).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[3, 0][..], &[0, 0][..]));
        let (q, r) = tensor(&[], &[0, 2]).qr(false).unwrap();
        assert_eq!((q.shape(), r.shape()), (&[0, 0][..], &[0, 2][..]));
        let (u, s, vh) = tensor(&[], &[0, 2]).svd(true).unwrap();
        assert_eq!((u.shape(), s.shape(), vec(&vh)), (&[0, 0][..], &[0][..], identity(2)));
        let (u, s, vh) = tensor(&[], &[2, 0]).svd(false).unwrap();
        assert_eq!((u.shape(), s.shape(), vh.shape()), (&[2, 0][..], &[0][..], &[0, 0][..]));
        assert_eq!(tensor(&[], &[2, 3, 0]).svdvals().unwrap().shape(), &[2, 0]);
        let (w, v) = tensor(&[], &[0, 0]).eigh().unwrap();
        assert_eq!((w.shape(), v.shape()), (&[0][..], &[0, 0][..]));
        assert_eq!(tensor(&[], &[0, 0]).eigvalsh().unwrap().shape(), &[0]);
        assert_eq!(tensor(&[], &[2, 0, 0]).inv().unwrap().shape(), &[2, 0, 0]);
        assert_eq!(tensor(&[], &[0, 0]).cholesky(false).unwrap().shape(), &[0, 0]);
        assert_eq!(tensor(&[], &[0, 0]).solve(&tensor(&[], &[0, 3])).unwrap().shape(), &[0, 3]);
        assert_eq!(tensor(&values(8, 17), &[2, 2, 2]).solve(&tensor(&[], &[2, 0])).unwrap().shape(), &[2, 2, 0]);
    }
}
