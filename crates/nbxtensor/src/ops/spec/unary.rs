//! Unary elementwise ops: one element in, one element out, of the input's shape.
//!
//! On the floats (float32, float16 and bfloat16 computed in float32; float64 in float64):
//! every op. On the integers, the ops that keep integers integers: neg and square wrap (numpy:
//! `-(-128)` is `-128` in int8), abs wraps on the most negative value and is the identity on
//! the unsigned, relu clamps, sign gives -1, 0 or 1, the roundings are the identity, the
//! tests give their constant answers (an integer is never NaN or infinite), bitwise_invert
//! flips the bits. On bool: logical_not and bitwise_invert. isnan, isinf, isfinite and signbit
//! give bool; every other op gives its input's dtype.
//!
//! On complex64 and complex128 (each part float32 or float64): neg, abs (|z|, of the part's
//! dtype), exp, log, sqrt, the trigonometric and hyperbolic functions and their inverses, expm1,
//! log1p, log2, log10, reciprocal, square, sign (`z / |z|`, 0 for 0), round (each part), the
//! tests (isnan and isinf: either part; isfinite: both), real, imag (of the part's dtype) and
//! conj. Their branch cuts and special values are C99's (Annex G), as the Array API states them.
//! real, imag and conj also take the real numbers: real and conj give x, imag gives zeros.
//!
//! `round` rounds half to even (numpy, the Array API). `clip` takes the attributes `min` and
//! `max` (each optional, a number): NaN stays NaN, and an integer bound must fit the dtype.

use super::{require_dtype, AttrDoc, OpDef, Spec, REALS};
use crate::dtype::promotion::complex_part;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{AttrValue, Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// sqrt(2/π), the scale of the tanh approximation of GELU (`gelu_tanh`).
pub const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh approximation of GELU (Hendrycks & Gimpel, 2016).
pub const GELU_CUBIC: f64 = 0.044_715;

/// Which dtypes an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    /// The floats only.
    Floats,
    /// The floats and the complex dtypes.
    Inexact,
    /// The floats and the integers.
    Numbers,
    /// The floats, the integers and the complex dtypes.
    Arithmetic,
    /// The integers and bool.
    Bits,
    /// bool only.
    Bool,
}

