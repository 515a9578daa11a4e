//! Binary elementwise ops with numpy broadcasting: both operands of the op's dtype
//! (promotion happens above, in the typed API), the output of their broadcast shape.
//!
//! - Arithmetic on the floats (float32, float16 and bfloat16 computed in float32; float64 in
//!   float64) and the integers: add, sub, mul wrap on the integers (numpy); maximum and minimum
//!   propagate NaN; remainder takes the sign of the divisor and floor_divide rounds toward
//!   -∞ (Python's `%` and `//`; with one float operand infinite floor_divide is `a / b`, the
//!   Array API's special cases); an integer divided by zero gives 0 for both (numpy); pow on
//!   the integers wraps, and a negative exponent gives the truncation of `1 / x^-n` (0 but for
//!   the bases 1 and -1).
//! - On the floats only: div (true division), atan2, copysign, hypot, logaddexp, nextafter
//!   (the next value of the stored dtype, so float16 and bfloat16 step by their own ulp) and
//!   silu_mul (`a · sigmoid(a) · b` computed in one pass and rounded once, where silu then mul
//!   round twice).
//! - Comparisons (eq, ne, lt, le, gt, ge) on every real number dtype and bool, to bool; NaN is
//!   unequal to everything.
//! - On complex64 and complex128: add, sub, mul (numpy's product of four real products), div
//!   (Smith's algorithm, as numpy), pow (numpy's rules: `z^0 = 1`, `0^w` 0 for a `w` of positive
//!   real part else NaN, small integer powers by repeated products, cpow otherwise), eq and ne (both
//!   parts equal).
//! - logical_and, logical_or, logical_xor on bool; bitwise_and, bitwise_or, bitwise_xor on
//!   the integers and bool; bitwise_left_shift and bitwise_right_shift on the integers (the
//!   right shift of a signed integer keeps its sign; a count past the width, or negative, shifts
//!   every bit out).

use super::{broadcast_shape, require_dtype, same_dtype, OpDef, Spec, INTEGERS, REALS};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// Which dtypes an op takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Takes {
    Floats,
    Inexact,
    Numbers,
    Arithmetic,
    Everything,
    EveryNumber,
    Bits,
    Integers,
    Bool,
}

impl Takes {
    fn dtypes(self) -> &'static [DType] {
        match self {
            Takes::Floats => &REALS,
            Takes::Inexact => &super::INEXACT,
            Takes::Numbers => &super::NUMBERS,
            Takes::Arithmetic => &super::ARITHMETIC,
            Takes::Everything => &super::EVERYTHING,
            Takes::EveryNumber => &super::EVERY_NUMBER,
            Takes::Bits => &super::BITS,
            Takes::Integers => &INTEGERS,
            Takes::Bool => &[DType::Bool],
        }
    }
}

/// Every binary op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a · b`.
    Mul,
    /// `a / b`, true division.
    Div,
    /// `a` to the power `b`.
    Pow,
    /// The larger; NaN when either is NaN.
    Maximum,
    /// The smaller; NaN when either is NaN.
    Minimum,
    /// `a - floor(a / b) · b`: the sign of the divisor (Python's `%`).
    Remainder,
    /// `floor(a / b)` (Python's `//`).
    FloorDivide,
    /// The angle of the point `(b, a)`.
    Atan2,
    /// `|a|` with the sign of `b`.
    Copysign,
    /// `sqrt(a² + b²)` without overflow on the way.
    Hypot,
    /// `ln(e^a + e^b)` without overflow on the way.
    Logaddexp,
    /// The next value of the dtype after `a` toward `b`.
    Nextafter,
    /// `silu(a) · b` (`a · sigmoid(a) · b`), rounded once: a gated MLP's two halves in one pass.
    SiluMul,
    /// `a == b`.
    Eq,
    /// `a != b`.
    Ne,
    /// `a < b`.
    Lt,
    /// `a <= b`.
    Le,
    /// `a > b`.
    Gt,
    /// `a >= b`.
    Ge,
    /// `a and b` (bool).
    LogicalAnd,
    /// `a or b` (bool).
    LogicalOr,
    /// `a xor b` (bool).
    LogicalXor,
    /// `a & b`.
    BitwiseAnd,
    /// `a | b`.
    BitwiseOr,
    /// `a ^ b`.
    BitwiseXor,
    /// `a << b`.
    BitwiseLeftShift,
    /// `a >> b` (arithmetic on the signed integers).
    BitwiseRightShift,
}

