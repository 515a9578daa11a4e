//! Device memory: blocks of `cuMemAlloc` (never managed memory), counted against the memory
//! limit, pooled by size class for eager op calls; an exact, unpooled block for a program's
//! arena; host copies through a pinned staging buffer.

use super::context::{context, CudaContext};
use super::driver::check;
use crate::memory::{Allocator, Device, DeviceKind, MemoryError};
use crate::settings::memory_limit;
use cudarc::driver::sys;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The alignment of every device block (`cuMemAlloc` returns 256-byte aligned addresses), and
/// of a GPU program's planned offsets.
pub const DEVICE_ALIGNMENT: u64 = 256;

/// The bytes a pinned staging buffer holds: host copies move in pieces of this size.
pub const STAGING_BYTES: usize = 16 << 20;

/// A device's allocator.
pub struct CudaAllocator {
    index: u32,
    in_use: AtomicU64,
    pool: Mutex<BTreeMap<usize, Vec<u64>>>,
    parked: AtomicU64,
    staging: Mutex<Option<Staging>>,
}

/// Pinned host memory for copies (allocated at the first copy).
struct Staging {
    ptr: *mut u8,
}

// SAFETY: the staging buffer is plain pinned memory, used under the allocator's mutex.
unsafe impl Send for Staging {}

/// A block of device memory; returned to its allocator when dropped.
pub struct CudaBlock {
    ptr: u64,
    len: usize,
    class: usize,
    pooled: bool,
    index: u32,
}

impl CudaBlock {
    /// The device address of the first byte.
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The device the block lives on.
    pub fn device(&self) -> Device {
        Device { kind: DeviceKind::Cuda, index: self.index }
    }
}

impl Drop for CudaBlock {
    fn drop(&mut self) {
        if let Ok(allocator) = cuda_allocator(self.index) {
            allocator.release(self.ptr, self.class, self.pooled);
        }
    }
}

/// The allocator of device `index`; refused (naming why) where CUDA or the device is absent.
pub fn cuda_allocator(index: u32) -> Result<&'static CudaAllocator, MemoryError> {
    static ALLOCATORS: OnceLock<Vec<CudaAllocator>> = OnceLock::new();
    let driver = super::driver::driver().map_err(MemoryError::UnknownDevice)?;
    let allocators = ALLOCATORS.get_or_init(|| {
        (0..driver.devices.len() as u32)
            .map(|index| CudaAllocator {
                index,
                in_use: AtomicU64::new(0),
                pool: Mutex::new(BTreeMap::new()),
                parked: AtomicU64::new(0),
                staging: Mutex::new(None),
            })
            .collect()
    });
    allocators.get(index as usize).ok_or_else(|| {
        MemoryError::UnknownDevice(format!("cuda:{index}: no such device (the driver sees {})", driver.devices.len()))
    })
}

pub use crate::memory::size_class;

fn cuda_error(index: u32, message: String) -> MemoryError {
    MemoryError::UnknownDevice(format!("cuda:{index}: {message}"))
}

