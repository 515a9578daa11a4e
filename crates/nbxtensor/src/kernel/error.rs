//! The error of the kernel layer.

/// Why a kernel refused its inputs or could not run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum KernelError {
    /// Inputs that do not fit the op (shapes, dtypes, counts), or bad attributes; the message
    /// names the op and the operands.
    #[error("{0}")]
    Invalid(String),
    /// An op and dtype the backend's capability table has no kernel for.
    #[error("no kernel for op '{op}' on dtype {dtype} in the {backend} backend")]
    Missing {
        /// The op.
        op: String,
        /// The dtype asked for.
        dtype: String,
        /// The backend.
        backend: String,
    },
    /// A device call failed (a driver, compiler or library error, named with its call).
    #[error("{0}")]
    Device(String),
    /// From the tensor layer (making or reading buffers).
    #[error(transparent)]
    Tensor(#[from] crate::tensor::TensorError),
}
