//! The typed Rust API: a [`Tensor`] method for every op, with typed arguments. What the
//! string entry point leaves to its caller is decided here, once, for Rust and Python alike:
//! binary operands are promoted (the Array API's rules, weak scalars), and an op defined on
//! the floats only reads a bool or integer input as float32 (`float_math_input`).
//!
//! ```
//! use nbxtensor::{DType, Tensor};
//! let a = Tensor::from_vec(vec![1i32, 2, 3], &[3])?;
//! let b = Tensor::from_vec(vec![0.5f32, 0.5, 0.5], &[3])?;
//! let c = a.add(&b)?;                                  // int32 + float32 → float32
//! assert_eq!((c.dtype(), c.to_vec::<f32>()?), (DType::Float32, vec![1.5, 2.5, 3.5]));
//! let d = a.mul(2)?;                                    // a weak scalar keeps int32
//! assert_eq!(d.to_vec::<i32>()?, vec![2, 4, 6]);
//! let s = c.reshape(&[1, 3])?.softmax(-1)?.sum(&[-1], false)?;
//! assert!((s.to_vec::<f32>()?[0] - 1.0).abs() < 1e-6);
//! # Ok::<(), nbxtensor::Error>(())
//! ```

use super::operand::{cast_to, promote, Operand, Scalar};
use super::spec::attention::Sdpa;
use super::spec::binary::{Binary, BinaryOp};
use super::spec::cast::{Assign, Cast, Copy};
use super::spec::create::{Iota, Term};
use super::spec::decode::{DecodeAttention, KvCacheWrite};
use super::spec::gather::{Concat, Embedding, IndexSelect};
use super::spec::linalg::{Linalg, LinalgOp};
use super::spec::matmul::{LinearPacked, PackLinear, Product};
use super::spec::quant::{Int4Layout, Int8Layout, MatmulInt4, MatmulInt8, PackInt4, PackInt8};
use super::spec::reduce::{Reduce, ReduceOp};
use super::spec::rows::{Norm, Rope, Softmax};
use super::spec::sample::Sample;
use super::spec::scan::{Scan, ScanOp};
use super::spec::select::{MaskedFill, Where};
use super::spec::sort::{SearchSorted, Sort};
use super::spec::unary::{Unary, UnaryOp};
use super::{apply, run, run_on};
use crate::dtype::promotion::float_math_input;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use crate::tensor::Tensor;
use std::borrow::Cow;
use std::sync::Arc;

fn one(mut outputs: Vec<Tensor>) -> Tensor {
    outputs.remove(0)
}

/// The next of `op`'s outputs; refused by name when the launch gave fewer than declared.
fn next_output(op: &str, outputs: &mut impl Iterator<Item = Tensor>) -> Result<Tensor> {
    outputs.next().ok_or_else(|| KernelError::Invalid(format!("{op}: gave fewer outputs than it declares")))
}

/// `x` as the input of a float-only op: bool and integers cast to float32.
fn float_input(op: &str, x: &Tensor) -> Result<Tensor> {
    let dtype = float_math_input(x.dtype()).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    cast_to(x, dtype)
}

/// Whether a dtype is a float or a complex dtype (what a float-only op reads unchanged).
fn inexact(dtype: DType) -> bool {
    matches!(dtype.kind(), Kind::Float | Kind::Complex)
}

/// Whether `op` is defined on the floats (and maybe the complex dtypes) only.
fn floats_only(dtypes: &[DType]) -> bool {
    dtypes.iter().all(|&d| inexact(d))
}

/// `op` on `x`, dispatched as the typed API does.
pub fn unary(op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    let x = if floats_only(op.dtypes()) && !inexact(x.dtype()) {
        Cow::Owned(float_input(op.name(), x)?)
    } else if matches!(op, UnaryOp::LogicalNot) && x.dtype() != DType::Bool {
        Cow::Owned(cast_to(x, DType::Bool)?)
    } else {
        Cow::Borrowed(x)
    };
    Ok(one(apply(op.name(), &[&x], |dtype| Unary::new(op, dtype))?))
}

/// `op` on `a` and `b` (tensors or weak scalars), promoted to one dtype first; the
/// float-only ops read integer operands as float32, the logical ops read any operand as bool.
pub fn binary<'a>(op: BinaryOp, a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Tensor> {
    let mut operands = promote(op.name(), &[a.into(), b.into()])?;
    let dtypes = op.dtypes();
    let dtype = operands[0].dtype();
    if floats_only(dtypes) && !inexact(dtype) {
        operands = operands.iter().map(|t| float_input(op.name(), t).map(Cow::Owned)).collect::<Result<_>>()?;
    } else if dtypes == [DType::Bool] && dtype != DType::Bool {
        operands = operands.iter().map(|t| cast_to(t, DType::Bool).map(Cow::Owned)).collect::<Result<_>>()?;
    }
    Ok(one(apply(op.name(), &[&operands[0], &operands[1]], |dtype| Binary::new(op, dtype))?))
}

macro_rules! unary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<Tensor> {
                    unary(UnaryOp::$op, self)
                }
            )*
        }
    };
}

