//! Validation of shapes and layouts, shared by every function of the layer.

use super::error::tuple_text;
use super::ShapeError;

/// The element count of `shape`, after checking every dim is ≥ 0 and the count fits an `i64`.
///
/// A shape with a 0 dim has 0 elements whatever its other dims.
pub(crate) fn checked_numel(shape: &[i64]) -> Result<i64, ShapeError> {
    if let Some((axis, &dim)) = shape.iter().enumerate().find(|(_, &d)| d < 0) {
        return Err(ShapeError::NegativeDim { dim, axis, shape: tuple_text(shape) });
    }
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1i64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| ShapeError::Overflow { what: format!("the element count of {}", tuple_text(shape)) })
}

/// The element count of a layout, after checking its shape and that it has one stride per dim.
pub(crate) fn checked_layout(shape: &[i64], strides: &[i64]) -> Result<i64, ShapeError> {
    if strides.len() != shape.len() {
        return Err(ShapeError::StridesLength {
            strides: tuple_text(strides),
            strides_len: strides.len(),
            shape: tuple_text(shape),
            shape_len: shape.len(),
        });
    }
    checked_numel(shape)
}
