//! The host allocator: 64-byte aligned blocks, pooled by size class, counted against the
//! memory limit; zeroed, except a kernel's outputs (`alloc_unzeroed`), which it writes whole. A
//! tensor's block takes a class of at most an eighth over its bytes (past 64 KiB), a planned
//! arena's one rounded to 4 KiB.

use super::{Allocator, Device, MemoryError};
use crate::settings::{host_memory, memory_limit};
use crate::shape::bytes::MAX_BYTES;
use std::alloc::Layout;
use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The alignment of every host block: a cache line, and the widest SIMD load (AVX-512).
pub const HOST_ALIGNMENT: usize = 64;

/// The host's allocator (one per process).
pub fn host_allocator() -> &'static HostAllocator {
    static HOST: OnceLock<HostAllocator> = OnceLock::new();
    HOST.get_or_init(|| HostAllocator {
        in_use: AtomicU64::new(0),
        high_water: AtomicU64::new(0),
        pool: Mutex::new(Pool::default()),
    })
}

/// Freed blocks kept for reuse, by size class.
#[derive(Default)]
struct Pool {
    parked: BTreeMap<usize, Vec<NonNull<u8>>>,
    parked_bytes: u64,
}

// SAFETY: the pool owns the parked blocks exclusively; they are plain memory.
unsafe impl Send for Pool {}

/// The host allocator: blocks of a size class (a power of two up to 4 KiB, then a multiple
/// of 4 KiB) are parked when freed, up to an eighth of the limit, and handed out again.
pub struct HostAllocator {
    in_use: AtomicU64,
    high_water: AtomicU64,
    pool: Mutex<Pool>,
}

/// A zeroed host block, 64-byte aligned; freed (parked) when dropped.
pub struct HostBlock {
    ptr: NonNull<u8>,
    len: usize,
    class: usize,
}

// SAFETY: a HostBlock owns its memory exclusively; sharing it is sharing plain bytes.
unsafe impl Send for HostBlock {}
unsafe impl Sync for HostBlock {}

impl HostBlock {
    /// Bytes asked for.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the block holds no byte.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first byte (aligned to [`HOST_ALIGNMENT`]).
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The block's bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes (zeroed at allocation) while the block lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The block's bytes, to write.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        host_allocator().release(self.ptr, self.class);
    }
}

/// The bytes an exact request takes (a planned arena): a power of two up to 4 KiB, then a
/// multiple of 4 KiB; `None` past [`MAX_BYTES`] (no layout holds it).
fn exact_class(bytes: usize) -> Option<usize> {
    let class = match bytes {
        0 => 0,
        1..=4096 => bytes.next_power_of_two().max(HOST_ALIGNMENT),
        _ => bytes.checked_next_multiple_of(4096)?,
    };
    (class as u64 <= MAX_BYTES).then_some(class)
}

/// The bytes a pooled request takes (a tensor): as [`exact_class`] up to 64 KiB, then eight
/// classes to each doubling (at most an eighth over the request), so that the tensors of a
/// shape a little larger than the last one's (the next batch of texts sorted by length) take
/// the blocks it freed instead of fresh pages the system must fault in and zero.
fn size_class(bytes: usize) -> Option<usize> {
    if bytes <= 65536 {
        return exact_class(bytes);
    }
    let step = (1usize << bytes.ilog2()) / 8;
    let class = bytes.checked_next_multiple_of(step)?;
    (class as u64 <= MAX_BYTES).then_some(class)
}

fn layout(class: usize) -> Option<Layout> {
    Layout::from_size_align(class, HOST_ALIGNMENT).ok()
}

/// Bytes counted against the host's memory limit with no memory of the allocator behind
/// them: what the library holds in memory it gets elsewhere (a vector it fills and hands
/// out, a Python object) while it holds it. Released when dropped.
#[must_use = "the bytes are counted only while the charge lives"]
pub struct HostCharge {
    bytes: u64,
}

impl HostCharge {
    /// The bytes counted.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for HostCharge {
    fn drop(&mut self) {
        if self.bytes > 0 {
            host_allocator().in_use.fetch_sub(self.bytes, Ordering::SeqCst);
        }
    }
}