impl CudaAllocator {
    fn context(&self) -> Result<&'static CudaContext, MemoryError> {
        context(self.index).map_err(MemoryError::UnknownDevice)
    }

    fn device_name(&self) -> String {
        Device { kind: DeviceKind::Cuda, index: self.index }.to_string()
    }

    /// The limit in force on this device: the setting, or the device's memory.
    pub fn limit(&self) -> Result<u64, MemoryError> {
        Ok(memory_limit::effective_limit(self.context()?.info().total_memory))
    }

    /// The bytes a pooled request of `bytes` takes from the limit.
    pub fn footprint(&self, bytes: usize) -> usize {
        size_class(bytes)
    }

    /// Bytes parked for reuse.
    pub fn parked(&self) -> u64 {
        self.parked.load(Ordering::SeqCst)
    }

    /// Frees every parked block (after the queued work that may use them has finished).
    pub fn release_parked(&self) -> Result<(), MemoryError> {
        let context = self.context()?;
        context.synchronize().map_err(|e| cuda_error(self.index, e))?;
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        for (_, blocks) in std::mem::take(&mut *pool) {
            for ptr in blocks {
                // SAFETY: a parked block came from cuMemAlloc and nothing uses it any more.
                check(unsafe { sys::cuMemFree_v2(ptr) }, "cuMemFree_v2").map_err(|e| cuda_error(self.index, e))?;
            }
        }
        self.parked.store(0, Ordering::SeqCst);
        Ok(())
    }

    /// A block of exactly `bytes`, not pooled: what a program's arena takes, so that the
    /// device's free memory falls by the plan (to the driver's granularity).
    pub fn alloc_exact(&self, bytes: usize) -> Result<CudaBlock, MemoryError> {
        self.allocate(bytes, bytes, false)
    }

    fn allocate(&self, bytes: usize, class: usize, pooled: bool) -> Result<CudaBlock, MemoryError> {
        if class == 0 {
            return Ok(CudaBlock { ptr: 0, len: 0, class: 0, pooled, index: self.index });
        }
        let limit = self.limit()?;
        if class as u64 > limit {
            let in_use = self.in_use.load(Ordering::SeqCst);
            return Err(MemoryError::OverLimit { device: self.device_name(), asked: bytes as u64, in_use, limit });
        }
        let in_use = self.in_use.fetch_add(class as u64, Ordering::SeqCst);
        if in_use.saturating_add(class as u64) > limit {
            self.in_use.fetch_sub(class as u64, Ordering::SeqCst);
            return Err(MemoryError::OverLimit { device: self.device_name(), asked: bytes as u64, in_use, limit });
        }
        if pooled {
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(ptr) = pool.get_mut(&class).and_then(Vec::pop) {
                self.parked.fetch_sub(class as u64, Ordering::SeqCst);
                return Ok(CudaBlock { ptr, len: bytes, class, pooled, index: self.index });
            }
        }
        self.context()?;
        let mut ptr: sys::CUdeviceptr = 0;
        // SAFETY: the context is current; the pointer is valid.
        let mut result = unsafe { sys::cuMemAlloc_v2(&mut ptr, class) };
        if result == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY && self.parked() > 0 {
            self.release_parked()?;
            result = unsafe { sys::cuMemAlloc_v2(&mut ptr, class) };
        }
        if result != sys::CUresult::CUDA_SUCCESS {
            self.in_use.fetch_sub(class as u64, Ordering::SeqCst);
            return Err(MemoryError::Refused { device: self.device_name(), asked: bytes as u64 });
        }
        Ok(CudaBlock { ptr, len: bytes, class, pooled, index: self.index })
    }

    fn release(&self, ptr: u64, class: usize, pooled: bool) {
        if class == 0 {
            return;
        }
        self.in_use.fetch_sub(class as u64, Ordering::SeqCst);
        let park_up_to = self.limit().map(|l| l / 4).unwrap_or(0);
        if pooled && self.parked() + class as u64 <= park_up_to {
            // the stream orders every later use after the queued work that used the block
            self.pool.lock().unwrap_or_else(|e| e.into_inner()).entry(class).or_default().push(ptr);
            self.parked.fetch_add(class as u64, Ordering::SeqCst);
            return;
        }
        if let Ok(context) = self.context() {
            // cuMemFree waits for the work that uses the block; an error here leaks the block
            let _ = context.bind();
            // SAFETY: the block came from cuMemAlloc and its owner is gone.
            let _ = unsafe { sys::cuMemFree_v2(ptr) };
        }
    }

    /// Sets `len` bytes at `ptr` (on this device) to zero, ordered on the stream.
    pub fn zero(&self, ptr: u64, len: usize) -> Result<(), MemoryError> {
        if len == 0 {
            return Ok(());
        }
        let context = self.context()?;
        // SAFETY: the range lies in a block of this device (the caller's contract).
        check(unsafe { sys::cuMemsetD8Async(ptr, 0, len, context.stream()) }, "cuMemsetD8Async")
            .map_err(|e| cuda_error(self.index, e))
    }

    /// Copies host bytes to `dst` on this device through the pinned staging buffer; returns
    /// when the bytes are on the device.
    pub fn write(&self, dst: u64, bytes: &[u8]) -> Result<(), MemoryError> {
        let context = self.context()?;
        let mut staging = self.staging()?;
        let pinned = staging.as_mut().map(|s| s.ptr).expect("staging is made by staging()");
        for (piece, chunk) in bytes.chunks(STAGING_BYTES).enumerate() {
            // SAFETY: the staging buffer holds STAGING_BYTES; the previous piece's copy has
            // finished (synchronised below) before it is overwritten.
            unsafe {
                std::ptr::copy_nonoverlapping(chunk.as_ptr(), pinned, chunk.len());
                check(
                    sys::cuMemcpyHtoDAsync_v2(
                        dst + (piece * STAGING_BYTES) as u64,
                        pinned.cast(),
                        chunk.len(),
                        context.stream(),
                    ),
                    "cuMemcpyHtoDAsync_v2",
                )
                .map_err(|e| cuda_error(self.index, e))?;
            }
            context.synchronize().map_err(|e| cuda_error(self.index, e))?;
        }
        Ok(())
    }

    /// Copies bytes at `src` on this device to `out` through the staging buffer, after the
    /// work queued before it.
    pub fn read(&self, src: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let context = self.context()?;
        let mut staging = self.staging()?;
        let pinned = staging.as_mut().map(|s| s.ptr).expect("staging is made by staging()");
        for (piece, chunk) in out.chunks_mut(STAGING_BYTES).enumerate() {
            // SAFETY: as in write; the copy has finished before the staging bytes are read.
            unsafe {
                check(
                    sys::cuMemcpyDtoHAsync_v2(
                        pinned.cast(),
                        src + (piece * STAGING_BYTES) as u64,
                        chunk.len(),
                        context.stream(),
                    ),
                    "cuMemcpyDtoHAsync_v2",
                )
                .map_err(|e| cuda_error(self.index, e))?;
                context.synchronize().map_err(|e| cuda_error(self.index, e))?;
                std::ptr::copy_nonoverlapping(pinned, chunk.as_mut_ptr(), chunk.len());
            }
        }
        Ok(())
    }

    /// Copies `len` bytes between two addresses of this device, ordered on the stream.
    pub fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), MemoryError> {
        if len == 0 {
            return Ok(());
        }
        let context = self.context()?;
        // SAFETY: both ranges lie in blocks of this device (the caller's contract).
        check(unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, len, context.stream()) }, "cuMemcpyDtoDAsync_v2")
            .map_err(|e| cuda_error(self.index, e))
    }

    fn staging(&self) -> Result<std::sync::MutexGuard<'_, Option<Staging>>, MemoryError> {
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        if staging.is_none() {
            let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
            // SAFETY: the context is current; the pointer is valid.
            check(unsafe { sys::cuMemHostAlloc(&mut ptr, STAGING_BYTES, 0) }, "cuMemHostAlloc")
                .map_err(|e| cuda_error(self.index, e))?;
            *staging = Some(Staging { ptr: ptr.cast() });
        }
        Ok(staging)
    }
}

impl Allocator for CudaAllocator {
    type Block = CudaBlock;

    fn device(&self) -> Device {
        Device { kind: DeviceKind::Cuda, index: self.index }
    }

    fn alloc(&self, bytes: usize) -> Result<CudaBlock, MemoryError> {
        self.allocate(bytes, size_class(bytes), true)
    }

    fn copy_in(&self, block: &mut CudaBlock, offset: usize, bytes: &[u8]) -> Result<(), MemoryError> {
        check_range(block.len, offset, bytes.len())?;
        self.write(block.ptr + offset as u64, bytes)
    }

    fn copy_out(&self, block: &CudaBlock, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        check_range(block.len, offset, out.len())?;
        self.read(block.ptr + offset as u64, out)
    }

    fn in_use(&self) -> u64 {
        self.in_use.load(Ordering::SeqCst)
    }
}

fn check_range(block_len: usize, offset: usize, len: usize) -> Result<(), MemoryError> {
    match offset.checked_add(len) {
        Some(end) if end <= block_len => Ok(()),
        _ => Err(MemoryError::OutOfBounds(format!(
            "bytes {offset}..{offset}+{len} are outside a device block of {block_len} bytes"
        ))),
    }
}
