//! Device memory: a wgpu buffer per block, counted against the memory limit. An eager op's
//! block takes a size class (`memory::size_class`) and, freed, waits in a pool for the next
//! request of its class (up to a quarter of the limit), as the CUDA allocator's do: the driver
//! is not asked for memory at every call. A program's arena is one exact, unpooled block.
//! wgpu buffers have no addresses, so each block is named by a virtual one: its number in the
//! high bits, the byte within it in the low [`OFFSET_BITS`]. The layers above add offsets to it
//! as they would to a device address; [`Gpu::locate`] turns one back into (buffer, byte).
//!
//! Host copies go through staging buffers (`write_buffer`, and a mapped read-back buffer),
//! after the commands queued before them.

use super::gpu::Gpu;
use super::queue::Command;
use crate::backend::device::DeviceBlock;
use crate::memory::MemoryError;
use crate::settings::memory_limit;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Bits of a virtual address that hold the byte within its block: a block holds less than
/// 2^40 bytes.
pub const OFFSET_BITS: u32 = 40;

/// The alignment of every block's size and of a program's planned offsets (a multiple of every
/// adapter's storage offset alignment, which WebGPU caps at 256).
pub const ALIGNMENT: u64 = 256;

/// wgpu's copy granularity: host and buffer copies move whole 4-byte words.
const WORD: u64 = 4;

/// A block: one buffer, back in its pool (or freed) when dropped.
pub struct WgpuBlock {
    gpu: &'static Gpu,
    number: u64,
    len: usize,
    taken: u64,
    pooled: bool,
}

impl DeviceBlock for WgpuBlock {
    fn address(&self) -> u64 {
        self.number << OFFSET_BITS
    }

    fn len(&self) -> usize {
        self.len
    }
}

impl Drop for WgpuBlock {
    fn drop(&mut self) {
        if self.taken == 0 {
            return;
        }
        let gpu = self.gpu;
        let buffer = gpu.blocks.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.number);
        gpu.in_use.fetch_sub(self.taken, Ordering::SeqCst);
        let park_up_to = gpu.limit().map_or(0, |l| l / 4);
        if let (true, Some(buffer)) = (self.pooled, buffer) {
            // the queue orders every later use after the commands that used it
            if gpu.parked_bytes.load(Ordering::SeqCst) + self.taken <= park_up_to {
                gpu.parked.lock().unwrap_or_else(|e| e.into_inner()).entry(self.taken).or_default().push(buffer);
                gpu.parked_bytes.fetch_add(self.taken, Ordering::SeqCst);
            }
        }
        // otherwise wgpu frees the buffer once the commands that use it have run
    }
}

/// The bytes an exact block of `bytes` (an arena) takes: its size rounded up to [`ALIGNMENT`].
pub fn taken(bytes: u64) -> u64 {
    bytes.div_ceil(ALIGNMENT).saturating_mul(ALIGNMENT)
}

/// The bytes a pooled block of `bytes` takes: its size class.
pub fn pooled(bytes: u64) -> u64 {
    usize::try_from(bytes).map_or(u64::MAX, |b| crate::memory::size_class(b) as u64)
}

fn round_down(x: u64, to: u64) -> u64 {
    x / to * to
}

impl Gpu {
    fn memory_error(&self, what: String) -> MemoryError {
        MemoryError::UnknownDevice(format!("{}: {what}", self.label()))
    }

    /// The device's memory: the Vulkan device-local heap, or the host's where the adapter runs
    /// on the host (lavapipe) or shares its memory (Apple); a device whose memory no source
    /// gives is refused naming it.
    pub fn memory(&self) -> Result<u64, MemoryError> {
        if let Some(bytes) = self.facts.memory {
            return Ok(bytes);
        }
        let shares = self.facts.software
            || crate::facts::recognise(&self.facts.name)
                .ok()
                .and_then(|(vendor, name)| crate::facts::device_file(vendor, name).ok())
                .is_some_and(|file| file.shares_host_memory);
        if shares {
            return Ok(crate::settings::host_memory::memory_state()?.total);
        }
        Err(self.memory_error(format!(
            "the adapter {} does not say how much memory it has, and no device file names it: set a memory limit",
            self.facts.name
        )))
    }