impl HostAllocator {
    /// The limit in force on the host: the setting, or the host's memory (read once).
    pub fn limit(&self) -> Result<u64, MemoryError> {
        static HOST_TOTAL: OnceLock<u64> = OnceLock::new();
        let total = match HOST_TOTAL.get() {
            Some(total) => *total,
            None => *HOST_TOTAL.get_or_init(|| host_memory::memory_state().map(|s| s.total).unwrap_or(u64::MAX)),
        };
        Ok(memory_limit::effective_limit(total))
    }

    /// The bytes a request of `bytes` takes from the limit (its size class): what `alloc`
    /// counts in use.
    /// A request past [`MAX_BYTES`] has no class; its footprint is given as `usize::MAX`
    /// (every limit refuses it).
    pub fn footprint(&self, bytes: usize) -> usize {
        size_class(bytes).unwrap_or(usize::MAX)
    }

    /// The bytes [`HostAllocator::alloc_exact`] of `bytes` takes from the limit (`usize::MAX`
    /// past [`MAX_BYTES`]).
    pub fn exact_footprint(&self, bytes: usize) -> usize {
        exact_class(bytes).unwrap_or(usize::MAX)
    }

    /// A zeroed block of `bytes` rounded only to 4 KiB (a planned arena: one block, its size
    /// priced to the page), refused over the limit.
    pub fn alloc_exact(&self, bytes: usize) -> Result<HostBlock, MemoryError> {
        self.allocate(bytes, exact_class(bytes), true)
    }

    /// A block of `bytes` for a kernel's outputs, which writes every byte: a parked block is
    /// handed over as its last holder left it (zeroing it cost an eager MiniLM batch 6% of its
    /// time), a fresh one zeroed by the system. Never uninitialised memory.
    pub fn alloc_unzeroed(&self, bytes: usize) -> Result<HostBlock, MemoryError> {
        self.allocate(bytes, size_class(bytes), false)
    }

    /// Counts `bytes` in use (under the limit, as an allocation would be) until the returned
    /// charge is dropped: for memory the library fills outside this allocator.
    ///
    /// ```
    /// use nbxtensor::memory::{host_allocator, Allocator};
    /// let host = host_allocator();
    /// let charge = host.charge(1 << 20)?;
    /// assert!(host.in_use() >= 1 << 20);
    /// drop(charge);
    /// assert!(host.charge(u64::MAX).is_err());
    /// # Ok::<(), nbxtensor::memory::MemoryError>(())
    /// ```
    pub fn charge(&self, bytes: u64) -> Result<HostCharge, MemoryError> {
        self.reserve(bytes, bytes)?;
        Ok(HostCharge { bytes })
    }

    /// Adds `class` bytes to those in use unless the sum would pass the limit (or 64 bits):
    /// one compare-and-swap, so a refused request never shows in the count. `asked` is the
    /// request as the caller made it (for the message).
    fn reserve(&self, class: u64, asked: u64) -> Result<u64, MemoryError> {
        if class == 0 {
            return Ok(self.in_use());
        }
        let limit = self.limit()?;
        let mut in_use = self.in_use.load(Ordering::SeqCst);
        loop {
            let after = match in_use.checked_add(class) {
                Some(after) if after <= limit => after,
                _ => {
                    return Err(MemoryError::OverLimit { device: Device::CPU.to_string(), asked, in_use, limit });
                }
            };
            match self.in_use.compare_exchange_weak(in_use, after, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => {
                    self.high_water.fetch_max(after, Ordering::SeqCst);
                    return Ok(in_use);
                }
                Err(now) => in_use = now,
            }
        }
    }

    /// The most bytes in use at once since the last [`HostAllocator::reset_high_water`]
    /// (or since the process started). Process-wide, like [`Allocator::in_use`]: it measures
    /// one piece of work while nothing else allocates.
    ///
    /// ```
    /// use nbxtensor::memory::{host_allocator, Allocator};
    /// let host = host_allocator();
    /// let before = host.reset_high_water();
    /// drop(host.alloc(10_000)?); // a class of 12 KiB, freed at once
    /// assert_eq!(host.high_water() - before, host.footprint(10_000) as u64);
    /// assert_eq!(host.in_use(), before);
    /// # Ok::<(), nbxtensor::memory::MemoryError>(())
    /// ```
    pub fn high_water(&self) -> u64 {
        self.high_water.load(Ordering::SeqCst)
    }