macro_rules! binary_methods {
    ($($(#[$doc:meta])* $name:ident => $op:ident;)*) => {
        impl Tensor {
            $(
                $(#[$doc])*
                pub fn $name<'a>(&'a self, other: impl Into<Operand<'a>>) -> Result<Tensor> {
                    binary(BinaryOp::$op, self, other)
                }
            )*
        }
    };
}

unary_methods! {
    /// `-x` (integers wrap).
    neg => Neg;
    /// `|x|` (integers wrap on the most negative value).
    abs => Abs;
    /// `e^x`.
    exp => Exp;
    /// The natural logarithm.
    log => Log;
    /// The square root.
    sqrt => Sqrt;
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt;
    /// The hyperbolic tangent.
    tanh => Tanh;
    /// `1 / (1 + e^-x)`.
    sigmoid => Sigmoid;
    /// `x · sigmoid(x)`.
    silu => Silu;
    /// GELU, the erf form.
    gelu => Gelu;
    /// GELU, the tanh approximation.
    gelu_tanh => GeluTanh;
    /// `max(x, 0)`; NaN stays NaN.
    relu => Relu;
    /// The sine.
    sin => Sin;
    /// The cosine.
    cos => Cos;
    /// The tangent.
    tan => Tan;
    /// The inverse sine.
    asin => Asin;
    /// The inverse cosine.
    acos => Acos;
    /// The inverse tangent.
    atan => Atan;
    /// The hyperbolic sine.
    sinh => Sinh;
    /// The hyperbolic cosine.
    cosh => Cosh;
    /// The inverse hyperbolic sine.
    asinh => Asinh;
    /// The inverse hyperbolic cosine.
    acosh => Acosh;
    /// The inverse hyperbolic tangent.
    atanh => Atanh;
    /// `e^x - 1`, accurate near 0.
    expm1 => Expm1;
    /// `ln(1 + x)`, accurate near 0.
    log1p => Log1p;
    /// The base-2 logarithm.
    log2 => Log2;
    /// The base-10 logarithm.
    log10 => Log10;
    /// `1 / x`.
    reciprocal => Reciprocal;
    /// `x · x` (integers wrap).
    square => Square;
    /// -1, 0 or 1; NaN stays NaN.
    sign => Sign;
    /// Rounded toward -∞ (integers unchanged).
    floor => Floor;
    /// Rounded toward +∞ (integers unchanged).
    ceil => Ceil;
    /// Rounded to nearest, half to even (integers unchanged).
    round => Round;
    /// Rounded toward 0 (integers unchanged).
    trunc => Trunc;
    /// Whether each element is NaN (bool).
    isnan => Isnan;
    /// Whether each element is infinite (bool).
    isinf => Isinf;
    /// Whether each element is finite (bool).
    isfinite => Isfinite;
    /// Whether each element's sign bit is set (bool).
    signbit => Signbit;
    /// Not x (any dtype read as bool: nonzero is true).
    logical_not => LogicalNot;
    /// `~x`, the bits flipped (integers and bool).
    bitwise_invert => BitwiseInvert;
    /// The real part (of the part's dtype for a complex tensor; x for a real one).
    real => Real;
    /// The imaginary part (of the part's dtype for a complex tensor; zeros for a real one).
    imag => Imag;
    /// The complex conjugate (x for a real tensor).
    conj => Conj;
}

binary_methods! {
    /// `self + other`, broadcast and promoted (integers wrap).
    add => Add;
    /// `self - other`, broadcast and promoted (integers wrap).
    sub => Sub;
    /// `self · other`, broadcast and promoted (integers wrap).
    mul => Mul;
    /// `self / other`, true division (integers divided as float32).
    div => Div;
    /// `self` to the power `other`.
    pow => Pow;
    /// The larger of the two; NaN when either is NaN.
    maximum => Maximum;
    /// The smaller of the two; NaN when either is NaN.
    minimum => Minimum;
    /// `self mod other`, the sign of `other` (Python's `%`).
    remainder => Remainder;
    /// `floor(self / other)` (Python's `//`).
    floor_divide => FloorDivide;
    /// The angle of the point `(other, self)`.
    atan2 => Atan2;
    /// `|self|` with the sign of `other`.
    copysign => Copysign;
    /// `sqrt(self² + other²)`.
    hypot => Hypot;
    /// `ln(e^self + e^other)`.
    logaddexp => Logaddexp;
    /// The next value of the dtype after `self` toward `other`.
    nextafter => Nextafter;
    /// `silu(self) · other`, rounded once.
    silu_mul => SiluMul;
    /// `self == other` (bool).
    eq => Eq;
    /// `self != other` (bool).
    ne => Ne;
    /// `self < other` (bool).
    lt => Lt;
    /// `self <= other` (bool).
    le => Le;
    /// `self > other` (bool).
    gt => Gt;
    /// `self >= other` (bool).
    ge => Ge;
    /// `self and other` (read as bool).
    logical_and => LogicalAnd;
    /// `self or other` (read as bool).
    logical_or => LogicalOr;
    /// `self xor other` (read as bool).
    logical_xor => LogicalXor;
    /// `self & other`.
    bitwise_and => BitwiseAnd;
    /// `self | other`.
    bitwise_or => BitwiseOr;
    /// `self ^ other`.
    bitwise_xor => BitwiseXor;
    /// `self << other`.
    bitwise_left_shift => BitwiseLeftShift;
    /// `self >> other` (the sign kept).
    bitwise_right_shift => BitwiseRightShift;
}

impl Tensor {
    /// The 1-d tensor `start + step · i` for `i` in `0..n`, of `dtype`, made on `device`:
    /// floats computed in float64 and rounded once (numpy's arange), integers in 64-bit
    /// wrapping arithmetic (their start and step must be integers).
    pub fn iota(n: i64, start: impl Into<Term>, step: impl Into<Term>, dtype: DType, device: Device) -> Result<Tensor> {
        Ok(one(run_on(device, Iota::new(dtype, n, start.into(), step.into())?, &[])?))
    }

    /// The elements converted to `dtype` (see `ops::spec::cast`); a tensor of that dtype
    /// already is returned as it is.
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        Ok(one(run(Cast::new(self.dtype(), dtype)?, &[self])?))
    }

    /// The elements clamped to `[min, max]` (either bound optional); NaN stays NaN.
    pub fn clip(&self, min: Option<f64>, max: Option<f64>) -> Result<Tensor> {
        Ok(one(apply("clip", &[self], |dtype| Unary::clip(dtype, min, max))?))
    }

    /// `a` where `self` (bool) is true, else `b`, the three broadcast, `a` and `b` promoted; a
    /// condition of another dtype is refused by name (it is not read as bool).
    pub fn if_else<'a>(&'a self, a: impl Into<Operand<'a>>, b: impl Into<Operand<'a>>) -> Result<Tensor> {
        if self.dtype() != DType::Bool {
            return Err(KernelError::Invalid(format!(
                "where: the condition is {}, not bool: compare it first (e.g. `x != 0`)",
                self.dtype()
            )));
        }
        let operands = promote("where", &[a.into(), b.into()])?;
        Ok(one(run(Where, &[self, &operands[0], &operands[1]])?))
    }

    /// The tensor with `value` where the bool `mask` is true (broadcast); the value is fitted
    /// to the tensor's dtype.
    pub fn masked_fill(&self, mask: &Tensor, value: impl Into<Scalar>) -> Result<Tensor> {
        let value = value.into();
        Ok(one(apply("masked_fill", &[self, mask], |dtype| MaskedFill::new(dtype, value))?))
    }

    /// The reduction `op` over `axes` (`None`: every axis; argmax and argmin take one); mean
    /// reads integers as float32, sum and prod read bool as int64 (numpy's).
    pub fn reduce(&self, op: ReduceOp, axes: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
        let x = match op {
            ReduceOp::Mean => float_input("mean", self)?,
            ReduceOp::Sum | ReduceOp::Prod if self.dtype() == DType::Bool => cast_to(self, DType::Int64)?,
            _ => self.clone(),
        };
        let axes = axes.map(<[i64]>::to_vec);
        Ok(one(apply(op.name(), &[&x], |dtype| Reduce::new(op, dtype, axes, keepdim))?))
    }

    /// The sum over `axes` (negatives from the end): floats in float64, rounded once; signed
    /// integers to int64, unsigned to uint64 (wrapping).
    pub fn sum(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, Some(axes), keepdim)
    }

    /// The sum of every element.
    pub fn sum_all(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Sum, None, false)
    }

    /// The product over `axes` (negatives from the end): floats in float64, rounded once;
    /// signed integers (and bool) to int64, unsigned to uint64 (wrapping).
    pub fn prod(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Prod, Some(axes), keepdim)
    }

    /// Whether every element over `axes` is nonzero (bool; true over no elements).
    pub fn all(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::All, Some(axes), keepdim)
    }

    /// Whether any element over `axes` is nonzero (bool; false over no elements).
    pub fn any(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Any, Some(axes), keepdim)
    }

    /// The mean over `axes` (float64 accumulation; integers read as float32).
    pub fn mean(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Mean, Some(axes), keepdim)
    }

    /// The mean of every element.
    pub fn mean_all(&self) -> Result<Tensor> {
        self.reduce(ReduceOp::Mean, None, false)
    }

    /// The maximum over `axes`; NaN when one is NaN.
    pub fn max(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Max, Some(axes), keepdim)
    }

    /// The minimum over `axes`; NaN when one is NaN.
    pub fn min(&self, axes: &[i64], keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::Min, Some(axes), keepdim)
    }

    /// The int64 index of the first maximum along `axis` (a NaN counts as the maximum).
    pub fn argmax(&self, axis: i64, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::ArgMax, Some(&[axis]), keepdim)
    }

    /// The int64 index of the first minimum along `axis` (a NaN counts as the minimum).
    pub fn argmin(&self, axis: i64, keepdim: bool) -> Result<Tensor> {
        self.reduce(ReduceOp::ArgMin, Some(&[axis]), keepdim)
    }

    /// The running reduction `op` along `axis` (bool read as int64, as the sum reads it); with
    /// `include_initial` the output starts with the identity and is one longer along `axis`.
    pub fn scan(&self, op: ScanOp, axis: i64, include_initial: bool) -> Result<Tensor> {
        let x = if self.dtype() == DType::Bool { cast_to(self, DType::Int64)? } else { self.clone() };
        Ok(one(apply(op.name(), &[&x], |dtype| Scan::new(op, dtype, axis, include_initial))?))
    }

    /// The running sum along `axis` (the sum's dtype: floats rounded once from float64,
    /// integers and bool widened to 64 bits, wrapping); see [`Tensor::scan`].
    pub fn cumulative_sum(&self, axis: i64, include_initial: bool) -> Result<Tensor> {
        self.scan(ScanOp::Sum, axis, include_initial)
    }

    /// The running product along `axis` (as [`Tensor::cumulative_sum`]).
    pub fn cumulative_prod(&self, axis: i64, include_initial: bool) -> Result<Tensor> {
        self.scan(ScanOp::Prod, axis, include_initial)
    }

    /// The values sorted along `axis`, stable (equal values keep their order); NaN counts as
    /// the largest (last ascending, first descending).
    pub fn sort(&self, axis: i64, descending: bool) -> Result<Tensor> {
        Ok(one(run(Sort::new(false, self.dtype(), axis, descending)?, &[self])?))
    }

    /// The int64 positions that sort the values along `axis` (as [`Tensor::sort`]).
    pub fn argsort(&self, axis: i64, descending: bool) -> Result<Tensor> {
        Ok(one(run(Sort::new(true, self.dtype(), axis, descending)?, &[self])?))
    }

    /// For each of `values` (any shape; promoted with this sorted 1-d tensor to one dtype), the
    /// int64 count of elements before it: below it, or with `right` not above it (numpy's
    /// `searchsorted` sides), NaN counting as the largest.
    pub fn searchsorted(&self, values: &Tensor, right: bool) -> Result<Tensor> {
        let operands = promote("searchsorted", &[self.into(), values.into()])?;
        Ok(one(run(SearchSorted::new(operands[0].dtype(), right)?, &[&operands[0], &operands[1]])?))
    }

    /// `exp(x - max) / sum(exp(x - max))` along `axis` (integers read as float32).
    pub fn softmax(&self, axis: i64) -> Result<Tensor> {
        let x = float_input("softmax", self)?;
        Ok(one(apply("softmax", &[&x], |dtype| Ok(Softmax { log: false, dtype, axis }))?))
    }

    /// `x - max - log(sum(exp(x - max)))` along `axis` (integers read as float32).
    pub fn log_softmax(&self, axis: i64) -> Result<Tensor> {
        let x = float_input("log_softmax", self)?;
        Ok(one(apply("log_softmax", &[&x], |dtype| Ok(Softmax { log: true, dtype, axis }))?))
    }

    /// `(x - mean) / sqrt(var + eps) · weight + bias` over the last dim.
    pub fn layer_norm(&self, weight: &Tensor, bias: &Tensor, eps: f64) -> Result<Tensor> {
        Ok(one(apply("layer_norm", &[self, weight, bias], |dtype| Norm::new(true, dtype, eps))?))
    }

    /// `x / sqrt(mean(x²) + eps) · weight` over the last dim.
    pub fn rms_norm(&self, weight: &Tensor, eps: f64) -> Result<Tensor> {
        Ok(one(apply("rms_norm", &[self, weight], |dtype| Norm::new(false, dtype, eps))?))
    }

    /// `(self + residual, rms_norm(self + residual, weight, eps))` in one pass: the sum
    /// rounded to the dtype as `add` rounds it, and its norm over the last dim, bit for bit
    /// those of `add` then `rms_norm` (a decoder layer's residual add and the next norm).
    pub fn add_rms_norm(&self, residual: &Tensor, weight: &Tensor, eps: f64) -> Result<(Tensor, Tensor)> {
        let mut out =
            apply("add_rms_norm", &[self, residual, weight], |dtype| Norm::with_residual(dtype, eps))?.into_iter();
        Ok((next_output("add_rms_norm", &mut out)?, next_output("add_rms_norm", &mut out)?))
    }

    /// `(self + residual, layer_norm(self + residual, weight, bias, eps))` in one pass: the
    /// sum rounded to the dtype as `add` rounds it, and its norm over the last dim, bit for bit
    /// those of `add` then `layer_norm` (an encoder layer's residual add and its norm).
    pub fn add_layer_norm(
        &self,
        residual: &Tensor,
        weight: &Tensor,
        bias: &Tensor,
        eps: f64,
    ) -> Result<(Tensor, Tensor)> {
        let inputs = [self, residual, weight, bias];
        let mut out = apply("add_layer_norm", &inputs, |dtype| Norm::layer_with_residual(dtype, eps))?.into_iter();
        Ok((next_output("add_layer_norm", &mut out)?, next_output("add_layer_norm", &mut out)?))
    }

    /// The rotary position embedding of `[..., heads, seq, head_dim]` by `cos` and `sin`
    /// (`[seq, head_dim / 2]`); pairs `(2i, 2i+1)` when `interleaved`, else `(i, i + d/2)`.
    pub fn rope(&self, cos: &Tensor, sin: &Tensor, interleaved: bool) -> Result<Tensor> {
        Ok(one(apply("rope", &[self, cos, sin], |dtype| Ok(Rope { dtype, interleaved }))?))
    }

    /// numpy's matmul (batch dims broadcast, 1-d operands as vectors), both operands
    /// promoted to one dtype (float64 and the integers on the host: integers wrap).
    pub fn matmul(&self, other: &Tensor) -> Result<Tensor> {
        let operands = promote("matmul", &[self.into(), other.into()])?;
        Ok(one(apply("matmul", &[&operands[0], &operands[1]], |dtype| Product::matmul(dtype, false, false))?))
    }

    /// `self · weightᵀ + bias` with `weight [out, in]` and an optional `bias [out]`.
    pub fn linear(&self, weight: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let inputs: Vec<&Tensor> = std::iter::once(self).chain(std::iter::once(weight)).chain(bias).collect();
        Ok(one(apply("linear", &inputs, Product::linear)?))
    }

    /// The float32 weight `[N, K]` laid out for [`Tensor::linear_packed`]: panels of
    /// [`PANEL`](super::spec::matmul::PANEL) output columns, `[⌈N / PANEL⌉, K, PANEL]`.
    pub fn pack_linear(&self) -> Result<Tensor> {
        Ok(one(run(PackLinear, &[self])?))
    }

    /// `self · weightᵀ + bias` on float32, the weight `[features, in]` as
    /// [`Tensor::pack_linear`] laid it out (`panels`), an optional `bias [features]`.
    pub fn linear_packed(&self, panels: &Tensor, bias: Option<&Tensor>, features: usize) -> Result<Tensor> {
        let inputs: Vec<&Tensor> = [self, panels].into_iter().chain(bias).collect();
        Ok(one(run(LinearPacked { features }, &inputs)?))
    }

    /// The outputs of the factorization or solver `op` on this stack of matrices (float32 or
    /// float64: another dtype is refused by name, as the Array API defines them on floats).
    pub fn linalg(&self, op: LinalgOp) -> Result<Vec<Tensor>> {
        run(Linalg::new(op, self.dtype())?, &[self])
    }

    /// The Cholesky factor of these symmetric positive definite matrices: lower L with
    /// A = L·Lᵀ, or with `upper` U with A = Uᵀ·U.
    pub fn cholesky(&self, upper: bool) -> Result<Tensor> {
        Ok(one(self.linalg(LinalgOp::Cholesky { upper })?))
    }

    /// The QR factorization `(Q, R)`: Q `(..., M, K)` with orthonormal columns and upper
    /// triangular R `(..., K, N)`; with `complete` Q `(..., M, M)` and R `(..., M, N)`.
    pub fn qr(&self, complete: bool) -> Result<(Tensor, Tensor)> {
        let mut out = self.linalg(LinalgOp::Qr { complete })?.into_iter();
        Ok((next_output("qr", &mut out)?, next_output("qr", &mut out)?))
    }

    /// The singular value decomposition `(U, S, Vh)`, A = U·diag(S)·Vh, S largest first;
    /// `full_matrices`: U `(..., M, M)`, Vh `(..., N, N)`, else `(..., M, K)` and `(..., K, N)`.
    pub fn svd(&self, full_matrices: bool) -> Result<(Tensor, Tensor, Tensor)> {
        let mut out = self.linalg(LinalgOp::Svd { full_matrices })?.into_iter();
        Ok((next_output("svd", &mut out)?, next_output("svd", &mut out)?, next_output("svd", &mut out)?))
    }

    /// The singular values `(..., K)`, largest first.
    pub fn svdvals(&self) -> Result<Tensor> {
        Ok(one(self.linalg(LinalgOp::Svdvals)?))
    }

    /// The eigenvalues (ascending) and eigenvectors (the columns) of these symmetric matrices,
    /// read from their lower triangles.
    pub fn eigh(&self) -> Result<(Tensor, Tensor)> {
        let mut out = self.linalg(LinalgOp::Eigh)?.into_iter();
        Ok((next_output("eigh", &mut out)?, next_output("eigh", &mut out)?))
    }

    /// The eigenvalues (ascending) of these symmetric matrices (their lower triangles).
    pub fn eigvalsh(&self) -> Result<Tensor> {
        Ok(one(self.linalg(LinalgOp::Eigvalsh)?))
    }

    /// The solution X of A·X = B with A these square matrices (`(..., M, M)`) and B `(..., M,
    /// R)`, the batches broadcast, or B `(M,)` one vector for every A (the Array API's rule: a
    /// 1-d B is a vector); the two promoted to one dtype. A singular A is refused by name.
    pub fn solve(&self, b: &Tensor) -> Result<Tensor> {
        let operands = promote("solve", &[self.into(), b.into()])?;
        let (a, b) = (&operands[0], &operands[1]);
        let spec = Linalg::new(LinalgOp::Solve, a.dtype())?;
        if b.ndim() == 1 {
            return Ok(one(run(spec, &[a, &b.unsqueeze(-1)?])?).squeeze(Some(-1))?);
        }
        Ok(one(run(spec, &[a, b])?))
    }

    /// The inverses of these square matrices (a singular one refused by name).
    pub fn inv(&self) -> Result<Tensor> {
        Ok(one(self.linalg(LinalgOp::Inv)?))
    }

    /// The determinants `(...)` of these square matrices.
    pub fn det(&self) -> Result<Tensor> {
        Ok(one(self.linalg(LinalgOp::Det)?))
    }

    /// The sign and the natural log of the absolute value of the determinants, `(sign,
    /// logabsdet)`: (0, −inf) for a singular matrix.
    pub fn slogdet(&self) -> Result<(Tensor, Tensor)> {
        let mut out = self.linalg(LinalgOp::Slogdet)?.into_iter();
        Ok((next_output("slogdet", &mut out)?, next_output("slogdet", &mut out)?))
    }

    /// Scaled dot-product attention with `self` as the queries `[b, hq, sq, d]`, keys
    /// `[b, hk, sk, d]`, values `[b, hk, sk, dv]`, an optional additive `mask`, causal masking
    /// aligned bottom-right, and `scale` (`None`: `1/sqrt(d)`).
    pub fn sdpa(
        &self,
        k: &Tensor,
        v: &Tensor,
        mask: Option<&Tensor>,
        causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let inputs: Vec<&Tensor> = [self, k, v].into_iter().chain(mask).collect();
        Ok(one(apply("sdpa", &inputs, |dtype| Ok(Sdpa { dtype, causal, scale }))?))
    }

    /// Attention of the queries `self` `[b, hq, sq ≤ 8, d]` over the first `length` rows of
    /// the caches `k_cache [b, hk, T, d]` and `v_cache [b, hk, T, dv]`; `length` an int32 or
    /// int64 tensor `[]`, `[1]` or `[b]` on the caches' device (one captured program serves
    /// every length); `causal`: query `i` sees keys below `length − sq + 1 + i`.
    pub fn decode_attention(
        &self,
        k_cache: &Tensor,
        v_cache: &Tensor,
        length: &Tensor,
        causal: bool,
        scale: Option<f64>,
    ) -> Result<Tensor> {
        let spec = DecodeAttention { dtype: self.dtype(), causal, scale };
        Ok(one(run(spec, &[self, k_cache, v_cache, length])?))
    }

    /// One token a row drawn from these logits `[..., vocab]` (int64, the leading dims):
    /// softmax(logits / `temperature`) restricted to the `top_k` largest (0: all) and to the
    /// heaviest tokens of mass `top_p` (1: all), from Philox word `position` (an int32 or int64
    /// `[]` or `[1]` tensor on the logits' device) of stream `row` of `seed`. Every backend
    /// gives the same token from the same logits (`ops::spec::sample` defines each step).
    pub fn sample(&self, position: &Tensor, temperature: f64, top_k: usize, top_p: f64, seed: u64) -> Result<Tensor> {
        let spec = Sample::new(self.dtype(), temperature, top_k, top_p, seed)?;
        Ok(one(run(spec, &[self, position])?))
    }

    /// Writes `new [b, h, s, d]` into this cache `[b, h, T, d]` at rows `position ..
    /// position + s`, in place (`position`: int32 or int64, `[]`, `[1]` or `[b]`, on the
    /// cache's device). The host refuses a position past the end; a GPU skips the rows that
    /// would fall outside the cache.
    pub fn kv_cache_write(&self, new: &Tensor, position: &Tensor) -> Result<()> {
        run(KvCacheWrite { dtype: self.dtype() }, &[self, new, position])?;
        Ok(())
    }

    /// Writes `value` (broadcast to this tensor's shape, converted to its dtype by `cast`)
    /// into this tensor in place, through its layout: what `t[key] = value` runs on the view
    /// `t[key]`. A value sharing this tensor's memory is copied first (numpy's rule for
    /// overlapping assignments); a read-only or broadcast destination is refused.
    pub fn assign(&self, value: &Tensor) -> Result<()> {
        let mut value = if value.device() == self.device() { value.clone() } else { value.to(self.device())? };
        if value.dtype() != self.dtype() {
            value = value.cast(self.dtype())?;
        }
        if Arc::ptr_eq(value.storage(), self.storage()) {
            value = one(run(Copy { dtype: value.dtype() }, &[&value])?);
        }
        run(Assign { dtype: self.dtype() }, &[self, &value])?;
        Ok(())
    }

    /// `self · Wᵀ` with `W` packed in the int4-g128-asym layout (`packed`, `scales`, `minima`).
    pub fn matmul_int4(&self, packed: &Tensor, scales: &Tensor, minima: &Tensor) -> Result<Tensor> {
        let layout = Int4Layout::of_table("matmul_int4")?;
        Ok(one(apply("matmul_int4", &[self, packed, scales, minima], |dtype| Ok(MatmulInt4 { dtype, layout }))?))
    }

    /// The weight `[N, K]` quantized into the int4-g128-asym layout: `(packed, scales, minima)`.
    pub fn pack_int4(&self) -> Result<(Tensor, Tensor, Tensor)> {
        let layout = Int4Layout::of_table("pack_int4")?;
        let mut out = run(PackInt4 { dtype: self.dtype(), layout }, &[self])?.into_iter();
        match (out.next(), out.next(), out.next()) {
            (Some(p), Some(s), Some(m)) => Ok((p, s, m)),
            _ => Err(KernelError::Invalid("pack_int4: gave fewer than three outputs".into())),
        }
    }

    /// `self · Wᵀ (+ bias)` for float32 `self`, with `W` in the int8-g64 layout (`codes`,
    /// `scales` from [`Tensor::pack_int8`]), each row of `self` quantized to 8 bits on the fly
    /// but for its elements past [`MatmulInt8::THRESHOLD`] in magnitude, kept float32.
    pub fn matmul_int8(&self, codes: &Tensor, scales: &Tensor, bias: Option<&Tensor>) -> Result<Tensor> {
        let layout = Int8Layout::of_table("matmul_int8")?;
        let inputs: Vec<&Tensor> = [self, codes, scales].into_iter().chain(bias).collect();
        Ok(one(run(MatmulInt8 { layout, threshold: MatmulInt8::THRESHOLD }, &inputs)?))
    }

    /// The weight `[N, K]` quantized into the int8-g64 layout: `(codes, scales)`, as
    /// [`Tensor::matmul_int8`] reads them.
    pub fn pack_int8(&self) -> Result<(Tensor, Tensor)> {
        let layout = Int8Layout::of_table("pack_int8")?;
        let mut out = run(PackInt8 { dtype: self.dtype(), layout }, &[self])?.into_iter();
        match (out.next(), out.next()) {
            (Some(codes), Some(scales)) => Ok((codes, scales)),
            _ => Err(KernelError::Invalid("pack_int8: gave fewer than two outputs".into())),
        }
    }

    /// The rows of `table [V, D]` at these indices (int32 or int64): `[*self.shape, D]`.
    pub fn embedding(&self, table: &Tensor) -> Result<Tensor> {
        Ok(one(run(Embedding { dtype: self.dtype() }, &[self, table])?))
    }

    /// The entries at the 1-d `indices` along `axis`.
    pub fn index_select(&self, indices: &Tensor, axis: i64) -> Result<Tensor> {
        Ok(one(run(IndexSelect { dtype: self.dtype(), axis }, &[self, indices])?))
    }

    /// The entries at integer `indices` of any shape along `axis`, negatives counting from
    /// the end: `[*before, *indices.shape, *after]` (numpy's `take`; an integer-array index).
    /// The indices are made int32/int64 by the `cast` op and wrapped by `lt`/`add`/`where`,
    /// then gathered by `index_select`, which refuses one out of range by its position.
    pub fn take(&self, indices: &Tensor, axis: i64) -> Result<Tensor> {
        let axis = resolve_axis("take", axis, self.ndim())?;
        let index_dtype = match indices.dtype() {
            DType::Int32 | DType::Int64 => indices.dtype(),
            DType::Int8 | DType::Int16 | DType::Uint8 | DType::Uint16 | DType::Uint32 => DType::Int64,
            other => {
                return Err(KernelError::Invalid(format!("take: indices must be integers that fit int64, got {other}")))
            }
        };
        let mut flat = indices.to(self.device())?;
        if flat.dtype() != index_dtype {
            flat = flat.cast(index_dtype)?;
        }
        let flat = match flat.reshape(&[-1]) {
            Ok(view) => view,
            Err(_) => one(run(Copy { dtype: index_dtype }, &[&flat])?).reshape(&[-1])?,
        };
        let size = self.shape()[axis];
        let wrapped = flat.lt(0)?.if_else(&flat.add(size)?, &flat)?;
        let picked = self.index_select(&wrapped, axis as i64)?;
        let mut shape = self.shape()[..axis].to_vec();
        shape.extend_from_slice(indices.shape());
        shape.extend_from_slice(&self.shape()[axis + 1..]);
        Ok(picked.reshape(&shape)?)
    }

    /// The entries where the bool `mask` is true; the mask covers dims `axis..axis +
    /// mask.ndim` (of the same extents), which become one dim of the true count, in row-major
    /// order (numpy's boolean-mask index). That count decides the output's shape, so the mask
    /// is read on the host first (on a GPU a wait for the work queued, as torch's); the
    /// entries are then gathered by `index_select`.
    pub fn select_mask(&self, mask: &Tensor, axis: i64) -> Result<Tensor> {
        if mask.dtype() != DType::Bool {
            return Err(KernelError::Invalid(format!("mask index: the mask is {}, not bool", mask.dtype())));
        }
        let axis = resolve_axis("mask index", axis, self.ndim() + 1)?;
        let covered = self.shape().get(axis..axis + mask.ndim());
        if covered != Some(mask.shape()) {
            return Err(KernelError::Invalid(format!(
                "mask index: a mask of shape {:?} does not match dims {axis}.. of a tensor of shape {:?}",
                mask.shape(),
                self.shape()
            )));
        }
        let positions: Vec<i64> =
            mask.to_bytes()?.iter().enumerate().filter(|(_, &b)| b != 0).map(|(i, _)| i as i64).collect();
        let count = positions.len() as i64;
        let mut flat_shape = self.shape()[..axis].to_vec();
        flat_shape.push(mask.numel());
        flat_shape.extend_from_slice(&self.shape()[axis + mask.ndim()..]);
        let flat = match self.reshape(&flat_shape) {
            Ok(view) => view,
            Err(_) => one(run(Copy { dtype: self.dtype() }, &[self])?).reshape(&flat_shape)?,
        };
        let indices = Tensor::from_vec(positions, &[count])?.to(self.device())?;
        flat.index_select(&indices, axis as i64)
    }

    /// `tensors` joined along `axis`, promoted to one dtype.
    pub fn concat(tensors: &[&Tensor], axis: i64) -> Result<Tensor> {
        let operands: Vec<Operand<'_>> = tensors.iter().map(|t| Operand::Tensor(t)).collect();
        let promoted = promote("concat", &operands)?;
        let refs: Vec<&Tensor> = promoted.iter().map(|t| &**t).collect();
        let dtype = refs.first().map(|t| t.dtype()).unwrap_or(DType::Float32);
        Ok(one(run(Concat { dtype, axis }, &refs)?))
    }
}

