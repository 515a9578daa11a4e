//! The kernel layer: what every kernel, on every backend, declares before it runs (its
//! [`Cost`]) and how it is launched ([`Kernel`]). The planner, the pricing and the program
//! read only declarations: a model's peak memory, its arena and its predicted time are known
//! before any device is touched.

mod attrs;
mod cost;
mod error;

pub use attrs::{AttrValue, Attrs};
pub use cost::{saturating_product, total_bytes, Cost, Lifetime, TensorMeta};
pub use error::KernelError;

use crate::memory::Device;
use crate::tensor::Tensor;
use std::marker::PhantomData;

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
    /// Scratch bytes for this launch only, on the launch's device.
    pub workspace: Workspace<'a>,
}

/// The workspace of one launch: the declared bytes, on the device the kernel runs on, live
/// only during the launch.
pub struct Workspace<'a> {
    ptr: *mut u8,
    len: usize,
    device: Device,
    _bytes: PhantomData<&'a mut [u8]>,
}

impl<'a> Workspace<'a> {
    /// Host bytes as a workspace.
    pub fn host(bytes: &'a mut [u8]) -> Workspace<'a> {
        Workspace { ptr: bytes.as_mut_ptr(), len: bytes.len(), device: Device::CPU, _bytes: PhantomData }
    }

    /// No bytes, on `device` (a launch that declared no workspace).
    pub fn empty(device: Device) -> Workspace<'a> {
        Workspace { ptr: std::ptr::NonNull::<u64>::dangling().as_ptr().cast(), len: 0, device, _bytes: PhantomData }
    }

    /// `len` bytes at `ptr` on `device` (a device address on a GPU).
    ///
    /// # Safety
    /// The range must be valid for reads and writes on `device`, and used by nothing else,
    /// for `'a`.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize, device: Device) -> Workspace<'a> {
        Workspace { ptr, len, device, _bytes: PhantomData }
    }

    /// The same bytes, borrowed for a shorter time.
    pub fn reborrow(&mut self) -> Workspace<'_> {
        Workspace { ptr: self.ptr, len: self.len, device: self.device, _bytes: PhantomData }
    }

    /// The workspace's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the bytes live on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The device address of the first byte (for a GPU kernel's parameters).
    pub fn device_ptr(&self) -> u64 {
        self.ptr as u64
    }

    /// The bytes, on the host; refused (naming `op`) when they live on a device.
    pub fn into_host(self, op: &str) -> Result<&'a mut [u8]> {
        if self.device != Device::CPU {
            return Err(KernelError::Invalid(format!("{op}: a host kernel was given a workspace on {}", self.device)));
        }
        if self.len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: host bytes borrowed for 'a (the constructors' contract).
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
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

    /// The op spec the kernel runs, when it is a backend's launch of one (a kernel of one's
    /// own may have none).
    fn spec(&self) -> Option<&dyn crate::ops::spec::Spec> {
        None
    }

    /// The autotune key this launch would be tuned under on `device` (spelled as the store
    /// keeps it), with whether the store holds its proven choice: what a dry run records in
    /// place of [`Kernel::key`]. `None` for a launch that tunes nothing.
    fn tuning(&self, _inputs: &[TensorMeta], _device: crate::memory::Device) -> Option<(String, bool)> {
        None
    }

    /// The first input this launch cannot read in the layout given (a backend that reads only
    /// some strides says which), or `None`. An op call passes a contiguous copy of it instead
    /// (a `copy` launch, recorded in a trace like any other); a contiguous input is always
    /// read.
    fn unreadable(&self, _inputs: &[&crate::tensor::Tensor]) -> Option<usize> {
        None
    }
}
