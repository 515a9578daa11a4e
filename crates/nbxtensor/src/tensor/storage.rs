//! Storage: the bytes a tensor and its views share, wherever they live and whoever owns
//! them (the host allocator, an arena, a memory map, another library through DLPack).

use crate::backend::{self, Block};
use crate::memory::{Device, MemoryError, Region};
use std::any::Any;
use std::ptr::NonNull;

/// Who owns a storage's bytes.
enum Owner {
    /// A block of a device's allocator (the host's included).
    Block(Block),
    /// A region of a planned arena (on the arena's device).
    Region(Region),
    /// Memory owned elsewhere (a memory map, a DLPack producer), kept alive by `keeper`,
    /// released when it drops.
    Foreign { ptr: NonNull<u8>, _keeper: Box<dyn Any + Send + Sync> },
    /// No memory yet: a buffer of a program being traced, or of a dry run.
    Symbolic,
}

/// The bytes behind a tensor.
pub struct Storage {
    owner: Owner,
    len: usize,
    device: Device,
    read_only: bool,
}

// SAFETY: a foreign pointer is only read or written through the tensor API, which the
// keeper's owner allows from any thread (DLPack and memory maps carry no thread affinity).
unsafe impl Send for Storage {}
unsafe impl Sync for Storage {}

impl Storage {
    /// `len` zeroed bytes on the host.
    pub fn zeroed(len: usize) -> Result<Storage, MemoryError> {
        Storage::zeroed_on(len, Device::CPU)
    }

    /// A copy of `bytes` on the host.
    pub fn copy_of(bytes: &[u8]) -> Result<Storage, MemoryError> {
        Storage::copy_of_on(bytes, Device::CPU)
    }

    /// `len` bytes on `device` for a kernel's outputs, which writes every byte of them
    /// ([`crate::backend::Backend::alloc_output`]: not zeroed; on the host a pooled block as
    /// its last holder left it).
    pub fn for_outputs(len: usize, device: Device) -> Result<Storage, MemoryError> {
        let block = backend::of(device).alloc_output(len)?;
        Ok(Storage { owner: Owner::Block(block), len, device, read_only: false })
    }

    /// `len` zeroed bytes on `device`.
    pub fn zeroed_on(len: usize, device: Device) -> Result<Storage, MemoryError> {
        let backend = backend::of(device);
        let storage = Storage { owner: Owner::Block(backend.alloc(len)?), len, device, read_only: false };
        if !backend.host_addressable() && len > 0 {
            // SAFETY: the block is the new storage's own, `len` bytes long.
            unsafe { backend.zero(storage.as_ptr() as u64, len)? };
        }
        Ok(storage)
    }

    /// A copy of host `bytes` on `device`.
    pub fn copy_of_on(bytes: &[u8], device: Device) -> Result<Storage, MemoryError> {
        let storage = Storage::for_outputs(bytes.len(), device)?;
        if !bytes.is_empty() {
            // SAFETY: the block is the new storage's own, `bytes.len()` bytes long.
            unsafe { backend::of(device).write(storage.as_ptr() as u64, bytes)? };
        }
        Ok(storage)
    }

    /// Copies `out.len()` bytes from `offset` of the storage to the host, wherever it lives
    /// (a GPU's copy waits for the work queued before it).
    pub fn read_into(&self, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        match offset.checked_add(out.len()) {
            Some(end) if end <= self.len => {}
            _ => {
                return Err(MemoryError::OutOfBounds(format!(
                    "bytes {offset}..{offset}+{} are outside a storage of {} bytes",
                    out.len(),
                    self.len
                )))
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        self.refuse_symbolic()?;
        // SAFETY: offset..offset + out.len() lies inside the storage (checked above), which
        // its owner keeps alive while self lives.
        unsafe { backend::of(self.device).read(self.as_ptr() as u64 + offset as u64, out) }
    }

    fn refuse_symbolic(&self) -> Result<(), MemoryError> {
        if self.is_symbolic() {
            return Err(MemoryError::UnknownDevice(
                "a traced tensor has no data: its values exist only when the program runs".to_string(),
            ));
        }
        Ok(())
    }

    /// `len` bytes that do not exist yet: the storage of a traced (symbolic) tensor, whose
    /// layout is real and whose data is refused until a program gives it memory.
    pub fn symbolic(len: usize, device: Device) -> Storage {
        Storage { owner: Owner::Symbolic, len, device, read_only: false }
    }

    /// Whether the storage is symbolic (no memory).
    pub fn is_symbolic(&self) -> bool {
        matches!(self.owner, Owner::Symbolic)
    }

    /// A region of an arena, on the arena's device.
    pub fn in_region(region: Region) -> Storage {
        let len = region.len();
        let device = region.device();
        Storage { owner: Owner::Region(region), len, device, read_only: false }
    }

    /// Bytes owned elsewhere: `len` bytes at `ptr` on `device`, kept alive by `keeper`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `len` bytes (and writes, unless `read_only`) on
    /// `device` for as long as `keeper` lives, and nothing else may free it meanwhile.
    pub unsafe fn foreign(
        ptr: NonNull<u8>,
        len: usize,
        device: Device,
        read_only: bool,
        keeper: Box<dyn Any + Send + Sync>,
    ) -> Storage {
        Storage { owner: Owner::Foreign { ptr, _keeper: keeper }, len, device, read_only }
    }

    /// The storage's size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the storage holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the bytes live.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Whether the producer forbade writes.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The first byte: a host address, or a device address for a GPU's storage (never to be
    /// dereferenced on the host).
    pub fn as_ptr(&self) -> *mut u8 {
        match &self.owner {
            Owner::Block(block) => block.address() as *mut u8,
            Owner::Region(region) => region.as_ptr(),
            Owner::Foreign { ptr, .. } => ptr.as_ptr(),
            Owner::Symbolic => NonNull::<u64>::dangling().as_ptr().cast(),
        }
    }

    /// The bytes, on the host; refused for device memory.
    pub fn host_bytes(&self) -> Result<&[u8], MemoryError> {
        self.refuse_symbolic()?;
        if !backend::of(self.device).host_addressable() {
            return Err(MemoryError::UnknownDevice(format!(
                "the storage lives on {}: copy it to the host first",
                self.device
            )));
        }
        if self.len == 0 {
            return Ok(&[]);
        }
        // SAFETY: the owner keeps `len` readable bytes at as_ptr() while self lives.
        Ok(unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) })
    }
}