/// `axis` (negatives from the end) as an index below `places`; refused naming `op`.
fn resolve_axis(op: &str, axis: i64, places: usize) -> Result<usize> {
    let resolved = if axis < 0 { axis + places as i64 } else { axis };
    if resolved < 0 || resolved >= places as i64 {
        return Err(KernelError::Invalid(format!("{op}: axis {axis} is out of range for {places} places")));
    }
    Ok(resolved as usize)
}

#[cfg(test)]
mod tests {
    use crate::{DType, Tensor};

    #[test]
    fn take_and_select_mask_index_as_numpy() {
        let x = Tensor::from_vec((0..12).map(|v| v as i32).collect(), &[3, 4]).unwrap();
        let idx = Tensor::from_vec(vec![-1i64, 0, 2, 2], &[2, 2]).unwrap();
        let taken = x.take(&idx, 1).unwrap();
        assert_eq!(taken.shape(), &[3, 2, 2]);
        assert_eq!(taken.to_vec::<i32>().unwrap(), vec![3, 0, 2, 2, 7, 4, 6, 6, 11, 8, 10, 10]);
        let rows = x.take(&Tensor::from_vec(vec![2u8, 0], &[2]).unwrap(), 0).unwrap();
        assert_eq!(rows.to_vec::<i32>().unwrap(), vec![8, 9, 10, 11, 0, 1, 2, 3]);
        assert!(x.take(&Tensor::from_vec(vec![3i64], &[1]).unwrap(), 0).is_err(), "out of range");
        assert!(x.take(&Tensor::from_vec(vec![-4i64], &[1]).unwrap(), 0).is_err(), "out of range from the end");
        // a mask over dim 0 (a strided view): the rows whose first entry is above 3
        let mask = x.select(1, 0).unwrap().gt(3).unwrap();
        let picked = x.select_mask(&mask, 0).unwrap();
        assert_eq!(picked.shape(), &[2, 4]);
        assert_eq!(picked.to_vec::<i32>().unwrap(), (4..12).collect::<Vec<i32>>());
        let all = x.select_mask(&x.ge(10).unwrap(), 0).unwrap();
        assert_eq!(all.to_vec::<i32>().unwrap(), vec![10, 11]);
        // a transposed tensor is flattened by a copy first
        let t = x.transpose(0, 1).unwrap();
        let odd = t.select_mask(&t.remainder(2).unwrap().eq(1).unwrap(), 0).unwrap();
        assert_eq!(odd.to_vec::<i32>().unwrap(), vec![1, 5, 9, 3, 7, 11]);
        assert!(x.select_mask(&x.gt(1).unwrap().select(0, 0).unwrap(), 0).is_err(), "shape mismatch");
    }

