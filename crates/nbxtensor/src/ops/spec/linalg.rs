//! Factorizations and solvers of dense matrices, the Array API's `linalg` extension: each op
//! takes a stack of matrices (the last two dims a matrix, the leading dims a batch, each
//! matrix computed alone) of float32 or float64.
//!
//! | op | inputs | outputs |
//! | --- | --- | --- |
//! | `cholesky {upper}` | A `(..., M, M)` symmetric positive definite | L `(..., M, M)`, A = L·Lᵀ (`upper`: U, A = Uᵀ·U) |
//! | `qr {complete}` | A `(..., M, N)` | Q `(..., M, K)`, R `(..., K, N)`; `complete`: Q `(..., M, M)`, R `(..., M, N)` |
//! | `svd {full_matrices}` | A `(..., M, N)` | U `(..., M, M)`, S `(..., K)`, Vh `(..., N, N)`; not full: U `(..., M, K)`, Vh `(..., K, N)` |
//! | `svdvals` | A `(..., M, N)` | S `(..., K)` |
//! | `eigh` | A `(..., M, M)` symmetric | eigenvalues `(..., M)` ascending, eigenvectors `(..., M, M)` (columns) |
//! | `eigvalsh` | A `(..., M, M)` symmetric | eigenvalues `(..., M)` ascending |
//! | `solve` | A `(..., M, M)`, B `(..., M, R)` (batches broadcast) | X `(..., M, R)`, A·X = B |
//! | `inv` | A `(..., M, M)` | A⁻¹ `(..., M, M)` |
//! | `det` | A `(..., M, M)` | det A `(...)` |
//! | `slogdet` | A `(..., M, M)` | sign `(...)`, log abs det `(...)` |
//!
//! K is min(M, N). Singular values come largest first; `eigh` and `eigvalsh` read the lower
//! triangle (numpy's default). Symmetric inputs are the caller's promise (not checked, as numpy).
//!
//! What a backend must do with a matrix an op has no answer for, as numpy does: `solve` and
//! `inv` of a singular matrix (an exact zero pivot) and `cholesky` of a matrix that is not
//! positive definite are refused, naming the op, the problem and the matrix's batch index; an
//! iteration (`svd`, `eigh`) that does not converge likewise. `det` of a singular matrix is 0,
//! and `slogdet` gives sign 0 and log abs det −inf; NaN in a matrix propagates to its outputs.
//!
//! The declared flops are the classic leading-term counts per matrix (Golub and Van Loan):
//! Cholesky n³/3, LU 2n³/3 (+2n²r to solve, 4n³/3 more to invert), Householder QR
//! 2mnk − 2k³/3 (+2mqk to form a Q of q columns), eigenvalues 4n³/3 (9n³ with vectors),
//! singular values 4mnk − 4k³/3 (with vectors, of the larger side p and the smaller k,
//! 4p·u·k + 8pk² + 9k³ with u the columns of the larger side's factor).

use super::{one_input, require_dtype, same_dtype, AttrDoc, OpDef, Spec};
use crate::dtype::DType;
use crate::kernel::{saturating_product, Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// The dtypes of the factorizations and solvers.
pub const LINALG_DTYPES: [DType; 2] = [DType::Float32, DType::Float64];

/// A factorization or a solver, with its attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinalgOp {
    /// The Cholesky factor: lower (A = L·Lᵀ), or `upper` (A = Uᵀ·U).
    Cholesky {
        /// Whether the upper factor is returned.
        upper: bool,
    },
    /// The QR factorization by Householder reflections.
    Qr {
        /// Whether Q is square (`complete`) rather than of K columns (`reduced`).
        complete: bool,
    },
    /// The singular value decomposition A = U·diag(S)·Vh.
    Svd {
        /// Whether U and Vh are square rather than of K columns / rows.
        full_matrices: bool,
    },
    /// The singular values alone, largest first.
    Svdvals,
    /// The eigenvalues (ascending) and eigenvectors of a symmetric matrix.
    Eigh,
    /// The eigenvalues (ascending) of a symmetric matrix.
    Eigvalsh,
    /// The solution X of A·X = B.
    Solve,
    /// The inverse.
    Inv,
    /// The determinant.
    Det,
    /// The sign and the natural log of the absolute value of the determinant.
    Slogdet,
}

const OPS: [(&str, &str, &[&str]); 10] = [
    ("cholesky", "the Cholesky factor of symmetric positive definite matrices (lower, or upper)", &["x"]),
    ("qr", "the QR factorization (Q, R) of matrices, reduced or complete", &["x"]),
    ("svd", "the singular value decomposition (U, S, Vh) of matrices, S largest first", &["x"]),
    ("svdvals", "the singular values of matrices, largest first", &["x"]),
    ("eigh", "the eigenvalues (ascending) and eigenvectors of symmetric matrices", &["x"]),
    ("eigvalsh", "the eigenvalues (ascending) of symmetric matrices", &["x"]),
    ("solve", "the solution X of A·X = B for square A (batches broadcast)", &["a", "b"]),
    ("inv", "the inverse of square matrices", &["x"]),
    ("det", "the determinant of square matrices", &["x"]),
    ("slogdet", "the sign and log abs determinant of square matrices", &["x"]),
];

