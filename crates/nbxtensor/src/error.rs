//! The crate-wide error: one variant per layer.

use crate::dtype::DTypeError;
use crate::facts::FactsError;
use crate::io::IoError;
use crate::kernel::KernelError;
use crate::memory::{MemoryError, PlanError};
use crate::program::ProgramError;
use crate::random::RandomError;
use crate::settings::SettingsError;
use crate::shape::ShapeError;
use crate::tensor::TensorError;

/// Any error of the crate, by the layer it comes from.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// From the dtype layer: an unknown name, a missing fact, a refused promotion …
    #[error(transparent)]
    DType(#[from] DTypeError),
    /// From the shape layer: a negative dim, an overflowing size, mismatched lengths …
    #[error(transparent)]
    Shape(#[from] ShapeError),
    /// From the settings layer: a refused setting, an unreadable machine file …
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// From the random layer: an empty range, a bad parameter …
    #[error(transparent)]
    Random(#[from] RandomError),
    /// From the memory layer: over the limit, an unknown device …
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// From the memory planner: a bad lifetime, an unknown in-place input, a bad alignment …
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// From the tensor layer: a refused view, a bad layout …
    #[error(transparent)]
    Tensor(#[from] TensorError),
    /// From the kernel layer: inputs that do not fit an op, a missing kernel …
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// From the program layer: a refused capture, inputs of the wrong shape …
    #[error(transparent)]
    Program(#[from] ProgramError),
    /// From the facts layer: an unknown vendor, device or device name, a missing device fact …
    #[error(transparent)]
    Facts(#[from] FactsError),
    /// From the io layer: a malformed file, a dtype the format lacks, a file-system failure …
    #[error(transparent)]
    Io(#[from] IoError),
}

/// A result whose error is the crate-wide [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
