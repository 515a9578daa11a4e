//! Gathers, byte-exact on every dtype with a per-element width:
//!
//! - `embedding(indices, table)`: the rows of `table [V, D]` at `indices` (int32 or int64,
//!   any shape) → `[*indices.shape, D]`; dispatched on the indices' dtype;
//! - `index_select(x, indices)` (attribute `axis`, required): the entries of `x` at the 1-d
//!   `indices` along `axis`;
//! - `concat(inputs..)` (attribute `axis`, default 0): any number of inputs of one dtype
//!   joined along `axis`.
//!
//! Every index is checked against its range by the kernel before anything is written; a bad
//! one is refused with its position, its value and the range.

use super::{axis_of, require_dtype, sized, AttrDoc, OpDef, Spec, INDEX_DTYPES};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

fn index_dtype(op: &str, meta: &TensorMeta) -> Result<()> {
    if INDEX_DTYPES.contains(&meta.dtype) {
        Ok(())
    } else {
        Err(invalid(format!("{op}: indices must be int32 or int64, got {}", meta.dtype)))
    }
}

/// `embedding(indices, table)`, dispatched on the indices' dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Embedding {
    /// The indices' dtype.
    pub dtype: DType,
}

impl Spec for Embedding {
    fn op(&self) -> &'static str {
        "embedding"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        "embedding".into()
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [indices, table] = inputs else {
            return Err(invalid(format!("embedding: takes 2 inputs (indices, table), got {}", inputs.len())));
        };
        index_dtype("embedding", indices)?;
        if table.shape.len() != 2 {
            return Err(invalid(format!("embedding: table must be 2-d [V, D], got {:?}", table.shape)));
        }
        table.dtype.itemsize().map_err(|e| invalid(format!("embedding: {e}")))?;
        let mut shape = indices.shape.clone();
        shape.push(table.shape[1]);
        let out = TensorMeta::new(table.dtype, &shape);
        let read = indices.bytes()?.saturating_add(out.bytes()?);
        Cost::simple(vec![out], read, 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `index_select(x, indices)` along one axis, dispatched on x's dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexSelect {
    /// x's dtype.
    pub dtype: DType,
    /// The axis (negatives from the end).
    pub axis: i64,
}

impl IndexSelect {
    /// The axis resolved for `x`, and the output's shape.
    pub fn out_shape(&self, x: &TensorMeta, indices: &TensorMeta) -> Result<(usize, Vec<i64>)> {
        index_dtype("index_select", indices)?;
        if indices.shape.len() != 1 {
            return Err(invalid(format!("index_select: indices must be 1-d, got {:?}", indices.shape)));
        }
        let axis = axis_of("index_select", self.axis, x.shape.len())?;
        let mut shape = x.shape.clone();
        shape[axis] = indices.shape[0];
        Ok((axis, shape))
    }
}

impl Spec for IndexSelect {
    fn op(&self) -> &'static str {
        "index_select"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("index_select:axis{}", self.axis)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [x, indices] = inputs else {
            return Err(invalid(format!("index_select: takes 2 inputs (x, indices), got {}", inputs.len())));
        };
        let (_, shape) = self.out_shape(x, indices)?;
        let out = TensorMeta::new(x.dtype, &shape);
        let read = indices.bytes()?.saturating_add(out.bytes()?);
        Cost::simple(vec![out], read, 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// `concat(inputs..)` along one axis.
#[derive(Clone, Debug, PartialEq)]
pub struct Concat {
    /// The inputs' dtype.
    pub dtype: DType,
    /// The axis (negatives from the end).
    pub axis: i64,
}

impl Concat {
    /// The axis resolved for the inputs, and the output's shape; inputs of another dtype, or
    /// that disagree outside the axis, are refused by position.
    pub fn out_shape(&self, inputs: &[TensorMeta]) -> Result<(usize, Vec<i64>)> {
        let first = inputs.first().ok_or_else(|| invalid("concat: takes at least one input".into()))?;
        if first.shape.is_empty() {
            return Err(invalid("concat: inputs must have at least one dim, got a 0-d tensor".into()));
        }
        let axis = axis_of("concat", self.axis, first.shape.len())?;
        let mut shape = first.shape.clone();
        shape[axis] = 0;
        for (i, meta) in inputs.iter().enumerate() {
            if meta.dtype != first.dtype {
                return Err(invalid(format!("concat: input {i} is {}, input 0 is {}", meta.dtype, first.dtype)));
            }
            let agrees = meta.shape.len() == first.shape.len()
                && meta.shape.iter().zip(&first.shape).enumerate().all(|(d, (a, b))| d == axis || a == b);
            if !agrees {
                return Err(invalid(format!(
                    "concat: input {i} {:?} does not match input 0 {:?} outside axis {axis}",
                    meta.shape, first.shape
                )));
            }
            shape[axis] = shape[axis].checked_add(meta.shape[axis]).ok_or_else(|| {
                invalid(format!("concat: the inputs' extents along axis {axis} add up past 2^63 - 1"))
            })?;
        }
        Ok((axis, shape))
    }
}

impl Spec for Concat {
    fn op(&self) -> &'static str {
        "concat"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("concat:axis{}", self.axis)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let (_, shape) = self.out_shape(inputs)?;
        let out = TensorMeta::new(inputs[0].dtype, &shape);
        let read = out.bytes()?;
        Cost::simple(vec![out], read, 0)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_embedding(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("embedding", &[])?;
    require_dtype("embedding", dtype, &INDEX_DTYPES)?;
    Ok(Arc::new(Embedding { dtype }))
}

fn bind_index_select(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("index_select", &["axis"])?;
    require_dtype("index_select", dtype, sized())?;
    Ok(Arc::new(IndexSelect { dtype, axis: attrs.int("index_select", "axis", None)? }))
}

fn bind_concat(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("concat", &["axis"])?;
    require_dtype("concat", dtype, sized())?;
    Ok(Arc::new(Concat { dtype, axis: attrs.int("concat", "axis", Some(0))? }))
}

/// The gathers' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const AXIS: &[AttrDoc] = &[AttrDoc { name: "axis", meaning: "the axis (negatives from the end)", default: None }];
    const CONCAT_AXIS: &[AttrDoc] =
        &[AttrDoc { name: "axis", meaning: "the axis joined along (negatives from the end)", default: Some("0") }];
    ops.push(OpDef {
        name: "embedding",
        family: "gather",
        summary: "the rows of table at indices",
        inputs: &["indices", "table"],
        attrs: &[],
        dtypes: |_| &INDEX_DTYPES,
        bind: bind_embedding,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "index_select",
        family: "gather",
        summary: "the entries of x at the 1-d indices along axis",
        inputs: &["x", "indices"],
        attrs: AXIS,
        dtypes: |_| sized(),
        bind: bind_index_select,
        follows_policy: true,
    });
    ops.push(OpDef {
        name: "concat",
        family: "gather",
        summary: "the inputs joined along axis",
        inputs: &["inputs*"],
        attrs: CONCAT_AXIS,
        dtypes: |_| sized(),
        bind: bind_concat,
        follows_policy: true,
    });
}