impl LinalgOp {
    /// The op's name.
    pub fn name(self) -> &'static str {
        match self {
            LinalgOp::Cholesky { .. } => "cholesky",
            LinalgOp::Qr { .. } => "qr",
            LinalgOp::Svd { .. } => "svd",
            LinalgOp::Svdvals => "svdvals",
            LinalgOp::Eigh => "eigh",
            LinalgOp::Eigvalsh => "eigvalsh",
            LinalgOp::Solve => "solve",
            LinalgOp::Inv => "inv",
            LinalgOp::Det => "det",
            LinalgOp::Slogdet => "slogdet",
        }
    }

    /// Whether the op takes square matrices only.
    pub fn square(self) -> bool {
        !matches!(self, LinalgOp::Qr { .. } | LinalgOp::Svd { .. } | LinalgOp::Svdvals)
    }
}

/// The matrices of a stack: the batch dims and the matrix's rows and columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrices {
    /// The leading (batch) dims.
    pub batch: Vec<i64>,
    /// The rows of each matrix.
    pub rows: i64,
    /// The columns of each matrix.
    pub cols: i64,
}

impl Matrices {
    /// The stack of `shape` for `op`: refused by name when it has fewer than two dims, or is not
    /// square where `square` asks it.
    pub fn of(op: &str, shape: &[i64], square: bool) -> Result<Matrices> {
        let [batch @ .., rows, cols] = shape else {
            return Err(KernelError::Invalid(format!(
                "{op}: takes a stack of matrices (at least 2 dims), got shape {shape:?}"
            )));
        };
        if square && rows != cols {
            return Err(KernelError::Invalid(format!("{op}: takes square matrices (..., M, M), got shape {shape:?}")));
        }
        Ok(Matrices { batch: batch.to_vec(), rows: *rows, cols: *cols })
    }

    /// The number of matrices.
    pub fn count(&self) -> u64 {
        saturating_product(&self.batch.iter().map(|&d| d as u64).collect::<Vec<_>>())
    }

    /// K: the smaller of rows and columns.
    pub fn k(&self) -> i64 {
        self.rows.min(self.cols)
    }

    /// The batch dims followed by `dims`.
    pub fn shape(&self, dims: &[i64]) -> Vec<i64> {
        self.batch.iter().chain(dims).copied().collect()
    }
}

/// A factorization or solver of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Linalg {
    /// The op and its attributes.
    pub op: LinalgOp,
    /// The dtype of the inputs and outputs.
    pub dtype: DType,
}

impl Linalg {
    /// `op` on `dtype`: refused for a dtype it is not defined on (float32 and float64 only).
    pub fn new(op: LinalgOp, dtype: DType) -> Result<Linalg> {
        require_dtype(op.name(), dtype, &LINALG_DTYPES)?;
        Ok(Linalg { op, dtype })
    }

    /// The outputs' shapes and the flops of one matrix, for the stack `a` (and the right-hand
    /// sides' columns `r`, for `solve`).
    fn outputs(&self, a: &Matrices, r: i64) -> (Vec<Vec<i64>>, f64) {
        let (m, n, k) = (a.rows, a.cols, a.k());
        let (mf, nf, kf) = (m as f64, n as f64, k as f64);
        match self.op {
            LinalgOp::Cholesky { .. } => (vec![a.shape(&[m, m])], mf.powi(3) / 3.0),
            LinalgOp::Qr { complete } => {
                let q = if complete { m } else { k };
                let flops = 2.0 * mf * nf * kf - 2.0 * kf.powi(3) / 3.0 + 2.0 * mf * q as f64 * kf;
                (vec![a.shape(&[m, q]), a.shape(&[q, n])], flops)
            }
            LinalgOp::Svd { full_matrices } => {
                let (u, v) = if full_matrices { (m, n) } else { (k, k) };
                let p = mf.max(nf);
                let wide = if full_matrices { p } else { kf };
                let flops = 4.0 * p * wide * kf + 8.0 * p * kf * kf + 9.0 * kf.powi(3);
                (vec![a.shape(&[m, u]), a.shape(&[k]), a.shape(&[v, n])], flops)
            }
            LinalgOp::Svdvals => (vec![a.shape(&[k])], 4.0 * mf * nf * kf - 4.0 * kf.powi(3) / 3.0),
            LinalgOp::Eigh => (vec![a.shape(&[m]), a.shape(&[m, m])], 9.0 * mf.powi(3)),
            LinalgOp::Eigvalsh => (vec![a.shape(&[m])], 4.0 * mf.powi(3) / 3.0),
            LinalgOp::Solve => (vec![a.shape(&[m, r])], 2.0 * mf.powi(3) / 3.0 + 2.0 * mf * mf * r as f64),
            LinalgOp::Inv => (vec![a.shape(&[m, m])], 2.0 * mf.powi(3)),
            LinalgOp::Det => (vec![a.batch.clone()], 2.0 * mf.powi(3) / 3.0),
            LinalgOp::Slogdet => (vec![a.batch.clone(), a.batch.clone()], 2.0 * mf.powi(3) / 3.0),
        }
    }

