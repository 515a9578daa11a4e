//! The backend layer: a [`Backend`] is a device's allocator and its capability table
//! (op × dtype → kernel). A missing entry is an error naming the op, the dtype and the
//! backend; the table can be printed.
//!
//! What a backend provides is written once in `docs/BACKENDS.md`.

pub mod cpu;
pub mod cuda;
mod table;

pub use table::{CapabilityTable, KernelFactory};

use crate::kernel::KernelError;
use crate::memory::{Device, DeviceKind};

/// A device backend.
pub trait Backend: Send + Sync {
    /// The backend's name (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;
    /// The device its kernels run on.
    fn device(&self) -> Device;
    /// Its kernels, by op and dtype.
    fn table(&self) -> &CapabilityTable;
}

/// The backend whose kernels run on `device`. The CUDA backend's table needs no device (a
/// dry run traces CUDA programs anywhere); its kernels look for the device when launched.
pub fn for_device(device: Device) -> Result<&'static dyn Backend, KernelError> {
    match device.kind {
        DeviceKind::Cpu => Ok(cpu::cpu()),
        DeviceKind::Cuda => Ok(cuda::cuda_backend(device.index)),
    }
}
