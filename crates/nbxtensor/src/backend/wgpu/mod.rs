//! The portable GPU backend through wgpu: each graphics API a device kind of its own —
//! `vulkan:N` (Linux, Windows, Android; Mesa's lavapipe on the CPU) and `metal:N` (Apple).
//!
//! The adapter's facts are read when its device opens (`adapter.rs`), memory is a wgpu
//! buffer per block named by a virtual address (`memory.rs`), commands are queued in one
//! encoder per device and submitted when the host waits, a capture records them and a replay
//! submits them as one command buffer (`queue.rs`). Kernels are WGSL composed per (op, dtypes)
//! from the pieces of `wgsl.rs` and compiled by naga at their first use (`pipeline.rs`); every
//! dtype is read and written as 32-bit words, the floats computed in float32. Every op's meaning
//! and cost is its spec's (`ops::spec`); a family here only launches it.

mod adapter;
mod attention;
mod binary;
mod cast;
mod copy;
mod decode;
mod elementwise;
mod gather;
mod gpu;
mod math;
mod matmul;
mod memory;
mod pipeline;
mod queue;
mod reduce;
mod rows;
mod spirv;
mod unary;
mod wgsl;

pub use adapter::{adapter_facts, unavailable_reason, AdapterFacts, Api};
pub use gpu::{gpu, Gpu};
pub use memory::{WgpuBlock, ALIGNMENT, OFFSET_BITS};
pub use queue::WgpuGraph;

use super::device::{Backend, Block, Graph};
use super::{LaunchTable, Peaks};
use crate::kernel::{KernelError, Launch, Result};
use crate::memory::{Device, DeviceKind, MemoryError};
use crate::ops::spec::Spec;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// `DLDeviceType` of Vulkan buffers.
pub const KDL_VULKAN: i32 = 7;
/// `DLDeviceType` of Metal buffers.
pub const KDL_METAL: i32 = 8;

/// The wgpu backend of one device.
pub struct WgpuBackend {
    api: Api,
    index: u32,
}

/// The launches of the WGSL kernels (shared by every wgpu device).
pub fn launches() -> &'static LaunchTable {
    static TABLE: OnceLock<LaunchTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = LaunchTable::new("wgpu");
        copy::register_all(&mut table);
        cast::register_all(&mut table);
        binary::register_all(&mut table);
        reduce::register_all(&mut table);
        rows::register_all(&mut table);
        unary::register_all(&mut table);
        matmul::register_all(&mut table);
        gather::register_all(&mut table);
        attention::register_all(&mut table);
        decode::register_all(&mut table);
        table
    })
}

/// Registers `run` for `op` on `dtypes`: the launch finds the device of its tensors (refusing
/// a tensor on another device, naming the op) and runs there.
fn register<S: Spec>(
    table: &mut LaunchTable,
    op: &'static str,
    dtypes: &[crate::dtype::DType],
    run: fn(&Gpu, &S, Launch<'_>) -> Result<()>,
) {
    table.register(op, dtypes, move |spec: &S, launch: Launch<'_>| {
        let gpu = gpu_of(spec.op(), &launch)?;
        run(gpu, spec, launch)
    });
}

/// As [`register`], with the backend's own workspace for the op (or a check of the call when
/// it is declared).
fn register_with_workspace<S: Spec>(
    table: &mut LaunchTable,
    op: &'static str,
    dtypes: &[crate::dtype::DType],
    run: fn(&Gpu, &S, Launch<'_>) -> Result<()>,
    workspace: fn(&S, &[crate::kernel::TensorMeta]) -> Result<u64>,
) {
    let launch = move |spec: &S, launch: Launch<'_>| {
        let gpu = gpu_of(spec.op(), &launch)?;
        run(gpu, spec, launch)
    };
    table.register_with_workspace(op, dtypes, launch, workspace);
}

/// The device a launch runs on: its tensors', all on one wgpu device.
fn gpu_of(op: &str, launch: &Launch<'_>) -> Result<&'static Gpu> {
    let mut tensors = launch.inputs.iter().chain(launch.outputs);
    let Some(first) = tensors.clone().next() else {
        return Err(KernelError::Invalid(format!("{op}: a launch without tensors")));
    };
    let device = first.device();
    let api = Api::of(device.kind)
        .ok_or_else(|| KernelError::Invalid(format!("{op}: a wgpu kernel was given a tensor on {device}")))?;
    if let Some(other) = tensors.find(|t| t.device() != device) {
        return Err(KernelError::Invalid(format!(
            "{op}: a wgpu kernel was given tensors on {device} and {}",
            other.device()
        )));
    }
    gpu(api, device.index).map_err(KernelError::Device)
}

/// The wgpu backend of device `index` of `api` (made without opening the device).
pub fn wgpu_backend(api: Api, index: u32) -> &'static WgpuBackend {
    static BACKENDS: OnceLock<Mutex<HashMap<(Api, u32), &'static WgpuBackend>>> = OnceLock::new();
    let mut backends = BACKENDS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    backends.entry((api, index)).or_insert_with(|| Box::leak(Box::new(WgpuBackend { api, index })))
}

