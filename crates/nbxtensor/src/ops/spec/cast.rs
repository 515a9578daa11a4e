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
//!
//! `assign` writes its second input, broadcast to the first's shape, into the first in place
//! (any layout: a view of a larger tensor, negative strides, … — what `t[key] = value` runs).
//! It has no output; it updates input 0 (declared in [`Cost::updates`]). The two share one
//! dtype (the caller casts); the destination must be writable and its elements distinct
//! (no stride 0 over an extent above 1), and the source must not share its memory (the caller
//! copies such a source first, as numpy does for overlapping assignments).

use super::{one_input, require_dtype, sized, AttrDoc, OpDef, Spec};
use crate::dtype::convert::Fp8Format;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use crate::tensor::Tensor;
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

/// `assign` of one dtype: the source, broadcast, written into the destination in place.
#[derive(Clone, Debug, PartialEq)]
pub struct Assign {
    /// The dtype of both.
    pub dtype: DType,
}

impl Assign {
    /// The value's strides (of its shape `value`) broadcast to the destination's shape `dst`;
    /// refused naming both shapes when they do not fit.
    pub fn value_strides(dst: &[i64], value: &[i64], strides: &[i64]) -> Result<Vec<i64>> {
        crate::shape::broadcast_strides(value, strides, dst).map_err(|e| {
            KernelError::Invalid(format!(
                "assign: the value {value:?} does not broadcast to the destination {dst:?}: {e}"
            ))
        })
    }

    /// What every backend checks of its operands before writing: a writable destination
    /// whose elements are distinct (no stride 0 over an extent above 1), and a value that does
    /// not share its memory.
    pub fn check_layouts(dst: &Tensor, src: &Tensor) -> Result<()> {
        if dst.is_read_only() {
            return Err(KernelError::Invalid("assign: the destination is read-only".into()));
        }
        if dst.shape().iter().zip(dst.strides()).any(|(&extent, &stride)| extent > 1 && stride == 0) {
            return Err(KernelError::Invalid(format!(
                "assign: the destination (shape {:?}, strides {:?}) repeats elements (a broadcast view): it cannot be written",
                dst.shape(),
                dst.strides()
            )));
        }
        if Arc::ptr_eq(dst.storage(), src.storage()) {
            return Err(KernelError::Invalid(
                "assign: the value shares the destination's memory (copy it first)".into(),
            ));
        }
        Ok(())
    }

    fn operands<'a>(&self, inputs: &'a [TensorMeta]) -> Result<(&'a TensorMeta, &'a TensorMeta)> {
        let [dst, src] = inputs else {
            return Err(KernelError::Invalid(format!(
                "assign: takes 2 inputs (destination, value), got {}",
                inputs.len()
            )));
        };
        if dst.dtype != self.dtype || src.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "assign: the destination and the value must share the op's dtype {}, got {} and {}",
                self.dtype, dst.dtype, src.dtype
            )));
        }
        Ok((dst, src))
    }
}

impl Spec for Assign {
    fn op(&self) -> &'static str {
        "assign"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("assign:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (dst, src) = self.operands(inputs)?;
        // the broadcast is checked on shapes alone (contiguous strides stand in for the layout)
        let strides =
            crate::shape::contiguous_strides(&src.shape).map_err(|e| KernelError::Invalid(format!("assign: {e}")))?;
        Assign::value_strides(&dst.shape, &src.shape, &strides)?;
        let mut cost = Cost::simple(Vec::new(), src.bytes()?, 0)?;
        cost.bytes_written = dst.bytes()?;
        cost.updates = vec![0];
        Ok(cost)
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

fn bind_assign(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("assign", &[])?;
    require_dtype("assign", dtype, sized())?;
    Ok(Arc::new(Assign { dtype }))
}

/// The cast, copy and assign entries in the catalogue.
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
    ops.push(OpDef {
        name: "assign",
        family: "cast",
        summary: "value (broadcast) written into dst in place",
        inputs: &["dst", "value"],
        attrs: &[],
        dtypes: |_| sized(),
        bind: bind_assign,
        follows_policy: false,
    });
}
