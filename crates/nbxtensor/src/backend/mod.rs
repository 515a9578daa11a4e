//! The backend layer: a [`Backend`] is a device's allocator and its capability table
//! (op × dtype → kernel). A missing entry is an error naming the op, the dtype and the
//! backend; the table can be printed.
//!
//! What a backend provides is written once in `docs/BACKENDS.md`.

pub mod cpu;
mod table;

pub use table::{CapabilityTable, KernelFactory};

use crate::memory::Device;

/// A device backend.
pub trait Backend: Send + Sync {
    /// The backend's name (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;
    /// The device its kernels run on.
    fn device(&self) -> Device;
    /// Its kernels, by op and dtype.
    fn table(&self) -> &CapabilityTable;
}