/// The device a DLPack producer's `(device_type, device_id)` names, when it is a wgpu API's:
/// refused, saying why (a wgpu buffer has no address another library could hand over); `None`
/// for another type.
pub fn device_of_dlpack(device_type: i32, device_id: i32) -> Option<Result<Device, String>> {
    let kind = match device_type {
        KDL_VULKAN => DeviceKind::Vulkan,
        KDL_METAL => DeviceKind::Metal,
        _ => return None,
    };
    Some(Err(format!(
        "DLPack {} memory (device {device_id}) cannot be imported: wgpu owns its buffers and takes no foreign ones; copy through the host",
        kind.as_str()
    )))
}

impl WgpuBackend {
    fn gpu(&self) -> std::result::Result<&'static Gpu, MemoryError> {
        gpu(self.api, self.index).map_err(MemoryError::UnknownDevice)
    }
}

impl Backend for WgpuBackend {
    fn name(&self) -> &'static str {
        "wgpu"
    }

    fn device(&self) -> Device {
        Device { kind: self.api.kind(), index: self.index }
    }

    fn launches(&self) -> &'static LaunchTable {
        launches()
    }

    fn host_addressable(&self) -> bool {
        false
    }

    fn alignment(&self) -> u64 {
        ALIGNMENT
    }

    fn alloc(&self, bytes: usize) -> std::result::Result<Block, MemoryError> {
        Ok(Box::new(self.gpu()?.alloc(bytes)?))
    }

    fn alloc_exact(&self, bytes: usize) -> std::result::Result<Block, MemoryError> {
        Ok(Box::new(self.gpu()?.alloc_exact(bytes)?))
    }

    fn allocated_bytes(&self, bytes: u64) -> u64 {
        memory::taken(bytes)
    }

    fn pooled_bytes(&self, bytes: u64) -> u64 {
        memory::pooled(bytes)
    }

    fn in_use(&self) -> u64 {
        self.gpu().map_or(0, |g| g.in_use.load(std::sync::atomic::Ordering::SeqCst))
    }

    fn limit(&self) -> std::result::Result<u64, MemoryError> {
        self.gpu()?.limit()
    }

    unsafe fn zero(&self, address: u64, len: usize) -> std::result::Result<(), MemoryError> {
        self.gpu()?.zero(address, len)
    }

    unsafe fn write(&self, address: u64, bytes: &[u8]) -> std::result::Result<(), MemoryError> {
        self.gpu()?.write(address, bytes)
    }

    unsafe fn read(&self, address: u64, out: &mut [u8]) -> std::result::Result<(), MemoryError> {
        self.gpu()?.read(address, out)
    }

    unsafe fn copy_within(&self, dst: u64, src: u64, len: usize) -> std::result::Result<(), MemoryError> {
        self.gpu()?.copy_within(dst, src, len)
    }

    fn synchronize(&self) -> Result<()> {
        let gpu = self.gpu().map_err(|e| KernelError::Device(e.to_string()))?;
        gpu.synchronize().map_err(KernelError::Device)
    }

    fn dlpack_device(&self) -> (i32, i32) {
        let code = match self.api {
            Api::Vulkan => KDL_VULKAN,
            Api::Metal => KDL_METAL,
        };
        (code, self.index as i32)
    }

    fn dlpack_exportable(&self) -> std::result::Result<(), String> {
        Err(format!(
            "{} memory cannot be exported: a wgpu buffer has no address another library could read; copy it to the host first",
            self.device()
        ))
    }

    fn dlpack_export_stream(&self, _: Option<i64>) -> std::result::Result<(), String> {
        Ok(()) // commands run in submission order; an export is refused by `dlpack_exportable`
    }

    fn dlpack_import_stream(&self) -> std::result::Result<Option<i64>, String> {
        Ok(None)
    }

    fn capture(&self, queue: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Graph>>> {
        let gpu = self.gpu().map_err(|e| KernelError::Device(e.to_string()))?;
        Ok(Some(Box::new(gpu.capture(queue)?)))
    }

    fn peaks(&self) -> Result<Peaks> {
        let gpu = self.gpu().map_err(|e| KernelError::Device(e.to_string()))?;
        if gpu.facts.software {
            // a software adapter computes on the host: its rates are the host's
            return super::cpu::cpu().peaks();
        }
        let (vendor, name) = crate::settings::host::described(&gpu.facts.name)
            .map_err(|e| KernelError::Invalid(format!("{}: {e}", gpu.label())))?;
        Peaks::of_device(vendor, name)
    }
}
