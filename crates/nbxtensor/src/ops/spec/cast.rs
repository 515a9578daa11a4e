//! Casts and copies.
//!
//! `cast` converts between every dtype with a per-element width: bool, the integers, float16,
//! bfloat16, float32, float64, complex64, complex128 and both 8-bit floats. It is dispatched
//! on its input's dtype; the attribute `dtype` is the output's. Each pair takes one conversion:
//! - integer → integer wraps (two's complement truncation, numpy and Rust `as`);
//! - float → integer truncates toward zero; out of range saturates to the integer's end, NaN
//!   gives 0 (Rust `as`; numpy and torch leave these undefined);
//! - integer or float → float32/float64 rounds once to nearest even; float64 → float16 rounds
//!   once (numpy); integers, float64 → bfloat16 and the 8-bit floats go through float32 first,
//!   as torch and ml_dtypes do, with the dtype layer's conversions (`nbxtensor::dtype::convert`);
//!   the half and 8-bit floats widen exactly;
//! - anything → bool is `value != 0` (NaN is true); bool → anything is 0 or 1;
//! - real → complex has imaginary part 0; complex → complex casts both parts; complex → any
//!   real dtype is refused (take the real part explicitly).
//!
//! `copy` gathers any layout into a contiguous tensor of the same dtype (what `contiguous()`
//! launches when a layout is not contiguous, so a program records it).

use super::{one_input, require_dtype, sized, AttrDoc, OpDef, Spec};
use crate::dtype::convert::Fp8Format;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// `cast` from one dtype to another.
#[derive(Clone, Debug, PartialEq)]
pub struct Cast {
    /// The input's dtype.
    pub from: DType,
    /// The output's dtype.
    pub to: DType,
}

impl Cast {
    /// The cast from `from` to `to`; refused into a packed dtype and from complex to real.
    pub fn new(from: DType, to: DType) -> Result<Cast> {
        require_dtype("cast", from, sized())?;
        if to.kind() == Kind::Packed {
            return Err(KernelError::Invalid(format!("cast: {from} to {to}: {to} is packed; quantize it instead")));
        }
        if from.kind() == Kind::Complex && to.kind() != Kind::Complex {
            return Err(KernelError::Invalid(format!(
                "cast: {from} to {to} is refused: it would drop the imaginary part; take the real part explicitly"
            )));
        }
        for format in [DType::Float8E4m3fn, DType::Float8E5m2] {
            Fp8Format::of(format).map_err(|e| KernelError::Invalid(format!("cast: {e}")))?;
        }
        Ok(Cast { from, to })
    }
}

impl Spec for Cast {
    fn op(&self) -> &'static str {
        "cast"
    }

    fn dtype(&self) -> DType {
        self.from
    }

    fn key(&self) -> String {
        format!("cast:{}:{}", self.from.launch_key(), self.to.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = one_input("cast", self.from, inputs)?;
        let out = TensorMeta::new(self.to, &input.shape);
        let same_width = input.dtype.itemsize().ok() == self.to.itemsize().ok();
        let mut cost = Cost::simple(vec![out], input.bytes()?, input.numel()?)?;
        if same_width {
            cost.in_place = vec![(0, 0)];
        }
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `copy` of one dtype: any layout in, contiguous out.
#[derive(Clone, Debug, PartialEq)]
pub struct Copy {
    /// The dtype.
    pub dtype: DType,
}

impl Spec for Copy {
    fn op(&self) -> &'static str {
        "copy"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("copy:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = one_input("copy", self.dtype, inputs)?;
        Cost::simple(vec![input.clone()], input.bytes()?, 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_cast(_: &'static str, from: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("cast", &["dtype"])?;
    Ok(Arc::new(Cast::new(from, attrs.dtype("cast", "dtype")?)?))
}

fn bind_copy(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("copy", &[])?;
    require_dtype("copy", dtype, sized())?;
    Ok(Arc::new(Copy { dtype }))
}

/// The cast and copy entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    ops.push(OpDef {
        name: "cast",
        family: "cast",
        summary: "x converted to another dtype",
        inputs: &["x"],
        attrs: &[AttrDoc { name: "dtype", meaning: "the output's dtype", default: None }],
        dtypes: |_| sized(),
        bind: bind_cast,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "copy",
        family: "cast",
        summary: "x gathered into a contiguous tensor",
        inputs: &["x"],
        attrs: &[],
        dtypes: |_| sized(),
        bind: bind_copy,
        follows_policy: true,
    });
}
