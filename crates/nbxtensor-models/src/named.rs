//! The tensors of a checkpoint by name, taken one at a time with their shape checked against
//! the config: what each model's weight loader reads its tensors through.

use crate::error::{ModelError, Result};
use nbxtensor::tensor::Tensor;
use std::collections::HashMap;

/// A checkpoint's tensors not yet taken, and where they came from (for errors).
pub(crate) struct Named {
    /// The file or directory the tensors were read from.
    pub source: String,
    /// The tensors left, by name.
    pub tensors: HashMap<String, Tensor>,
}

impl Named {
    /// Removes and returns the tensor `name`, refused by name when it is missing or its shape
    /// is not `shape` (the caller checks its dtype).
    pub fn take(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self
            .tensors
            .remove(name)
            .ok_or_else(|| ModelError::Files(format!("{}: no tensor named {name:?}", self.source)))?;
        let want: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        if tensor.shape() != want.as_slice() {
            return Err(ModelError::Files(format!(
                "{}: {name} is {:?}, the config asks for {want:?}",
                self.source,
                tensor.shape()
            )));
        }
        Ok(tensor)
    }
}
