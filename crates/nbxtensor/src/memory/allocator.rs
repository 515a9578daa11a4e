//! What every device's allocator provides (the smallest backend contract: allocate, free,
//! copy in, copy out), and the limit every one of them holds to.

use super::{Device, MemoryError};

/// An allocator of one device. Blocks are freed when dropped (they return to the allocator).
pub trait Allocator: Send + Sync {
    /// A block of device memory.
    type Block: Send + Sync;

    /// The device this allocator serves.
    fn device(&self) -> Device;

    /// A block of `bytes` (uninitialised on the device; zeroed on the host), refused over the
    /// memory limit.
    fn alloc(&self, bytes: usize) -> Result<Self::Block, MemoryError>;

    /// Copies host bytes into `block` at `offset`.
    fn copy_in(&self, block: &mut Self::Block, offset: usize, bytes: &[u8]) -> Result<(), MemoryError>;

    /// Copies bytes of `block` at `offset` out to the host.
    fn copy_out(&self, block: &Self::Block, offset: usize, out: &mut [u8]) -> Result<(), MemoryError>;

    /// Bytes of live blocks.
    fn in_use(&self) -> u64;
}
