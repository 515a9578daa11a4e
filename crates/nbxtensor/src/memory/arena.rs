//! The arena of a planned program: one block on one device, and regions at offsets a planner
//! chose.

use super::{Device, MemoryError};
use crate::backend::{self, Block};
use std::sync::Arc;

/// One block holding every buffer of a planned program at its planned offset.
pub struct Arena {
    block: Block,
    device: Device,
}
/// A byte range of an arena; keeps the arena alive.
#[derive(Clone)]
pub struct Region {
    arena: Arc<Arena>,
    offset: usize,
    len: usize,
}

impl Arena {
    /// An arena of `bytes` on the host (one allocation, counted against the limit).
    ///
    /// ```
    /// use nbxtensor::memory::Arena;
    /// let arena = Arena::new(4096)?;
    /// let region = Arena::region(&arena, 1024, 512)?;
    /// assert_eq!((region.offset(), region.len()), (1024, 512));
    /// assert!(Arena::region(&arena, 4000, 512).is_err());
    /// # Ok::<(), nbxtensor::memory::MemoryError>(())
    /// ```
    pub fn new(bytes: usize) -> Result<Arc<Arena>, MemoryError> {
        Arena::on(Device::CPU, bytes)
    }

    /// An arena of `bytes` on `device`: one allocation, exact on a GPU (not pooled), counted
    /// against the limit.
    pub fn on(device: Device, bytes: usize) -> Result<Arc<Arena>, MemoryError> {
        let block = backend::of(device).alloc_exact(bytes)?;
        Ok(Arc::new(Arena { block, device }))
    }

    /// The arena's size in bytes.
    pub fn len(&self) -> usize {
        self.block.len()
    }

    /// Whether the arena holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device the arena lives on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The first byte (a device address on a GPU).
    fn base(&self) -> *mut u8 {
        self.block.address() as *mut u8
    }

    /// The region `offset..offset + len`, refused outside the arena.
    pub fn region(arena: &Arc<Arena>, offset: usize, len: usize) -> Result<Region, MemoryError> {
        match offset.checked_add(len) {
            Some(end) if end <= arena.len() => Ok(Region { arena: Arc::clone(arena), offset, len }),
            _ => Err(MemoryError::OutOfBounds(format!(
                "region {offset}..{offset}+{len} is outside an arena of {} bytes",
                arena.len()
            ))),
        }
    }
}

impl Region {
    /// The region's offset in its arena.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The region's length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the region lives on.
    pub fn device(&self) -> Device {
        self.arena.device
    }

    /// The region's first byte (a device address on a GPU).
    pub fn as_ptr(&self) -> *mut u8 {
        // offset <= arena length, checked when the region was made
        self.arena.base().wrapping_add(self.offset)
    }
}