    /// The stacks of `solve`'s inputs of shapes `a` and `b`, and of its output (A's matrices,
    /// B's columns, the batches broadcast); refused by name when B's rows are not A's.
    pub fn solve_stacks(&self, a: &[i64], b: &[i64]) -> Result<(Matrices, Matrices, Matrices)> {
        let name = self.op.name();
        let sa = Matrices::of(name, a, true)?;
        let sb = Matrices::of(name, b, false)?;
        if sb.rows != sa.rows {
            return Err(KernelError::Invalid(format!(
                "{name}: B's rows must be A's {} (A is {a:?}, B is {b:?})",
                sa.rows
            )));
        }
        let batch = crate::shape::broadcast_shapes(&[&sa.batch, &sb.batch])
            .map_err(|e| KernelError::Invalid(format!("{name}: the batches of A {a:?} and B {b:?}: {e}")))?;
        let out = Matrices { batch, rows: sa.rows, cols: sb.cols };
        Ok((sa, sb, out))
    }
}

impl Spec for Linalg {
    fn op(&self) -> &'static str {
        self.op.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let (name, dtype) = (self.op.name(), self.dtype.launch_key());
        match self.op {
            LinalgOp::Cholesky { upper } => format!("{name}:{dtype}:upper={upper}"),
            LinalgOp::Qr { complete } => format!("{name}:{dtype}:complete={complete}"),
            LinalgOp::Svd { full_matrices } => format!("{name}:{dtype}:full_matrices={full_matrices}"),
            _ => format!("{name}:{dtype}"),
        }
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let name = self.op.name();
        let (stack, r, read) = if self.op == LinalgOp::Solve {
            let [a, b] = inputs else {
                return Err(KernelError::Invalid(format!("{name}: takes 2 inputs (A, B), got {}", inputs.len())));
            };
            same_dtype(name, self.dtype, &[a, b])?;
            let (_, sb, out) = self.solve_stacks(&a.shape, &b.shape)?;
            let read = a.bytes()?.saturating_add(b.bytes()?);
            (Matrices { cols: out.rows, ..out }, sb.cols, read)
        } else {
            let input = one_input(name, self.dtype, inputs)?;
            (Matrices::of(name, &input.shape, self.op.square())?, 0, input.bytes()?)
        };
        let (shapes, per_matrix) = self.outputs(&stack, r);
        let outputs = shapes.iter().map(|s| TensorMeta::new(self.dtype, s)).collect();
        let flops = (per_matrix.max(0.0) * stack.count() as f64).min(u64::MAX as f64) as u64;
        Cost::simple(outputs, read, flops)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = match name {
        "cholesky" => {
            attrs.only(name, &["upper"])?;
            LinalgOp::Cholesky { upper: attrs.bool(name, "upper", Some(false))? }
        }
        "qr" => {
            attrs.only(name, &["complete"])?;
            LinalgOp::Qr { complete: attrs.bool(name, "complete", Some(false))? }
        }
        "svd" => {
            attrs.only(name, &["full_matrices"])?;
            LinalgOp::Svd { full_matrices: attrs.bool(name, "full_matrices", Some(true))? }
        }
        _ => {
            attrs.only(name, &[])?;
            match name {
                "svdvals" => LinalgOp::Svdvals,
                "eigh" => LinalgOp::Eigh,
                "eigvalsh" => LinalgOp::Eigvalsh,
                "solve" => LinalgOp::Solve,
                "inv" => LinalgOp::Inv,
                "det" => LinalgOp::Det,
                "slogdet" => LinalgOp::Slogdet,
                other => return Err(KernelError::Invalid(format!("{other}: not a linalg op"))),
            }
        }
    };
    Ok(Arc::new(Linalg::new(op, dtype)?))
}

