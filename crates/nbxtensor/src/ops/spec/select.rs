//! Selection with numpy broadcasting: `where(cond, a, b)` (a where cond is true, else b) and
//! `masked_fill(x, mask, value)` (value where mask is true, else x).
//!
//! `where` is dispatched on its condition (bool) and selects elements of any dtype of 1, 2, 4
//! or 8 bytes (complex128 is refused by name). `masked_fill` takes the floats, the integers
//! and bool; its `value` attribute is fitted to the dtype once, when the op is bound, by the
//! policy's fill rule ([`crate::dtype::policy::fill_value`]: a float beyond the finite range
//! clamps to it, an integer clamps to the dtype's range, a fraction or NaN for an integer
//! dtype is refused).

use super::{broadcast_shape, require_dtype, AttrDoc, OpDef, Spec, EVERYTHING};
use crate::dtype::policy::{fill_value, FillValue};
use crate::dtype::promotion::PyScalar;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{AttrValue, Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// The dtype whose bit patterns `where` copies for elements of `dtype`: the unsigned integer
/// of its width, and for 16 bytes (complex128, wider than every integer) complex128 itself.
pub fn bits_dtype(op: &str, dtype: DType) -> Result<DType> {
    let width = dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    DType::ALL
        .iter()
        .copied()
        .find(|d| d.kind() == Kind::Uint && d.itemsize().ok() == Some(width))
        .or_else(|| (DType::Complex128.itemsize().ok() == Some(width)).then_some(DType::Complex128))
        .ok_or_else(|| KernelError::Invalid(format!("{op}: {dtype} elements ({width} bytes) cannot be selected")))
}

/// `where(cond, a, b)`, dispatched on the bool condition.
#[derive(Clone, Debug, PartialEq)]
pub struct Where;

impl Spec for Where {
    fn op(&self) -> &'static str {
        "where"
    }

    fn dtype(&self) -> DType {
        DType::Bool
    }

    fn key(&self) -> String {
        format!("where:{}", DType::Bool.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [cond, a, b] = inputs else {
            return Err(KernelError::Invalid(format!("where: takes three inputs (cond, a, b), got {}", inputs.len())));
        };
        if cond.dtype != DType::Bool {
            return Err(KernelError::Invalid(format!("where: the condition is {}, not bool", cond.dtype)));
        }
        if a.dtype != b.dtype {
            return Err(KernelError::Invalid(format!(
                "where: operands are {} and {}; cast them to one dtype first",
                a.dtype, b.dtype
            )));
        }
        bits_dtype("where", a.dtype)?;
        let shape = broadcast_shape("where", &[cond, a, b])?;
        let out = TensorMeta::new(a.dtype, &shape);
        Cost::simple(vec![out], cond.bytes()?.saturating_add(a.bytes()?).saturating_add(b.bytes()?), 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `masked_fill(x, mask)` of one dtype, with its fill value fitted to the dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct MaskedFill {
    /// x's dtype.
    pub dtype: DType,
    /// The value written where the mask is true.
    pub value: FillValue,
}

impl MaskedFill {
    /// `masked_fill` of `dtype` writing `value` (fitted to the dtype; refused where it cannot be).
    pub fn new(dtype: DType, value: PyScalar) -> Result<MaskedFill> {
        require_dtype("masked_fill", dtype, &EVERYTHING)?;
        let value = fill_value("masked_fill", value, dtype).map_err(|e| KernelError::Invalid(e.to_string()))?;
        Ok(MaskedFill { dtype, value })
    }
}

impl Spec for MaskedFill {
    fn op(&self) -> &'static str {
        "masked_fill"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("masked_fill:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [x, mask] = inputs else {
            return Err(KernelError::Invalid(format!("masked_fill: takes two inputs (x, mask), got {}", inputs.len())));
        };
        if x.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "masked_fill: x is {}, the op was bound to {}",
                x.dtype, self.dtype
            )));
        }
        if mask.dtype != DType::Bool {
            return Err(KernelError::Invalid(format!("masked_fill: the mask is {}, not bool", mask.dtype)));
        }
        let shape = broadcast_shape("masked_fill", &[x, mask])?;
        let out = TensorMeta::new(self.dtype, &shape);
        let mut cost = Cost::simple(vec![out], x.bytes()?.saturating_add(mask.bytes()?), 0)?;
        if x.shape == shape {
            cost.in_place = vec![(0, 0)];
        }
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_where(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("where", &[])?;
    require_dtype("where", dtype, &[DType::Bool])?;
    Ok(Arc::new(Where))
}

fn bind_masked_fill(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("masked_fill", &["value"])?;
    let scalar = match attrs.iter().find(|(name, _)| *name == "value").map(|(_, v)| v) {
        Some(AttrValue::Int(v)) => PyScalar::Int(i128::from(*v)),
        Some(AttrValue::Bool(v)) => PyScalar::Bool(*v),
        _ => PyScalar::Float(attrs.float("masked_fill", "value", None)?),
    };
    Ok(Arc::new(MaskedFill::new(dtype, scalar)?))
}

/// The selection ops' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    ops.push(OpDef {
        name: "where",
        family: "select",
        summary: "a where the bool cond is true, else b, broadcast",
        inputs: &["cond", "a", "b"],
        attrs: &[],
        dtypes: |_| &[DType::Bool],
        bind: bind_where,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "masked_fill",
        family: "select",
        summary: "x with value where the bool mask is true, broadcast",
        inputs: &["x", "mask"],
        attrs: &[AttrDoc { name: "value", meaning: "the value written (fitted to x's dtype)", default: None }],
        dtypes: |_| &EVERYTHING,
        bind: bind_masked_fill,
        follows_policy: true,
    });
}
