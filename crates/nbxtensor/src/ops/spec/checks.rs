//! Checks the specs share: input counts, dtypes, broadcasting, axes.

use crate::dtype::DType;
use crate::kernel::{KernelError, Result, TensorMeta};
use crate::shape;

/// The one input of `op`, of `dtype`; refused naming the op otherwise.
pub fn one_input<'a>(op: &str, dtype: DType, inputs: &'a [TensorMeta]) -> Result<&'a TensorMeta> {
    let [input] = inputs else {
        return Err(KernelError::Invalid(format!("{op}: takes one input, got {}", inputs.len())));
    };
    if input.dtype != dtype {
        return Err(KernelError::Invalid(format!("{op}: input is {}, the op was bound to {dtype}", input.dtype)));
    }
    Ok(input)
}

/// Refuses operands of `op` that are not all of `dtype`, naming the first that is not.
pub fn same_dtype(op: &str, dtype: DType, operands: &[&TensorMeta]) -> Result<()> {
    if let Some(other) = operands.iter().find(|m| m.dtype != dtype) {
        let dtypes: Vec<&str> = operands.iter().map(|m| m.dtype.name()).collect();
        return Err(KernelError::Invalid(format!(
            "{op}: operands are {}, the op was bound to {dtype} (got {}); cast them to one dtype first",
            dtypes.join(" and "),
            other.dtype
        )));
    }
    Ok(())
}

/// The shape `op`'s operands broadcast to; refused naming the op and the shapes.
pub fn broadcast_shape(op: &str, inputs: &[&TensorMeta]) -> Result<Vec<i64>> {
    let shapes: Vec<&[i64]> = inputs.iter().map(|m| m.shape.as_slice()).collect();
    shape::broadcast_shapes(&shapes).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))
}

/// `axis` (negatives from the end) as an index into `ndim` dims; refused out of range.
pub fn axis_of(op: &str, axis: i64, ndim: usize) -> Result<usize> {
    let n = ndim as i64;
    let resolved = if axis < 0 { axis + n } else { axis };
    if resolved < 0 || resolved >= n {
        return Err(KernelError::Invalid(format!("{op}: axis {axis} is out of range for {ndim} dims")));
    }
    Ok(resolved as usize)
}
