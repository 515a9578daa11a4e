//! The error of the io layer.

use crate::tensor::TensorError;

/// Why a file could not be read or written. Each message names the file and, where there is
/// one, the tensor at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IoError {
    /// The file's contents break the format (a bad header, offsets, dtype code, size …).
    #[error("{0}")]
    Malformed(String),
    /// A tensor the format cannot hold (a dtype without a code, a reserved or repeated name).
    #[error("{0}")]
    Unsupported(String),
    /// A tensor name the file does not hold.
    #[error("{0}")]
    UnknownTensor(String),
    /// The file system refused: a missing file, no permission, a failed map or write.
    #[error("{message}")]
    Os {
        /// The kind of the operating system's error (NotFound, PermissionDenied …).
        kind: std::io::ErrorKind,
        /// The operation, the path and the system's message.
        message: String,
    },
    /// From the tensor layer (making a tensor over the data: memory, layout).
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

impl IoError {
    /// An [`IoError::Os`] for `error`, met while doing `what` (which names the path).
    pub fn os(what: impl std::fmt::Display, error: &std::io::Error) -> IoError {
        IoError::Os { kind: error.kind(), message: format!("{what}: {error}") }
    }
}