    /// Starts a new high-water mark at the bytes in use now, and returns them.
    pub fn reset_high_water(&self) -> u64 {
        let now = self.in_use();
        self.high_water.store(now, Ordering::SeqCst);
        now
    }

    /// Bytes parked in the pool for reuse.
    pub fn parked(&self) -> u64 {
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).parked_bytes
    }

    /// Returns every parked block to the system.
    pub fn release_parked(&self) {
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        for (class, blocks) in std::mem::take(&mut pool.parked) {
            for ptr in blocks {
                if let Some(layout) = layout(class) {
                    // SAFETY: parked blocks were allocated with this layout and are owned by the pool.
                    unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
                }
            }
        }
        pool.parked_bytes = 0;
    }

    fn release(&self, ptr: NonNull<u8>, class: usize) {
        if class == 0 {
            return;
        }
        self.in_use.fetch_sub(class as u64, Ordering::SeqCst);
        let park_up_to = self.limit().map(|l| l / 8).unwrap_or(0);
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        if pool.parked_bytes.saturating_add(class as u64) <= park_up_to {
            pool.parked.entry(class).or_default().push(ptr);
            pool.parked_bytes += class as u64;
        } else {
            drop(pool);
            if let Some(layout) = layout(class) {
                // SAFETY: the block was allocated with this layout and nobody holds it any more.
                unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
            }
        }
    }

    /// A block of `bytes` taking `class` bytes (`None`: past [`MAX_BYTES`]), refused over the
    /// limit: zeroed, or (`zero` false) a parked block as its last holder left it.
    fn allocate(&self, bytes: usize, class: Option<usize>, zero: bool) -> Result<HostBlock, MemoryError> {
        let too_large = || MemoryError::TooLarge { device: Device::CPU.to_string(), asked: bytes as u64 };
        let class = class.ok_or_else(too_large)?;
        if class == 0 {
            let dangling = NonNull::new(HOST_ALIGNMENT as *mut u8).expect("the alignment is not zero");
            return Ok(HostBlock { ptr: dangling, len: 0, class: 0 });
        }
        let layout = layout(class).ok_or_else(too_large)?;
        let in_use = self.reserve(class as u64, bytes as u64)?;
        let reused = {
            let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
            let reused = pool.parked.get_mut(&class).and_then(Vec::pop);
            if reused.is_some() {
                pool.parked_bytes -= class as u64;
            }
            reused
        };
        let ptr = match reused {
            Some(ptr) => {
                if zero {
                    // SAFETY: a parked block of this class is valid for `class` bytes.
                    unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
                }
                ptr
            }
            None => {
                let limit = self.limit()?;
                if self.parked().saturating_add(in_use).saturating_add(class as u64) > limit {
                    self.release_parked();
                }
                // SAFETY: the layout has a non-zero size.
                match NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }) {
                    Some(ptr) => ptr,
                    None => {
                        self.in_use.fetch_sub(class as u64, Ordering::SeqCst);
                        return Err(MemoryError::Refused { device: Device::CPU.to_string(), asked: bytes as u64 });
                    }
                }
            }
        };
        Ok(HostBlock { ptr, len: bytes, class })
    }
}

fn check_range(block_len: usize, offset: usize, len: usize) -> Result<(), MemoryError> {
    match offset.checked_add(len) {
        Some(end) if end <= block_len => Ok(()),
        _ => Err(MemoryError::OutOfBounds(format!(
            "bytes {offset}..{offset}+{len} are outside a block of {block_len} bytes"
        ))),
    }
}

impl Allocator for HostAllocator {
    type Block = HostBlock;

    fn device(&self) -> Device {
        Device::CPU
    }

    fn alloc(&self, bytes: usize) -> Result<HostBlock, MemoryError> {
        self.allocate(bytes, size_class(bytes), true)
    }

    fn copy_in(&self, block: &mut HostBlock, offset: usize, bytes: &[u8]) -> Result<(), MemoryError> {
        check_range(block.len, offset, bytes.len())?;
        block.as_mut_slice()[offset..offset + bytes.len()].copy_from_slice(bytes);
        Ok(())
    }

