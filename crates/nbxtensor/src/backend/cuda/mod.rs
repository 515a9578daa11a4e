//! The CUDA backend: device memory through cudarc with dynamic loading ([`memory`]), kernels
//! written in CUDA C (`kernels/*.cu`), their machine code shipped in the build for the
//! architectures of `data/shipped_cuda.yml` (when built with `NBX_SHIP_CUDA`) or compiled by NVRTC
//! for the device's exact architecture at first use and cached on disk, matrix products through cuBLASLt, capture through CUDA
//! graphs.
//!
//! Every op's meaning and cost is its spec's (`ops::spec`); a family here only launches it,
//! and declares the device's own workspace where it needs one (cuBLASLt's, the decode
//! partials of attention and of decode attention, the two-pass reductions, the index check of the gathers). The launch
//! table needs no device: a dry run traces and prices CUDA programs on a machine without one;
//! a launch looks the device up and says why when it is absent.

mod addressing;
mod attention;
mod binary;
mod blas;
mod cast;
mod compare;
mod compile;
mod copy;
mod create;
pub mod cudnn;
mod decode;
mod dims;
mod gather;
mod gemv;
mod graph;
mod grid;
mod indexer;
mod kernel_files;
mod launch;
pub mod memory;
mod norm;
mod quant;
mod random;
mod recent;
mod reduce;
mod rope;
mod sample;
mod scan;
mod select;
mod softmax;
mod sort;
mod source;
mod tensor_map;
mod tuning;
mod unary;

pub use blas::WORKSPACE_BYTES as MATMUL_WORKSPACE_BYTES;
pub use compile::{compile, cubin, nvrtc_version, Origin};
pub use dims::{
    aligned16, grid_extent, merged, merged_layout, row_plan, RowPlan, ROW_CHUNKS, ROW_ELEMENTS, ROW_GROUP_MAX,
};
pub use graph::CudaGraph;
pub use grid::{elementwise_grid, THREADS};
pub use kernel_files::OPTIONS;
pub use launch::{
    device_context, device_ptr, function, overlapped_launches, set_overlapped_launches, Args, CudaFunction,
};
pub use random::{random_uniform_f32, random_words};
pub use source::{KernelSource, Layout, Shipped, MAX_DIMS, PRELUDE, SHIPPED_ARCHITECTURES};

use super::device::{Backend, Block, DeviceBlock, Graph};
use super::{LaunchTable, Peaks};
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::memory::{Allocator, Device, DeviceKind, MemoryError};
use crate::ops::spec::{Spec, FLOATS};
use memory::{cuda_allocator, CudaBlock, DEVICE_ALIGNMENT};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// `DLDeviceType` of CUDA device memory.
pub const KDL_CUDA: i32 = 2;
/// `DLDeviceType` of pinned host memory (readable as host memory).
pub const KDL_CUDA_HOST: i32 = 3;

/// The CUDA backend of one device.
pub struct CudaBackend {
    index: u32,
}

/// The launches of the CUDA kernels (shared by every device).
pub fn launches() -> &'static LaunchTable {
    static TABLE: OnceLock<LaunchTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = LaunchTable::new("cuda");
        unary::register_all(&mut table);
        blas::register_all(&mut table);
        binary::register_all(&mut table);
        compare::register_all(&mut table);
        select::register_all(&mut table);
        cast::register_all(&mut table);
        copy::register_all(&mut table);
        gather::register_all(&mut table);
        reduce::register_all(&mut table);
        softmax::register_all(&mut table);
        norm::register_all(&mut table);
        rope::register_all(&mut table);
        attention::register_all(&mut table);
        decode::register_all(&mut table);
        sample::register_all(&mut table);
        quant::register_all(&mut table);
        create::register_all(&mut table);
        scan::register_all(&mut table);
        sort::register_all(&mut table);
        table
    })
}

/// Every CUDA source of the crate.
pub fn sources() -> Vec<&'static KernelSource> {
    source::ALL.to_vec()
}

/// The dtypes of `dtypes` the GPU kernels serve: all but float64 (and the packed, 8-bit
/// float and complex dtypes, which no elementwise kernel here holds).
fn served(dtypes: &[DType]) -> Vec<DType> {
    dtypes
        .iter()
        .copied()
        .filter(|d| FLOATS.contains(d) || matches!(d.kind(), Kind::Int | Kind::Uint | Kind::Bool))
        .collect()
}

/// Refuses a launch given a tensor that is not on a CUDA device, naming the op.
fn on_cuda(op: &str, launch: &Launch<'_>) -> Result<()> {
    match launch.inputs.iter().chain(launch.outputs).find(|t| t.device().kind != DeviceKind::Cuda) {
        Some(t) => Err(KernelError::Invalid(format!("{op}: a CUDA kernel was given a tensor on {}", t.device()))),
        None => Ok(()),
    }
}