/// Every unary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`.
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x`.
    Exp,
    /// The natural logarithm.
    Log,
    /// The square root.
    Sqrt,
    /// `1 / sqrt(x)`.
    Rsqrt,
    /// The hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
    /// `x · sigmoid(x)`.
    Silu,
    /// GELU, the erf form `x Φ(x)`.
    Gelu,
    /// GELU, the tanh approximation.
    GeluTanh,
    /// `max(x, 0)`; NaN stays NaN.
    Relu,
    /// The sine.
    Sin,
    /// The cosine.
    Cos,
    /// The tangent.
    Tan,
    /// The inverse sine.
    Asin,
    /// The inverse cosine.
    Acos,
    /// The inverse tangent.
    Atan,
    /// The hyperbolic sine.
    Sinh,
    /// The hyperbolic cosine.
    Cosh,
    /// The inverse hyperbolic sine.
    Asinh,
    /// The inverse hyperbolic cosine.
    Acosh,
    /// The inverse hyperbolic tangent.
    Atanh,
    /// `e^x - 1`, accurate near 0.
    Expm1,
    /// `ln(1 + x)`, accurate near 0.
    Log1p,
    /// The base-2 logarithm.
    Log2,
    /// The base-10 logarithm.
    Log10,
    /// `1 / x`.
    Reciprocal,
    /// `x · x`.
    Square,
    /// -1, 0 or 1 (NaN stays NaN; the sign of zero is kept).
    Sign,
    /// Rounded toward -∞.
    Floor,
    /// Rounded toward +∞.
    Ceil,
    /// Rounded to nearest, half to even.
    Round,
    /// Rounded toward 0.
    Trunc,
    /// Whether x is NaN.
    Isnan,
    /// Whether x is infinite.
    Isinf,
    /// Whether x is neither NaN nor infinite.
    Isfinite,
    /// Whether the sign bit is set (-0.0 and -NaN included).
    Signbit,
    /// Not x (bool).
    LogicalNot,
    /// The bits of x flipped (`~x`).
    BitwiseInvert,
    /// x clamped to `[min, max]` (attributes).
    Clip,
    /// The real part (x itself for a real number).
    Real,
    /// The imaginary part (0 for a real number).
    Imag,
    /// The complex conjugate (x itself for a real number).
    Conj,
}

/// Each op: its name, its operations per element (a transcendental function counts one), the
/// dtypes it takes, and what it computes.
const OPS: [(UnaryOp, &str, u64, Takes, &str); 44] = [
    (UnaryOp::Neg, "neg", 1, Takes::Arithmetic, "-x (integers wrap)"),
    (UnaryOp::Abs, "abs", 1, Takes::Arithmetic, "|x| (integers wrap on the most negative value)"),
    (UnaryOp::Exp, "exp", 1, Takes::Inexact, "e^x"),
    (UnaryOp::Log, "log", 1, Takes::Inexact, "the natural logarithm"),
    (UnaryOp::Sqrt, "sqrt", 1, Takes::Inexact, "the square root"),
    (UnaryOp::Rsqrt, "rsqrt", 2, Takes::Floats, "1 / sqrt(x)"),
    (UnaryOp::Tanh, "tanh", 1, Takes::Inexact, "the hyperbolic tangent"),
    (UnaryOp::Sigmoid, "sigmoid", 4, Takes::Floats, "1 / (1 + e^-x)"),
    (UnaryOp::Silu, "silu", 5, Takes::Floats, "x · sigmoid(x)"),
    (UnaryOp::Gelu, "gelu", 5, Takes::Floats, "GELU, the erf form: x/2 · (1 + erf(x/√2))"),
    (UnaryOp::GeluTanh, "gelu_tanh", 10, Takes::Floats, "GELU, the tanh approximation"),
    (UnaryOp::Relu, "relu", 1, Takes::Numbers, "max(x, 0); NaN stays NaN"),
    (UnaryOp::Sin, "sin", 1, Takes::Inexact, "the sine"),
    (UnaryOp::Cos, "cos", 1, Takes::Inexact, "the cosine"),
    (UnaryOp::Tan, "tan", 1, Takes::Inexact, "the tangent"),
    (UnaryOp::Asin, "asin", 1, Takes::Inexact, "the inverse sine"),
    (UnaryOp::Acos, "acos", 1, Takes::Inexact, "the inverse cosine"),
    (UnaryOp::Atan, "atan", 1, Takes::Inexact, "the inverse tangent"),
    (UnaryOp::Sinh, "sinh", 1, Takes::Inexact, "the hyperbolic sine"),
    (UnaryOp::Cosh, "cosh", 1, Takes::Inexact, "the hyperbolic cosine"),
    (UnaryOp::Asinh, "asinh", 1, Takes::Inexact, "the inverse hyperbolic sine"),
    (UnaryOp::Acosh, "acosh", 1, Takes::Inexact, "the inverse hyperbolic cosine"),
    (UnaryOp::Atanh, "atanh", 1, Takes::Inexact, "the inverse hyperbolic tangent"),
    (UnaryOp::Expm1, "expm1", 1, Takes::Inexact, "e^x - 1, accurate near 0"),
    (UnaryOp::Log1p, "log1p", 1, Takes::Inexact, "ln(1 + x), accurate near 0"),
    (UnaryOp::Log2, "log2", 1, Takes::Inexact, "the base-2 logarithm"),
    (UnaryOp::Log10, "log10", 1, Takes::Inexact, "the base-10 logarithm"),
    (UnaryOp::Reciprocal, "reciprocal", 1, Takes::Inexact, "1 / x"),
    (UnaryOp::Square, "square", 1, Takes::Arithmetic, "x · x (integers wrap)"),
    (UnaryOp::Sign, "sign", 1, Takes::Arithmetic, "-1, 0 or 1; NaN stays NaN"),
    (UnaryOp::Floor, "floor", 1, Takes::Numbers, "rounded toward -inf"),
    (UnaryOp::Ceil, "ceil", 1, Takes::Numbers, "rounded toward +inf"),
    (UnaryOp::Round, "round", 1, Takes::Arithmetic, "rounded to nearest, half to even"),
    (UnaryOp::Trunc, "trunc", 1, Takes::Numbers, "rounded toward 0"),
    (UnaryOp::Isnan, "isnan", 1, Takes::Arithmetic, "whether x is NaN (bool)"),
    (UnaryOp::Isinf, "isinf", 1, Takes::Arithmetic, "whether x is infinite (bool)"),
    (UnaryOp::Isfinite, "isfinite", 1, Takes::Arithmetic, "whether x is finite (bool)"),
    (UnaryOp::Signbit, "signbit", 1, Takes::Floats, "whether the sign bit of x is set (bool)"),
    (UnaryOp::LogicalNot, "logical_not", 1, Takes::Bool, "not x (bool)"),
    (UnaryOp::BitwiseInvert, "bitwise_invert", 1, Takes::Bits, "~x, the bits flipped"),
    (UnaryOp::Clip, "clip", 2, Takes::Numbers, "x clamped to [min, max]; NaN stays NaN"),
    (UnaryOp::Real, "real", 0, Takes::Arithmetic, "the real part (x for a real number)"),
    (UnaryOp::Imag, "imag", 0, Takes::Arithmetic, "the imaginary part (0 for a real number)"),
    (UnaryOp::Conj, "conj", 1, Takes::Arithmetic, "the complex conjugate (x for a real number)"),
];

impl UnaryOp {
    /// Every unary op, in the catalogue's order.
    pub fn all() -> impl Iterator<Item = UnaryOp> {
        OPS.iter().map(|entry| entry.0)
    }

    fn entry(self) -> &'static (UnaryOp, &'static str, u64, Takes, &'static str) {
        OPS.iter().find(|entry| entry.0 == self).expect("every unary op has an entry")
    }

    /// The op's name.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The op of a name.
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        OPS.iter().find(|entry| entry.1 == name).map(|entry| entry.0)
    }

    /// The dtypes it takes.
    pub fn dtypes(self) -> &'static [DType] {
        match self.entry().3 {
            Takes::Floats => &REALS,
            Takes::Inexact => &super::INEXACT,
            Takes::Numbers => &super::NUMBERS,
            Takes::Arithmetic => &super::ARITHMETIC,
            Takes::Bits => &super::BITS,
            Takes::Bool => &[DType::Bool],
        }
    }

    /// The dtype of its output on an input of `dtype` (bool for the tests; the part's dtype
    /// for abs, real and imag of a complex input).
    pub fn output_dtype(self, dtype: DType) -> Result<DType> {
        match self {
            UnaryOp::Isnan | UnaryOp::Isinf | UnaryOp::Isfinite | UnaryOp::Signbit => Ok(DType::Bool),
            UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag if dtype.kind() == Kind::Complex => {
                complex_part(dtype).map_err(|e| KernelError::Invalid(format!("{}: {e}", self.name())))
            }
            _ => Ok(dtype),
        }
    }
}

/// A bound for `clip`: absent, or a number of the input's kind.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// No bound on this side.
    None,
    /// A float bound (float dtypes).
    Float(f64),
    /// An integer bound that fits the integer dtype.
    Int(i64),
}

/// A unary op on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Unary {
    /// The op.
    pub op: UnaryOp,
    /// The input's dtype.
    pub dtype: DType,
    /// `clip`'s lower bound (`Bound::None` for the other ops).
    pub min: Bound,
    /// `clip`'s upper bound.
    pub max: Bound,
}

impl Unary {
    /// `op` on `dtype` (not `clip`, which takes bounds: [`Unary::clip`]); refused where the op
    /// does not take the dtype.
    pub fn new(op: UnaryOp, dtype: DType) -> Result<Unary> {
        require_dtype(op.name(), dtype, &op.dtypes())?;
        if op == UnaryOp::Clip {
            return Err(KernelError::Invalid("clip: takes its bounds (Unary::clip)".into()));
        }
        Ok(Unary { op, dtype, min: Bound::None, max: Bound::None })
    }

    /// `clip` of `dtype` to `[min, max]` (either may be absent): a float bound on an integer
    /// dtype, an integer bound outside the dtype's range, NaN, or `min > max` are refused.
    pub fn clip(dtype: DType, min: Option<f64>, max: Option<f64>) -> Result<Unary> {
        require_dtype("clip", dtype, &UnaryOp::Clip.dtypes())?;
        let bound = |value: Option<f64>, side: &str| -> Result<Bound> {
            let Some(v) = value else { return Ok(Bound::None) };
            if v.is_nan() {
                return Err(KernelError::Invalid(format!("clip: the {side} bound is NaN")));
            }
            if dtype.is_float() {
                return Ok(Bound::Float(v));
            }
            let range = crate::dtype::promotion::integer_range(dtype)
                .ok_or_else(|| KernelError::Invalid(format!("clip: {dtype} has no integer range")))?;
            if v.fract() != 0.0 || (v as i128) < range.0 || (v as i128) > range.1 || v.abs() >= 9.3e18 {
                return Err(KernelError::Invalid(format!("clip: the {side} bound {v} is not a {dtype} value")));
            }
            Ok(Bound::Int(v as i64))
        };
        let (low, high) = (bound(min, "min")?, bound(max, "max")?);
        if let (Some(a), Some(b)) = (min, max) {
            if a > b {
                return Err(KernelError::Invalid(format!("clip: min {a} is above max {b}")));
            }
        }
        Ok(Unary { op: UnaryOp::Clip, dtype, min: low, max: high })
    }
}

impl Spec for Unary {
    fn op(&self) -> &'static str {
        self.op.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let bound = |b: Bound| match b {
            Bound::None => "none".to_string(),
            Bound::Float(v) => format!("{v:e}"),
            Bound::Int(v) => v.to_string(),
        };
        match self.op {
            UnaryOp::Clip => {
                format!("clip:{}:min={}:max={}", self.dtype.launch_key(), bound(self.min), bound(self.max))
            }
            op => format!("{}:{}", op.name(), self.dtype.launch_key()),
        }
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = super::one_input(self.op.name(), self.dtype, inputs)?;
        let output = TensorMeta::new(self.op.output_dtype(self.dtype)?, &input.shape);
        let flops = super::flops_of(self.dtype, input.numel()?, self.op.entry().2);
        let same_width = output.dtype.itemsize().ok() == input.dtype.itemsize().ok();
        let mut cost = Cost::simple(vec![output], input.bytes()?, flops)?;
        if same_width {
            cost.in_place = vec![(0, 0)];
        }
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A number attribute of clip: an int or a float, or absent.
fn number(op: &str, attrs: &Attrs, name: &str) -> Result<Option<f64>> {
    match attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| v) {
        None => Ok(None),
        Some(AttrValue::Int(v)) => Ok(Some(*v as f64)),
        Some(AttrValue::Float(v)) => Ok(Some(*v)),
        Some(other) => Err(KernelError::Invalid(format!("{op}: attribute '{name}' must be a number, got {other:?}"))),
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = UnaryOp::from_name(name).ok_or_else(|| KernelError::Invalid(format!("{name}: not a unary op")))?;
    if op == UnaryOp::Clip {
        attrs.only(name, &["min", "max"])?;
        return Ok(Arc::new(Unary::clip(dtype, number(name, attrs, "min")?, number(name, attrs, "max")?)?));
    }
    attrs.only(name, &[])?;
    Ok(Arc::new(Unary::new(op, dtype)?))
}

/// The unary ops' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    for &(op, name, _, _, summary) in &OPS {
        const CLIP: &[AttrDoc] = &[
            AttrDoc { name: "min", meaning: "the lower bound (a number; absent: none)", default: Some("none") },
            AttrDoc { name: "max", meaning: "the upper bound (a number; absent: none)", default: Some("none") },
        ];
        ops.push(OpDef {
            name,
            family: "unary",
            summary,
            inputs: &["x"],
            attrs: if op == UnaryOp::Clip { CLIP } else { &[] },
            dtypes: |name| UnaryOp::from_name(name).map(UnaryOp::dtypes).unwrap_or_default(),
            bind,
            follows_policy: true,
        });
    }
}
