//! Eager ops: an op call looks up its kernel in the backend's capability table, reads the
//! kernel's declaration, allocates the declared outputs and workspace, and launches it.
//!
//! ```
//! use nbxtensor::{ops, tensor::Tensor, kernel::Attrs};
//! let x = Tensor::from_vec(vec![0.0f32, 1.0], &[2])?;
//! let y = ops::call("exp", &Attrs::new(), &[&x])?.remove(0);
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 1.0f32.exp()]);
//! # Ok::<(), nbxtensor::kernel::KernelError>(())
//! ```

use crate::backend::{cpu::cpu, Backend};
use crate::kernel::{Attrs, KernelError, Launch, TensorMeta};
use crate::tensor::Tensor;

/// The dtype an op dispatches on: its first input's.
fn dispatch_dtype(op: &str, inputs: &[&Tensor]) -> Result<crate::DType, KernelError> {
    inputs.first().map(|t| t.dtype()).ok_or_else(|| KernelError::Invalid(format!("{op}: takes at least one input")))
}

/// Calls `op` with `attrs` on `inputs` on the CPU backend; returns the outputs.
pub fn call(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    let backend = cpu();
    if let Some(other) = inputs.iter().find(|t| t.device() != backend.device()) {
        return Err(KernelError::Invalid(format!(
            "{op}: an input lives on {}, the {} backend runs on {}",
            other.device(),
            backend.name(),
            backend.device()
        )));
    }
    let kernel = backend.table().kernel(op, dispatch_dtype(op, inputs)?, attrs)?;
    let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let cost = kernel.declare(&metas)?;
    let outputs = cost.outputs.iter().map(|m| Tensor::zeros(m.dtype, &m.shape)).collect::<Result<Vec<_>, _>>()?;
    let mut workspace = vec![0u8; cost.workspace as usize];
    let inputs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    kernel.launch(Launch { inputs: &inputs, outputs: &outputs, workspace: &mut workspace })?;
    Ok(outputs)
}
