//! The shape layer (being written).

/// Why a shape operation was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A dim below zero.
    #[error("negative dim {0}")]
    NegativeDim(i64),
}

/// Strides of a contiguous row-major layout, in elements.
pub fn contiguous_strides(shape: &[i64]) -> Result<Vec<i64>, ShapeError> {
    let mut strides = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        strides[i] = strides[i + 1] * shape[i + 1].max(1);
    }
    Ok(strides)
}
