//! The kernel layer: what every kernel, on every backend, declares before it runs (its
//! [`Cost`]) and how it is launched ([`Kernel`]). The planner, the pricing and the program
//! read only declarations: a model's peak memory, its arena and its predicted time are known
//! before any device is touched.

mod attrs;
mod cost;
mod error;

pub use attrs::{AttrValue, Attrs};
pub use cost::{Cost, Lifetime, TensorMeta};
pub use error::KernelError;

use crate::tensor::Tensor;

/// A result of the kernel layer.
pub type Result<T, E = KernelError> = std::result::Result<T, E>;

/// The buffers of one launch: the inputs (any layout the kernel accepts), the outputs
/// (contiguous, of the declared shapes and dtypes, written by the kernel) and the workspace
/// (the declared bytes, live only during the launch).
pub struct Launch<'a> {
    /// The inputs, in the op's order.
    pub inputs: &'a [Tensor],
    /// The outputs, contiguous, as declared.
    pub outputs: &'a [Tensor],
    /// Scratch bytes for this launch only.
    pub workspace: &'a mut [u8],
}

/// A kernel bound to its attributes (axis, eps, …): it declares its cost for given inputs,
/// then runs on buffers of the declared sizes.
pub trait Kernel: Send + Sync {
    /// The launch key: op, dtype and attributes, as a launch observer records it.
    fn key(&self) -> String;

    /// What a launch on inputs of these shapes and dtypes costs; refused (naming the op and
    /// the operands) when the inputs do not fit the op.
    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost>;

    /// Runs the kernel. The caller guarantees the outputs and the workspace match the
    /// declaration for these inputs.
    fn launch(&self, launch: Launch<'_>) -> Result<()>;

    /// Whether its flops run on the device's matrix unit (matrix products), which pricing
    /// reads to pick the matrix or the vector peak.
    fn uses_matrix_unit(&self) -> bool {
        false
    }
}