/// Each op: its name, the dtypes it takes, and what it computes.
const OPS: [(BinaryOp, &str, Takes, &str); 29] = [
    (BinaryOp::Add, "add", Takes::Arithmetic, "a + b, broadcast (integers wrap)"),
    (BinaryOp::Sub, "sub", Takes::Arithmetic, "a - b, broadcast (integers wrap)"),
    (BinaryOp::Mul, "mul", Takes::Arithmetic, "a * b, broadcast (integers wrap)"),
    (BinaryOp::Div, "div", Takes::Inexact, "a / b, broadcast: true division"),
    (BinaryOp::Pow, "pow", Takes::Arithmetic, "a to the power b, broadcast"),
    (BinaryOp::Maximum, "maximum", Takes::Numbers, "the larger of a and b; NaN when either is"),
    (BinaryOp::Minimum, "minimum", Takes::Numbers, "the smaller of a and b; NaN when either is"),
    (BinaryOp::Remainder, "remainder", Takes::Numbers, "a mod b with the sign of b (Python's %)"),
    (
        BinaryOp::FloorDivide,
        "floor_divide",
        Takes::Numbers,
        "floor(a / b) (Python's //; a / b when one operand is infinite)",
    ),
    (BinaryOp::Atan2, "atan2", Takes::Floats, "the angle of the point (b, a)"),
    (BinaryOp::Copysign, "copysign", Takes::Floats, "|a| with the sign of b"),
    (BinaryOp::Hypot, "hypot", Takes::Floats, "sqrt(a² + b²) without overflow"),
    (BinaryOp::Logaddexp, "logaddexp", Takes::Floats, "ln(e^a + e^b) without overflow"),
    (BinaryOp::Nextafter, "nextafter", Takes::Floats, "the next value of the dtype after a toward b"),
    (BinaryOp::SiluMul, "silu_mul", Takes::Floats, "silu(a) * b, rounded once (a gated MLP's product)"),
    (BinaryOp::Eq, "eq", Takes::EveryNumber, "a == b, as bool"),
    (BinaryOp::Ne, "ne", Takes::EveryNumber, "a != b, as bool (true where either is NaN)"),
    (BinaryOp::Lt, "lt", Takes::Everything, "a < b, as bool"),
    (BinaryOp::Le, "le", Takes::Everything, "a <= b, as bool"),
    (BinaryOp::Gt, "gt", Takes::Everything, "a > b, as bool"),
    (BinaryOp::Ge, "ge", Takes::Everything, "a >= b, as bool"),
    (BinaryOp::LogicalAnd, "logical_and", Takes::Bool, "a and b"),
    (BinaryOp::LogicalOr, "logical_or", Takes::Bool, "a or b"),
    (BinaryOp::LogicalXor, "logical_xor", Takes::Bool, "a xor b"),
    (BinaryOp::BitwiseAnd, "bitwise_and", Takes::Bits, "a & b"),
    (BinaryOp::BitwiseOr, "bitwise_or", Takes::Bits, "a | b"),
    (BinaryOp::BitwiseXor, "bitwise_xor", Takes::Bits, "a ^ b"),
    (BinaryOp::BitwiseLeftShift, "bitwise_left_shift", Takes::Integers, "a << b (bits shifted out are lost)"),
    (BinaryOp::BitwiseRightShift, "bitwise_right_shift", Takes::Integers, "a >> b (the sign kept)"),
];

impl BinaryOp {
    /// Every binary op, in the catalogue's order.
    pub fn all() -> impl Iterator<Item = BinaryOp> {
        OPS.iter().map(|entry| entry.0)
    }

    fn entry(self) -> &'static (BinaryOp, &'static str, Takes, &'static str) {
        OPS.iter().find(|entry| entry.0 == self).expect("every binary op has an entry")
    }

    /// The op's name.
    pub fn name(self) -> &'static str {
        self.entry().1
    }

    /// The op of a name.
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        OPS.iter().find(|entry| entry.1 == name).map(|entry| entry.0)
    }

    /// The dtypes it takes.
    pub fn dtypes(self) -> &'static [DType] {
        self.entry().2.dtypes()
    }

    /// Whether it is a comparison (its output is bool whatever its operands).
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge)
    }

    /// The dtype of its output on operands of `dtype`.
    pub fn output_dtype(self, dtype: DType) -> DType {
        if self.is_comparison() {
            DType::Bool
        } else {
            dtype
        }
    }
}

/// A binary op on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Binary {
    /// The op.
    pub op: BinaryOp,
    /// The operands' dtype.
    pub dtype: DType,
}

impl Binary {
    /// `op` on `dtype`; refused where the op does not take the dtype.
    pub fn new(op: BinaryOp, dtype: DType) -> Result<Binary> {
        require_dtype(op.name(), dtype, &op.dtypes())?;
        Ok(Binary { op, dtype })
    }
}

/// Checks that `op` has two operands of `dtype`; their broadcast shape.
pub fn check_pair(op: &str, dtype: DType, inputs: &[TensorMeta]) -> Result<Vec<i64>> {
    let [a, b] = inputs else {
        return Err(KernelError::Invalid(format!("{op}: takes two inputs, got {}", inputs.len())));
    };
    same_dtype(op, dtype, &[a, b])?;
    broadcast_shape(op, &[a, b])
}

impl Spec for Binary {
    fn op(&self) -> &'static str {
        self.op.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("{}:{}", self.op.name(), self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let shape = check_pair(self.op.name(), self.dtype, inputs)?;
        let out = TensorMeta::new(self.op.output_dtype(self.dtype), &shape);
        let flops = super::flops_of(self.dtype, out.numel()?, 1);
        let mut cost = Cost::simple(vec![out], inputs[0].bytes()?.saturating_add(inputs[1].bytes()?), flops)?;
        if !self.op.is_comparison() {
            // an operand of the output's shape is read at each position before it is written
            cost.in_place = (0..2).filter(|&k| inputs[k].shape == shape).map(|k| (k, 0)).collect();
        }
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = BinaryOp::from_name(name).ok_or_else(|| KernelError::Invalid(format!("{name}: not a binary op")))?;
    attrs.only(name, &[])?;
    Ok(Arc::new(Binary::new(op, dtype)?))
}

/// The binary ops' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    for &(_, name, _, summary) in &OPS {
        ops.push(OpDef {
            name,
            family: "binary",
            summary,
            inputs: &["a", "b"],
            attrs: &[],
            dtypes: |name| BinaryOp::from_name(name).map(BinaryOp::dtypes).unwrap_or_default(),
            bind,
            follows_policy: true,
        });
    }
}
