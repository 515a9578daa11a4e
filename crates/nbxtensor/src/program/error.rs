//! The error of the program layer.

use crate::kernel::KernelError;
use crate::memory::MemoryError;
use crate::tensor::TensorError;

/// Why a program could not be traced, planned, run or captured.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProgramError {
    /// A misuse: inputs of the wrong shape or dtype, a trace of nothing …
    #[error("{0}")]
    Invalid(String),
    /// The capture's first replay differed from the eager run.
    #[error("capture refused: launch {index} ({key}) wrote different bytes in the replay than in the eager run (output {output}, first difference at byte {byte})")]
    NotReproducible {
        /// The launch's index in the program.
        index: usize,
        /// Its kernel key.
        key: String,
        /// Which of its outputs.
        output: usize,
        /// The first differing byte.
        byte: usize,
    },
    /// From the kernel layer.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// From the memory layer (the arena over the limit …).
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// From the tensor layer.
    #[error(transparent)]
    Tensor(#[from] TensorError),
}
