//! Bool tensors in kernels: seen as their bytes (one byte per element; any nonzero byte reads
//! as true, a kernel writes 0 or 1), then read and written through `buffers`.

use crate::dtype::DType;
use crate::kernel::{KernelError, Result};
use crate::tensor::Tensor;

/// A bool tensor as uint8 (a view, no copy); refused for any other dtype.
pub fn as_bytes(tensor: &Tensor) -> Result<Tensor> {
    if tensor.dtype() != DType::Bool {
        return Err(KernelError::Invalid(format!("a kernel read a {} tensor as bool", tensor.dtype())));
    }
    Ok(tensor.view_dtype(DType::Uint8)?)
}