    /// The limit in force: the setting, or the device's memory.
    pub fn limit(&self) -> Result<u64, MemoryError> {
        Ok(memory_limit::effective_limit(self.memory()?))
    }

    /// A block of `bytes` of its size class, from the pool where one waits there; refused
    /// over the memory limit or over the adapter's largest buffer.
    pub fn alloc(&'static self, bytes: usize) -> Result<WgpuBlock, MemoryError> {
        self.allocate(bytes, pooled(bytes as u64), true)
    }

    /// A block of exactly `bytes` (rounded to [`ALIGNMENT`]), not pooled: a program's arena.
    pub fn alloc_exact(&'static self, bytes: usize) -> Result<WgpuBlock, MemoryError> {
        self.allocate(bytes, taken(bytes as u64), false)
    }

    fn allocate(&'static self, bytes: usize, taken: u64, pooled: bool) -> Result<WgpuBlock, MemoryError> {
        if taken == 0 {
            return Ok(WgpuBlock { gpu: self, number: 0, len: 0, taken: 0, pooled });
        }
        if taken >= 1 << OFFSET_BITS || taken > self.facts.max_buffer {
            return Err(self.memory_error(format!(
                "{bytes} bytes is more than one buffer of this adapter holds ({} bytes, its max_buffer_size)",
                self.facts.max_buffer.min((1 << OFFSET_BITS) - 1)
            )));
        }
        let limit = self.limit()?;
        let in_use = self.in_use.fetch_add(taken, Ordering::SeqCst);
        if in_use.saturating_add(taken) > limit {
            self.in_use.fetch_sub(taken, Ordering::SeqCst);
            return Err(MemoryError::OverLimit { device: self.label(), asked: bytes as u64, in_use, limit });
        }
        let parked = pooled.then(|| self.parked.lock().unwrap_or_else(|e| e.into_inner()).get_mut(&taken)?.pop());
        let buffer = match parked.flatten() {
            Some(buffer) => {
                self.parked_bytes.fetch_sub(taken, Ordering::SeqCst);
                buffer
            }
            None => {
                let mut made = self.create(taken);
                if made.is_none() && self.parked_bytes.load(Ordering::SeqCst) > 0 {
                    // the driver refused: give the parked buffers back and ask again
                    self.parked.lock().unwrap_or_else(|e| e.into_inner()).clear();
                    self.parked_bytes.store(0, Ordering::SeqCst);
                    made = self.create(taken);
                }
                match made {
                    Some(buffer) => Arc::new(buffer),
                    None => {
                        self.in_use.fetch_sub(taken, Ordering::SeqCst);
                        return Err(MemoryError::Refused { device: self.label(), asked: bytes as u64 });
                    }
                }
            }
        };
        let number = self.block_number();
        self.blocks.lock().unwrap_or_else(|e| e.into_inner()).insert(number, buffer);
        Ok(WgpuBlock { gpu: self, number, len: bytes, taken, pooled })
    }