    fn copy_out(&self, block: &HostBlock, offset: usize, out: &mut [u8]) -> Result<(), MemoryError> {
        check_range(block.len, offset, out.len())?;
        out.copy_from_slice(&block.as_slice()[offset..offset + out.len()]);
        Ok(())
    }

    fn in_use(&self) -> u64 {
        self.in_use.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_aligned_zeroed_and_copied() {
        let host = host_allocator();
        let mut block = host.alloc(1000).unwrap();
        assert_eq!(block.as_ptr() as usize % HOST_ALIGNMENT, 0);
        assert!(block.as_slice().iter().all(|b| *b == 0));
        host.copy_in(&mut block, 10, &[1, 2, 3]).unwrap();
        let mut out = [0u8; 4];
        host.copy_out(&block, 9, &mut out).unwrap();
        assert_eq!(out, [0, 1, 2, 3]);
        assert!(host.copy_in(&mut block, 999, &[1, 2]).is_err());
        assert!(host.copy_out(&block, usize::MAX, &mut out).is_err());
        assert_eq!(host.alloc(0).unwrap().len(), 0);
    }

    #[test]
    fn requests_past_the_address_space_are_refused_and_leave_the_count_alone() {
        let host = host_allocator();
        let _held = host.alloc(2 << 20).unwrap();
        for bytes in [usize::MAX, usize::MAX - 4095, usize::MAX - (2 << 20), isize::MAX as usize, 1 << 62] {
            let before = host.in_use();
            let err = host.alloc(bytes).map(drop).unwrap_err();
            assert!(matches!(err, MemoryError::TooLarge { .. } | MemoryError::OverLimit { .. }), "{bytes}: {err}");
            assert!(host.in_use() <= before + (64 << 20), "a refused request of {bytes} bytes left the count raised");
        }
        assert_eq!(size_class(usize::MAX - 4095), None);
        // the last class below 2^63 is 2^63 - 2^59: a request past it rounds past MAX_BYTES
        assert_eq!(size_class(MAX_BYTES as usize - (1 << 59) + 1), Some(MAX_BYTES as usize + 1 - (1 << 59)));
        assert_eq!(size_class(MAX_BYTES as usize - (1 << 59) + 2), None);
        assert!(host.charge(u64::MAX - 10).is_err());
        let small = host.alloc(100).unwrap();
        assert_eq!(small.len(), 100, "allocation still works after the refusals");
    }

    #[test]
    fn size_classes_cover_a_request_within_an_eighth_past_64_kib() {
        for bytes in (1..300_000).step_by(997).chain([65_536, 65_537, 1 << 20, (1 << 20) + 1, 3 << 30, (3 << 30) + 7]) {
            let class = size_class(bytes).unwrap();
            assert!(class >= bytes && class % HOST_ALIGNMENT == 0, "{bytes} -> {class}");
            if bytes > 65_536 {
                assert!(
                    class % 4096 == 0 && (class - bytes) * 8 <= bytes,
                    "{bytes} -> {class}: more than an eighth over"
                );
            }
        }
        // a tensor a little larger than the last one takes its class
        assert_eq!(size_class(9_000_000), size_class(9_400_000));
        assert_eq!(size_class(1 << 20), Some(1 << 20));
        assert_eq!(size_class((1 << 20) + 1), Some((1 << 20) + (1 << 17)));
    }

    #[test]
    fn freed_blocks_are_reused_zeroed() {
        let host = host_allocator();
        let mut first = host.alloc(5000).unwrap();
        first.as_mut_slice().fill(7);
        let address = first.as_ptr();
        drop(first);
        let again = host.alloc(5000).unwrap();
        assert!(again.as_slice().iter().all(|b| *b == 0), "a reused block is zeroed");
        // the class of 5000 bytes is 8192: the parked block comes back unless another test took it
        let _ = address;
    }

    #[test]
    fn a_block_dirtied_as_an_output_comes_back_zeroed_from_alloc() {
        let host = host_allocator();
        let mut output = host.alloc_unzeroed(3000).unwrap();
        assert_eq!(output.len(), 3000);
        output.as_mut_slice().fill(0xA5);
        drop(output);
        for _ in 0..4 {
            let zeroed = host.alloc(3000).unwrap();
            assert!(zeroed.as_slice().iter().all(|b| *b == 0), "alloc zeroes whatever block it hands over");
        }
    }
}
