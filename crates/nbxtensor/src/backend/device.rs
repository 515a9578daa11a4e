//! The one device trait: everything the layers above ask of a device. Tensors, arenas, op
//! calls, the planner and capture speak only to a [`Backend`]; a new backend implements it
//! and registers its launches, and touches nothing above.

use super::{LaunchTable, Peaks};
use crate::kernel::KernelError;
use crate::memory::{Device, MemoryError};

/// A block of a device's memory, freed (or returned to its pool) when dropped.
pub trait DeviceBlock: Send + Sync {
    /// The address of the first byte (a device address on a GPU, never dereferenced on the
    /// host there).
    fn address(&self) -> u64;
    /// The block's size in bytes.
    fn len(&self) -> usize;
    /// Whether the block holds no byte.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A device block, type-erased.
pub type Block = Box<dyn DeviceBlock>;

/// A captured launch sequence a backend replays with one call (a CUDA graph).
pub trait Graph: Send + Sync {
    /// Queues one replay.
    fn launch(&self) -> Result<(), KernelError>;
    /// Waits until every queued replay has run.
    fn synchronize(&self) -> Result<(), KernelError>;
    /// The nodes the capture recorded (one per kernel launch or copy).
    fn nodes(&self) -> usize;
}

/// A device: its memory, its synchronisation, its DLPack identity, its capture of launches,
/// its peak rates and its launch table. Object-safe: the layers above hold `&dyn Backend`.
///
/// Addresses are `u64`: host addresses on the CPU, device addresses on a GPU. The `unsafe`
/// copies trust the caller that the ranges lie in live blocks of this device (the tensor
/// layer checks them against its storage first).
pub trait Backend: Send + Sync {
    /// The backend's name (`"cpu"`, `"cuda"`).
    fn name(&self) -> &'static str;

    /// The device served.
    fn device(&self) -> Device;

    /// Its launches, by op and dtype.
    fn launches(&self) -> &'static LaunchTable;

    /// Whether the host reads and writes this device's memory directly (the host itself).
    fn host_addressable(&self) -> bool;

    /// The alignment of every block and of every planned offset, in bytes.
    fn alignment(&self) -> u64;

    /// A block of `bytes` for a launch's outputs or workspace (pooled; zeroed on the host,
    /// uninitialised on a GPU), refused over the memory limit.
    fn alloc(&self, bytes: usize) -> Result<Block, MemoryError>;

    /// A block of `bytes` for a launch's outputs, every byte of which the launch writes: as
    /// [`Backend::alloc`], except that a host backend may hand over a pooled block unzeroed.
    fn alloc_output(&self, bytes: usize) -> Result<Block, MemoryError> {
        self.alloc(bytes)
    }

    /// One block of exactly `bytes` (a planned arena), refused over the memory limit.
    fn alloc_exact(&self, bytes: usize) -> Result<Block, MemoryError>;

    /// The bytes [`Backend::alloc_exact`] of `bytes` takes from the device (its granularity):
    /// what a planned run allocates, to the byte.
    fn allocated_bytes(&self, bytes: u64) -> u64;

    /// The bytes [`Backend::alloc`] of `bytes` takes from the device (its pool's size class):
    /// what a tensor of that many bytes holds while it lives.
    fn pooled_bytes(&self, bytes: u64) -> u64;

    /// Bytes of live blocks.
    fn in_use(&self) -> u64;

    /// The memory limit in force on this device: the setting, or the device's memory.
    fn limit(&self) -> Result<u64, MemoryError>;

    /// Sets `len` bytes at `address` to zero.
    ///
    /// # Safety
    /// The range must lie in a live block of this device that nothing else uses meanwhile.
    unsafe fn zero(&self, address: u64, len: usize) -> Result<(), MemoryError>;

    /// Copies host `bytes` to `address`.
    ///
    /// # Safety
    /// As [`Backend::zero`].
    unsafe fn write(&self, address: u64, bytes: &[u8]) -> Result<(), MemoryError>;

    /// Copies `out.len()` bytes at `address` to the host, after the work queued before.
    ///
    /// # Safety
    /// The range must lie in a live block of this device.
    unsafe fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError>;

    /// Copies `len` bytes from `src` to `dst`, both on this device, ordered with its launches.
    ///
    /// # Safety
    /// As [`Backend::zero`] for `dst`, and `src` readable; the ranges do not overlap.
    unsafe fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), MemoryError>;

    /// Waits until every launch and copy queued on the device has run.
    fn synchronize(&self) -> Result<(), KernelError>;

    /// The DLPack `(device_type, device_id)` of this device's memory.
    fn dlpack_device(&self) -> (i32, i32);

    /// Whether a tensor of this device can be handed to another library as a DLPack capsule:
    /// refused, saying why, where its memory has no address a consumer could read (a wgpu
    /// buffer).
    fn dlpack_exportable(&self) -> Result<(), String>;

    /// Applies DLPack's stream rule for an export: `stream` is what the consumer passed to
    /// `__dlpack__` (`None` when absent); the device makes it see every write queued so far,
    /// or refuses a stream it does not understand, saying why.
    fn dlpack_export_stream(&self, stream: Option<i64>) -> Result<(), String>;

    /// The stream this library passes to a producer on this device when importing (`None`
    /// where the device has no streams).
    fn dlpack_import_stream(&self) -> Result<Option<i64>, String>;

    /// Records what `queue` launches as one replayable graph, nothing running meanwhile;
    /// `None` where the device replays the launch list itself (the CPU), in which case
    /// `queue` is not called.
    fn capture(
        &self,
        queue: &mut dyn FnMut() -> Result<(), KernelError>,
    ) -> Result<Option<Box<dyn Graph>>, KernelError>;

    /// The device's peak rates (for pricing): from its device file, or measured.
    fn peaks(&self) -> Result<Peaks, KernelError>;
}