    /// A new buffer of `size` bytes, `None` where the driver is out of memory.
    fn create(&self, size: u64) -> Option<wgpu::Buffer> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: None,
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        pollster::block_on(scope.pop()).is_none().then_some(buffer)
    }

    /// The buffer holding virtual `address`, and the byte within it; refused (naming the
    /// address) when no live block holds it.
    pub fn locate(&self, address: u64) -> Result<(Arc<wgpu::Buffer>, u64), MemoryError> {
        let (number, byte) = (address >> OFFSET_BITS, address & ((1 << OFFSET_BITS) - 1));
        let blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        match blocks.get(&number) {
            Some(buffer) if byte <= buffer.size() => Ok((Arc::clone(buffer), byte)),
            _ => Err(MemoryError::OutOfBounds(format!(
                "{}: address {address:#x} lies in no live block of the device",
                self.label()
            ))),
        }
    }

    /// Copies host `bytes` to `address`, after the commands queued before.
    pub fn write(&self, address: u64, bytes: &[u8]) -> Result<(), MemoryError> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.refuse_while_recording("a host write")?;
        let (buffer, at) = self.locate(address)?;
        let end = at + bytes.len() as u64;
        let (start, stop) = (round_down(at, WORD), end.div_ceil(WORD) * WORD);
        self.flush().map_err(|e| self.memory_error(e))?;
        if (start, stop) == (at, end) {
            self.queue.write_buffer(&buffer, at, bytes);
        } else {
            // the words at the edges keep their other bytes
            let mut words = vec![0u8; (stop - start) as usize];
            self.read_buffer(&buffer, start, &mut words)?;
            words[(at - start) as usize..(end - start) as usize].copy_from_slice(bytes);
            self.queue.write_buffer(&buffer, start, &words);
        }
        Ok(())
    }

    /// Copies `out.len()` bytes at `address` to the host, after the commands queued before.
    pub fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        if out.is_empty() {
            return Ok(());
        }
        self.refuse_while_recording("a read to the host")?;
        let (buffer, at) = self.locate(address)?;
        let end = at + out.len() as u64;
        let (start, stop) = (round_down(at, WORD), end.div_ceil(WORD) * WORD);
        if (start, stop) == (at, end) {
            return self.read_buffer(&buffer, at, out);
        }
        let mut words = vec![0u8; (stop - start) as usize];
        self.read_buffer(&buffer, start, &mut words)?;
        out.copy_from_slice(&words[(at - start) as usize..(end - start) as usize]);
        Ok(())
    }

    /// Reads whole words of `buffer` from `at` through a mapped staging buffer.
    fn read_buffer(&self, buffer: &wgpu::Buffer, at: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        let len = out.len() as u64;
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("nbxtensor read-back"),
            size: len,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = self.device.create_command_encoder(&wgpu::CommandEncoderDescriptor::default());
        encoder.copy_buffer_to_buffer(buffer, at, &staging, 0, len);
        self.flush().map_err(|e| self.memory_error(e))?;
        self.queue.submit([encoder.finish()]);
        let (sender, receiver) = std::sync::mpsc::channel();
        staging.slice(..).map_async(wgpu::MapMode::Read, move |result| {
            let _ = sender.send(result);
        });
        self.wait().map_err(|e| self.memory_error(e))?;
        match receiver.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(self.memory_error(format!("reading {len} bytes back: {e}"))),
            Err(_) => return Err(self.memory_error(format!("reading {len} bytes back: the mapping never finished"))),
        }
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| self.memory_error(format!("reading {len} bytes back: {e}")))?;
            out.copy_from_slice(&view);
        }
        staging.unmap();
        Ok(())
    }

    /// Sets `len` bytes at `address` to zero, ordered with the launches (recorded by a
    /// capture like them).
    pub fn zero(&self, address: u64, len: usize) -> Result<(), MemoryError> {
        if len == 0 {
            return Ok(());
        }
        let (buffer, at) = self.locate(address)?;
        let end = at + len as u64;
        if at % WORD == 0 && end % WORD == 0 {
            return self
                .issue(Command::Clear { buffer, offset: at, size: len as u64 })
                .map_err(|e| self.memory_error(e));
        }
        self.write(address, &vec![0u8; len])
    }

    /// Copies `len` bytes from `src` to `dst` on this device, ordered with the launches: whole
    /// 16-byte vectors by the `copy` kernel's vector path, other whole words by the device's
    /// buffer copy, the rest by its bytes path.
    pub fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), MemoryError> {
        if len == 0 {
            return Ok(());
        }
        let (from, src_at) = self.locate(src)?;
        let (to, dst_at) = self.locate(dst)?;
        let size = len as u64;
        // a window reaches at most 256 bytes (the largest offset alignment) before its range
        if src_at % 16 == 0 && dst_at % 16 == 0 && size % 16 == 0 && size + 256 <= self.facts.max_binding {
            return super::copy::copy_vectors(self, dst, src, len).map_err(|e| self.memory_error(e.to_string()));
        }
        if src_at % WORD == 0 && dst_at % WORD == 0 && size % WORD == 0 {
            let copy = Command::Copy { src: from, src_offset: src_at, dst: to, dst_offset: dst_at, size };
            return self.issue(copy).map_err(|e| self.memory_error(e));
        }
        super::copy::copy_bytes(self, dst, src, len).map_err(|e| self.memory_error(e.to_string()))
    }
}
