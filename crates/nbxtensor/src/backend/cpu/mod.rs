//! The CPU backend: host memory from the host allocator, launches over it multithreaded on
//! the library's pool, capture as the bound launch list itself. Launch families live one per
//! file and register their ops in the table.

mod attention;
mod binary;
mod broadcast;
pub mod buffers;
mod cast;
mod compare;
mod complex;
mod copy;
mod create;
mod decode;
mod exp;
mod flags;
mod gather;
mod gelu;
mod lane_sums;
mod linalg;
mod math;
mod matmul;
mod norm;
mod peaks;
mod quant;
mod reduce;
mod reduce_loop;
mod rope;
mod rows;
mod sample;
mod scan;
mod select;
mod softmax;
mod sort;
mod unary;
mod widen;

pub use matmul::packed_native;

use super::device::{Backend, Block, DeviceBlock, Graph};
use super::{LaunchTable, Peaks};
use crate::kernel::KernelError;
use crate::memory::{host_allocator, Allocator, Device, HostBlock, MemoryError, HOST_ALIGNMENT};
use crate::tensor::dlpack::KDL_CPU;
use std::sync::OnceLock;

/// The CPU backend (one per process).
pub struct CpuBackend {
    table: LaunchTable,
}

/// The CPU backend, its table built at first use.
pub fn cpu() -> &'static CpuBackend {
    static CPU: OnceLock<CpuBackend> = OnceLock::new();
    CPU.get_or_init(|| {
        let mut table = LaunchTable::new("cpu");
        unary::register(&mut table);
        copy::register(&mut table);
        matmul::register(&mut table);
        gather::register(&mut table);
        rope::register(&mut table);
        attention::register(&mut table);
        decode::register(&mut table);
        sample::register(&mut table);
        quant::register(&mut table);
        binary::register(&mut table);
        compare::register(&mut table);
        select::register(&mut table);
        cast::register(&mut table);
        reduce::register(&mut table);
        softmax::register(&mut table);
        norm::register(&mut table);
        create::register(&mut table);
        scan::register(&mut table);
        sort::register(&mut table);
        linalg::register(&mut table);
        CpuBackend { table }
    })
}

impl DeviceBlock for HostBlock {
    fn address(&self) -> u64 {
        self.as_ptr() as u64
    }

    fn len(&self) -> usize {
        HostBlock::len(self)
    }
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn device(&self) -> Device {
        Device::CPU
    }

    fn launches(&self) -> &'static LaunchTable {
        &cpu().table
    }

    fn host_addressable(&self) -> bool {
        true
    }

    fn alignment(&self) -> u64 {
        HOST_ALIGNMENT as u64
    }

    fn alloc(&self, bytes: usize) -> Result<Block, MemoryError> {
        Ok(Box::new(host_allocator().alloc(bytes)?))
    }

    fn alloc_output(&self, bytes: usize) -> Result<Block, MemoryError> {
        Ok(Box::new(host_allocator().alloc_unzeroed(bytes)?))
    }

    fn alloc_exact(&self, bytes: usize) -> Result<Block, MemoryError> {
        Ok(Box::new(host_allocator().alloc_exact(bytes)?))
    }

    fn allocated_bytes(&self, bytes: u64) -> u64 {
        usize::try_from(bytes).map_or(u64::MAX, |b| host_allocator().exact_footprint(b) as u64)
    }

    fn pooled_bytes(&self, bytes: u64) -> u64 {
        usize::try_from(bytes).map_or(u64::MAX, |b| host_allocator().footprint(b) as u64)
    }

    fn in_use(&self) -> u64 {
        host_allocator().in_use()
    }

    fn limit(&self) -> Result<u64, MemoryError> {
        host_allocator().limit()
    }

    unsafe fn zero(&self, address: u64, len: usize) -> Result<(), MemoryError> {
        // SAFETY: the caller vouches for the range (a live host block used by nothing else).
        unsafe { std::ptr::write_bytes(address as *mut u8, 0, len) };
        Ok(())
    }

    unsafe fn write(&self, address: u64, bytes: &[u8]) -> Result<(), MemoryError> {
        // SAFETY: as in `zero`; a host buffer never overlaps the caller's slice.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, bytes.len()) };
        Ok(())
    }

    unsafe fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        // SAFETY: the caller vouches that the range is readable.
        unsafe { std::ptr::copy_nonoverlapping(address as *const u8, out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    unsafe fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), MemoryError> {
        // SAFETY: as in `zero` and `read`; the ranges do not overlap (the caller's contract).
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len) };
        Ok(())
    }

    fn synchronize(&self) -> Result<(), KernelError> {
        // host launches have finished when they return
        Ok(())
    }

    fn dlpack_device(&self) -> (i32, i32) {
        (KDL_CPU, 0)
    }

    fn dlpack_exportable(&self) -> Result<(), String> {
        Ok(()) // host memory is readable by any consumer
    }

    fn dlpack_export_stream(&self, stream: Option<i64>) -> Result<(), String> {
        match stream {
            None => Ok(()),
            Some(_) => Err("__dlpack__: a host tensor takes no stream (stream must be None)".into()),
        }
    }

    fn dlpack_import_stream(&self) -> Result<Option<i64>, String> {
        Ok(None)
    }

    fn capture(&self, _: &mut dyn FnMut() -> Result<(), KernelError>) -> Result<Option<Box<dyn Graph>>, KernelError> {
        // the bound launch list is the CPU's capture: it replays itself
        Ok(None)
    }

    fn peaks(&self) -> Result<Peaks, KernelError> {
        peaks::measure()
    }
}