/// The factorizations' and solvers' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const UPPER: &[AttrDoc] = &[AttrDoc {
        name: "upper",
        meaning: "whether the upper factor U (A = Uᵀ·U) is returned",
        default: Some("false"),
    }];
    const COMPLETE: &[AttrDoc] = &[AttrDoc {
        name: "complete",
        meaning: "whether Q is square (M, M) rather than (M, K) (the Array API's mode 'complete')",
        default: Some("false"),
    }];
    const FULL: &[AttrDoc] = &[AttrDoc {
        name: "full_matrices",
        meaning: "whether U and Vh are square rather than of K columns / rows",
        default: Some("true"),
    }];
    for (name, summary, inputs) in OPS {
        let attrs = match name {
            "cholesky" => UPPER,
            "qr" => COMPLETE,
            "svd" => FULL,
            _ => &[],
        };
        ops.push(OpDef {
            name,
            family: "linalg",
            summary,
            inputs,
            attrs,
            dtypes: |_| &LINALG_DTYPES,
            bind,
            follows_policy: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shapes(spec: &Linalg, inputs: &[TensorMeta]) -> Vec<Vec<i64>> {
        spec.declare(inputs).unwrap().outputs.into_iter().map(|m| m.shape).collect()
    }

    #[test]
    fn outputs_have_the_standards_shapes() {
        let f = |shape: &[i64]| TensorMeta::new(DType::Float64, shape);
        let op = |op| Linalg::new(op, DType::Float64).unwrap();
        let a = [f(&[2, 5, 3])];
        assert_eq!(shapes(&op(LinalgOp::Qr { complete: false }), &a), vec![vec![2, 5, 3], vec![2, 3, 3]]);
        assert_eq!(shapes(&op(LinalgOp::Qr { complete: true }), &a), vec![vec![2, 5, 5], vec![2, 5, 3]]);
        assert_eq!(
            shapes(&op(LinalgOp::Svd { full_matrices: true }), &a),
            vec![vec![2, 5, 5], vec![2, 3], vec![2, 3, 3]]
        );
        assert_eq!(
            shapes(&op(LinalgOp::Svd { full_matrices: false }), &[f(&[3, 5])]),
            vec![vec![3, 3], vec![3], vec![3, 5]]
        );
        assert_eq!(shapes(&op(LinalgOp::Svdvals), &a), vec![vec![2, 3]]);
        let sq = [f(&[4, 1, 3, 3])];
        assert_eq!(shapes(&op(LinalgOp::Eigh), &sq), vec![vec![4, 1, 3], vec![4, 1, 3, 3]]);
        assert_eq!(shapes(&op(LinalgOp::Slogdet), &sq), vec![vec![4, 1], vec![4, 1]]);
        assert_eq!(shapes(&op(LinalgOp::Det), &[f(&[3, 3])]), vec![Vec::<i64>::new()]);
        let solve = op(LinalgOp::Solve);
        assert_eq!(shapes(&solve, &[f(&[4, 1, 3, 3]), f(&[2, 3, 5])]), vec![vec![4, 2, 3, 5]]);
        // 2n³/3 + 2n²r per matrix, 8 matrices
        let cost = solve.declare(&[f(&[4, 1, 3, 3]), f(&[2, 3, 5])]).unwrap();
        assert_eq!(cost.flops, 8 * (18 + 90));
        assert_eq!(cost.bytes_read, 4 * 9 * 8 + 2 * 15 * 8);
        assert_eq!(op(LinalgOp::Cholesky { upper: true }).key(), "cholesky:fp64:upper=true");
    }

    #[test]
    fn bad_stacks_and_dtypes_are_refused_by_name() {
        let f = |shape: &[i64]| TensorMeta::new(DType::Float32, shape);
        let inv = Linalg::new(LinalgOp::Inv, DType::Float32).unwrap();
        let err = inv.declare(&[f(&[2, 3])]).unwrap_err().to_string();
        assert!(err.contains("inv: takes square matrices"), "{err}");
        let err = inv.declare(&[f(&[3])]).unwrap_err().to_string();
        assert!(err.contains("inv: takes a stack of matrices (at least 2 dims)"), "{err}");
        let err = Linalg::new(LinalgOp::Det, DType::Int32).unwrap_err().to_string();
        assert!(err.contains("det is not defined on int32"), "{err}");
        let solve = Linalg::new(LinalgOp::Solve, DType::Float32).unwrap();
        let err = solve.declare(&[f(&[3, 3]), f(&[2, 4])]).unwrap_err().to_string();
        assert!(err.contains("B's rows must be A's 3"), "{err}");
        let err = solve.declare(&[f(&[2, 3, 3]), f(&[4, 3, 1])]).unwrap_err().to_string();
        assert!(err.contains("solve:"), "{err}");
        let err = bind("qr", DType::Float32, &Attrs::new().with("mode", crate::kernel::AttrValue::Int(0)));
        assert!(err.unwrap_err().to_string().contains("unknown attribute 'mode'"));
    }
}