/// Registers `run` for `op` on `dtypes`, behind the device check.
fn register<S: Spec>(
    table: &mut LaunchTable,
    op: &'static str,
    dtypes: &[DType],
    run: fn(&S, Launch<'_>) -> Result<()>,
) {
    table.register(op, dtypes, move |spec: &S, launch: Launch<'_>| noting(spec, launch, run));
}

/// Runs an op's launch on CUDA and notes what it may have written (`recent.rs`), whether it
/// succeeded or not.
fn noting<S: Spec>(spec: &S, launch: Launch<'_>, run: fn(&S, Launch<'_>) -> Result<()>) -> Result<()> {
    on_cuda(spec.op(), &launch)?;
    let (inputs, outputs) = (launch.inputs, launch.outputs);
    let workspace = (launch.workspace.device_ptr(), launch.workspace.len());
    let result = run(spec, launch);
    if let Some(Ok(context)) = outputs.first().or(inputs.first()).map(|t| device_context(t.device())) {
        recent::note_op(context.stream_handle(), &[inputs, outputs], workspace);
    }
    result
}

/// As [`register`], with the device's own workspace for the op.
fn register_with_workspace<S: Spec>(
    table: &mut LaunchTable,
    op: &'static str,
    dtypes: &[DType],
    run: fn(&S, Launch<'_>) -> Result<()>,
    workspace: fn(&S, &[TensorMeta]) -> Result<u64>,
) {
    let launch = move |spec: &S, launch: Launch<'_>| noting(spec, launch, run);
    table.register_with_workspace(op, dtypes, launch, workspace);
}

/// The CUDA backend of device `index` (made without touching the device).
pub fn cuda_backend(index: u32) -> &'static CudaBackend {
    static BACKENDS: OnceLock<Mutex<HashMap<u32, &'static CudaBackend>>> = OnceLock::new();
    let mut backends = BACKENDS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    backends.entry(index).or_insert_with(|| Box::leak(Box::new(CudaBackend { index })))
}

/// The device a DLPack producer's `(device_type, device_id)` names, when it is CUDA's: CUDA
/// memory, or pinned host memory (read as the host's); `None` for another type.
pub fn device_of_dlpack(device_type: i32, device_id: i32) -> Option<Result<Device, String>> {
    match device_type {
        KDL_CUDA_HOST => Some(Ok(Device::CPU)),
        KDL_CUDA => Some(
            u32::try_from(device_id)
                .map(|index| Device { kind: DeviceKind::Cuda, index })
                .map_err(|_| format!("DLPack CUDA device id {device_id} is negative")),
        ),
        _ => None,
    }
}

impl DeviceBlock for CudaBlock {
    fn address(&self) -> u64 {
        self.device_ptr()
    }

    fn len(&self) -> usize {
        CudaBlock::len(self)
    }
}

impl Graph for CudaGraph {
    fn launch(&self) -> Result<()> {
        CudaGraph::launch(self)
    }

    fn synchronize(&self) -> Result<()> {
        CudaGraph::synchronize(self)
    }

    fn nodes(&self) -> usize {
        CudaGraph::nodes(self)
    }
}

impl CudaBackend {
    fn allocator(&self) -> Result<&'static memory::CudaAllocator, MemoryError> {
        cuda_allocator(self.index)
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> Device {
        Device { kind: DeviceKind::Cuda, index: self.index }
    }

    fn launches(&self) -> &'static LaunchTable {
        launches()
    }

    fn host_addressable(&self) -> bool {
        false
    }

    fn alignment(&self) -> u64 {
        DEVICE_ALIGNMENT
    }

    fn alloc(&self, bytes: usize) -> Result<Block, MemoryError> {
        Ok(Box::new(self.allocator()?.alloc(bytes)?))
    }

    fn alloc_exact(&self, bytes: usize) -> Result<Block, MemoryError> {
        Ok(Box::new(self.allocator()?.alloc_exact(bytes)?))
    }

    fn allocated_bytes(&self, bytes: u64) -> u64 {
        // an exact block counts its bytes against the limit, to the driver's granularity
        bytes
    }

    fn pooled_bytes(&self, bytes: u64) -> u64 {
        usize::try_from(bytes).map_or(u64::MAX, |b| memory::size_class(b) as u64)
    }

    fn in_use(&self) -> u64 {
        self.allocator().map_or(0, |a| a.in_use())
    }

    fn limit(&self) -> Result<u64, MemoryError> {
        self.allocator()?.limit()
    }

    unsafe fn zero(&self, address: u64, len: usize) -> Result<(), MemoryError> {
        self.allocator()?.zero(address, len)
    }

    unsafe fn write(&self, address: u64, bytes: &[u8]) -> Result<(), MemoryError> {
        self.allocator()?.write(address, bytes)
    }

    unsafe fn read(&self, address: u64, out: &mut [u8]) -> Result<(), MemoryError> {
        self.allocator()?.read(address, out)
    }

    unsafe fn copy_within(&self, dst: u64, src: u64, len: usize) -> Result<(), MemoryError> {
        self.allocator()?.copy_within(dst, src, len)
    }

    fn synchronize(&self) -> Result<()> {
        device_context(self.device())?.synchronize().map_err(KernelError::Device)
    }

    fn dlpack_device(&self) -> (i32, i32) {
        (KDL_CUDA, self.index as i32)
    }

    fn dlpack_exportable(&self) -> Result<(), String> {
        Ok(()) // device pointers are what CUDA consumers read
    }

    fn dlpack_export_stream(&self, stream: Option<i64>) -> Result<(), String> {
        // the consumer's stream must see every write queued so far (legacy default when absent)
        let consumer = match stream {
            None => 1,
            Some(-1) => return Ok(()),
            Some(0) => {
                return Err("__dlpack__: stream 0 is ambiguous for CUDA; pass 1 (legacy default), 2 (per-thread default), a stream handle, or -1".into())
            }
            Some(handle) if handle > 0 => handle as u64,
            Some(_) => return Err("__dlpack__: stream must be None, -1 or a positive stream handle".into()),
        };
        memory::context(self.index)?.order_before(consumer)
    }

    fn dlpack_import_stream(&self) -> Result<Option<i64>, String> {
        Ok(Some(memory::context(self.index)?.stream_handle() as i64))
    }

    fn capture(&self, queue: &mut dyn FnMut() -> Result<()>) -> Result<Option<Box<dyn Graph>>> {
        Ok(Some(Box::new(CudaGraph::capture(self.device(), queue)?)))
    }

    fn peaks(&self) -> Result<Peaks> {
        let driver = memory::driver().map_err(KernelError::Device)?;
        let info = driver.devices.get(self.index as usize).ok_or_else(|| {
            KernelError::Device(format!("cuda:{} is not a device here ({} found)", self.index, driver.devices.len()))
        })?;
        let (vendor, name) =
            crate::settings::host::described(&info.name).map_err(|e| KernelError::Invalid(e.to_string()))?;
        Peaks::of_device(vendor, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source compiles for Hopper (sm_90) and Ampere (sm_80): an architecture the build
    /// ships was compiled by the build (`compile::tests` checks those images); the others are
    /// compiled here by NVRTC, which runs without a GPU, wherever libnvrtc is found (where it is
    /// not, the test says so and passes).
    #[test]
    fn every_source_compiles() {
        let missing: Vec<&str> =
            ["sm_90", "sm_80"].into_iter().filter(|a| !SHIPPED_ARCHITECTURES.contains(a)).collect();
        if missing.is_empty() {
            eprintln!("sm_90 and sm_80 are shipped by this build");
            return;
        }
        if let Err(why) = nvrtc_version() {
            eprintln!("skipped: {why}");
            return;
        }
        for source in sources() {
            for &arch in &missing {
                let cubin = compile(source, arch).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(&cubin[..4], b"\x7fELF", "{}: not an ELF cubin", source.name);
            }
        }
    }

    /// Every entry of the launch table names an op of the catalogue and a dtype it defines
    /// (the registration asserts it), and its kernels' names carry the dtype's launch key.
    #[test]
    fn the_table_serves_the_catalogue() {
        let table = cuda_backend(0).launches();
        for (op, dtypes) in table.ops() {
            let defined = crate::ops::spec::op(op).unwrap().dtypes();
            assert!(dtypes.iter().all(|d| defined.contains(d)), "{op}");
        }
        assert!(table.has("sin", DType::Bfloat16) && table.has("bitwise_xor", DType::Bool));
        assert!(!table.has("exp", DType::Float64));
    }

    /// No CUDA kernel computes with complex numbers: every op the specs define on complex64 or
    /// complex128 (but those that only move bytes: casts and copies, gathers, selection), and
    /// real, imag and conj on every dtype, are refused by the table naming op, dtype and
    /// backend (no GPU needed: the table is built without one).
    #[test]
    fn complex_is_refused_by_name() {
        let table = cuda_backend(0).launches();
        let mut refused = 0;
        for def in crate::ops::spec::catalogue().iter().filter(|d| !matches!(d.family, "cast" | "gather" | "select")) {
            for &dtype in def.dtypes() {
                let complex = dtype.kind() == Kind::Complex;
                if !(complex || matches!(def.name, "real" | "imag" | "conj")) || table.has(def.name, dtype) {
                    assert!(!complex, "{}: served on {dtype}", def.name);
                    continue;
                }
                let err = table.bind(def.name, dtype, &crate::kernel::Attrs::new()).map(drop).unwrap_err();
                assert!(matches!(err, KernelError::Missing { .. }), "{}: {err}", def.name);
                let text = err.to_string();
                assert!(text.contains(def.name) && text.contains(dtype.name()) && text.contains("cuda"), "{text}");
                refused += 1;
            }
        }
        assert!(refused > 40, "only {refused} complex pairs refused");
    }
}
