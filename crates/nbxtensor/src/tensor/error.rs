//! The error of the tensor layer.

use crate::dtype::DTypeError;
use crate::memory::MemoryError;
use crate::shape::ShapeError;

/// Why a tensor could not be made, viewed or copied. Each message names the operation and
/// the operand at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TensorError {
    /// A view the layout does not allow, or an argument out of range.
    #[error("{0}")]
    Invalid(String),
    /// A reshape with no view: the data must be copied first.
    #[error("{0}")]
    CopyFirst(String),
    /// A write to a tensor whose producer marked it read-only.
    #[error("{0}")]
    ReadOnly(String),
    /// From the dtype layer.
    #[error(transparent)]
    DType(#[from] DTypeError),
    /// From the shape layer.
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// From the memory layer.
    #[error(transparent)]
    Memory(#[from] MemoryError),
}
