//! The error of the models crate.

use nbxtensor::io::IoError;
use nbxtensor::kernel::KernelError;
use nbxtensor::program::ProgramError;
use nbxtensor::tensor::TensorError;

/// Why a model could not be loaded or run.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// A model directory or one of its files is missing, unreadable or malformed.
    #[error("{0}")]
    Files(String),
    /// A request the model cannot serve: a prompt token outside the vocabulary, a context
    /// longer than the model's positions or its caches.
    #[error("{0}")]
    Input(String),
    /// The tokenizer refused a text or its file.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// From nbxtensor (a kernel, the program layer, the tensor layer, the io layer …).
    #[error(transparent)]
    Nbx(#[from] nbxtensor::Error),
}

impl From<ProgramError> for ModelError {
    fn from(e: ProgramError) -> Self {
        ModelError::Nbx(e.into())
    }
}

impl From<KernelError> for ModelError {
    fn from(e: KernelError) -> Self {
        ModelError::Nbx(e.into())
    }
}

impl From<TensorError> for ModelError {
    fn from(e: TensorError) -> Self {
        ModelError::Nbx(e.into())
    }
}

impl From<IoError> for ModelError {
    fn from(e: IoError) -> Self {
        ModelError::Nbx(e.into())
    }
}

/// A result of the models crate.
pub type Result<T, E = ModelError> = std::result::Result<T, E>;