    #[test]
    fn promotion_is_the_array_apis_with_weak_scalars() {
        let i = Tensor::from_vec(vec![1i32, -2], &[2]).unwrap();
        let f = Tensor::from_vec(vec![0.25f32, 0.5], &[2]).unwrap();
        assert_eq!(i.add(&f).unwrap().dtype(), DType::Float32);
        assert_eq!(i.mul(3).unwrap().to_vec::<i32>().unwrap(), vec![3, -6]);
        // a Python float with an integer tensor: float64 (NEP 50)
        assert_eq!(i.add(0.5).unwrap().to_vec::<f64>().unwrap(), vec![1.5, -1.5]);
        let h = f.cast(DType::Float16).unwrap();
        assert_eq!(h.mul(2.0).unwrap().dtype(), DType::Float16);
        let err = Tensor::from_vec(vec![1u8], &[1]).unwrap().add(300).unwrap_err().to_string();
        assert!(err.contains("300 does not fit uint8"), "{err}");
    }

    #[test]
    fn float_only_ops_read_integers_as_float32() {
        let i = Tensor::from_vec(vec![0i64, 1], &[2]).unwrap();
        let e = i.exp().unwrap();
        assert_eq!((e.dtype(), e.to_vec::<f32>().unwrap()), (DType::Float32, vec![1.0, 1.0f32.exp()]));
        assert_eq!(i.div(2).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.5]);
        assert_eq!(i.logical_not().unwrap().to_bytes().unwrap(), vec![1, 0]);
        assert_eq!(i.mean_all().unwrap().to_vec::<f32>().unwrap(), vec![0.5]);
    }
}
