//! How the elementwise and gather families address their operands: a tensor's storage
//! address (elements then found by offset and strides), an element's width, and whether
//! broadcast operands read their rows in 16-byte words.

use super::indexer::Indexer;
use crate::dtype::DType;
use crate::kernel::{KernelError, Result};
use crate::tensor::Tensor;

/// The address of a tensor's storage (its elements are found by offset and strides).
pub fn storage_ptr(tensor: &Tensor) -> u64 {
    tensor.storage().as_ptr() as u64
}

/// The width of `dtype`'s elements, as a kernel error naming `op`.
pub fn width(op: &str, dtype: DType) -> Result<i64> {
    dtype.itemsize().map(|w| w as i64).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))
}

/// Whether every operand of `ix` reads its innermost dim in 16-byte words (stride 1, aligned
/// rows) or as a splat (stride 0), and that dim holds whole words.
pub fn rows_fit(ix: &Indexer, operands: &[&Tensor], per_word: i64) -> bool {
    ix.shape[0] % per_word == 0
        && operands
            .iter()
            .enumerate()
            .all(|(k, t)| ix.strides[k][0] == 0 || ix.rows_of_words(k, per_word, storage_ptr(t)))
}
