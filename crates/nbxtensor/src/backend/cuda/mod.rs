//! The CUDA backend: kernels written in CUDA C (`kernels/*.cu`), compiled by NVRTC for the
//! device's exact architecture at first use and cached on disk; matrix products through
//! cuBLASLt; capture through CUDA graphs.
//!
//! Every CUDA kernel declares the same cost as the CPU kernel of its op (the declaration is
//! the CPU kernel's, so the two backends plan alike), except where the device needs other
//! scratch (cuBLASLt's workspace), which it declares. The table needs no device: a dry run
//! traces and prices CUDA programs on a machine without one; a launch looks the device up and
//! says why when it is absent.

mod attention;
mod binary;
mod blas;
mod cast;
mod compare;
mod compile;
mod copy;
mod declared;
mod dims;
mod gather;
mod graph;
mod grid;
mod indexer;
mod launch;
mod random;
mod norm;
mod quant;
mod reduce;
mod rope;
mod select;
mod softmax;
mod source;
mod unary;

pub use blas::WORKSPACE_BYTES as MATMUL_WORKSPACE_BYTES;
pub use compile::{compile, cubin, nvrtc_version, Origin, OPTIONS};
pub use declared::{CudaKernel, DeviceWorkspace, Run};
pub use dims::{
    aligned16, grid_extent, merged, merged_layout, row_plan, RowPlan, ROW_CHUNKS, ROW_ELEMENTS, ROW_GROUP_MAX,
};
pub use graph::CudaGraph;
pub use grid::{elementwise_grid, THREADS};
pub use launch::{device_context, device_ptr, function, Args, CudaFunction};
pub use random::{random_uniform_f32, random_words};
pub use source::{KernelSource, Layout, MAX_DIMS, PRELUDE};
pub use unary::{suffix, FLOATS};

use super::{Backend, CapabilityTable};
use crate::memory::{Device, DeviceKind};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The CUDA backend of one device.
pub struct CudaBackend {
    index: u32,
    table: &'static CapabilityTable,
}

/// The ops and dtypes CUDA kernels serve (shared by every device).
pub fn catalogue() -> &'static CapabilityTable {
    static TABLE: OnceLock<CapabilityTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = CapabilityTable::new("cuda");
        unary::register(&mut table);
        blas::register(&mut table);
        binary::register(&mut table);
        compare::register(&mut table);
        select::register(&mut table);
        cast::register(&mut table);
        copy::register(&mut table);
        gather::register(&mut table);
        reduce::register(&mut table);
        softmax::register(&mut table);
        norm::register(&mut table);
        rope::register(&mut table);
        attention::register(&mut table);
        quant::register(&mut table);
        table
    })
}

/// Every CUDA source of the crate (each compiled by NVRTC at first use).
pub fn sources() -> Vec<&'static KernelSource> {
    vec![
        &unary::SOURCE,
        &binary::SOURCE,
        &binary::INTEGER_SOURCE,
        &compare::SOURCE,
        &compare::INTEGER_SOURCE,
        &select::SOURCE,
        &cast::FROM_FLOATS,
        &cast::FROM_SIGNED,
        &cast::FROM_UNSIGNED,
        &cast::FROM_BOOL,
        &copy::SOURCE,
        &gather::SOURCE,
        &random::SOURCE,
        &reduce::SOURCE,
        &softmax::SOURCE,
        &norm::SOURCE,
        &rope::SOURCE,
        &attention::SOURCE,
        &quant::SOURCE,
    ]
}

/// The CUDA backend of device `index` (made without touching the device).
pub fn cuda_backend(index: u32) -> &'static CudaBackend {
    static BACKENDS: OnceLock<Mutex<HashMap<u32, &'static CudaBackend>>> = OnceLock::new();
    let mut backends = BACKENDS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    backends.entry(index).or_insert_with(|| Box::leak(Box::new(CudaBackend { index, table: catalogue() })))
}

impl Backend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn device(&self) -> Device {
        Device { kind: DeviceKind::Cuda, index: self.index }
    }

    fn table(&self) -> &CapabilityTable {
        self.table
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every source compiles for Hopper (sm_90) and Ampere (sm_80): NVRTC runs without a GPU,
    /// so this holds wherever libnvrtc is found; where it is not, the test says so and passes.
    #[test]
    fn every_source_compiles() {
        if let Err(why) = nvrtc_version() {
            eprintln!("skipped: {why}");
            return;
        }
        for source in sources() {
            for arch in ["sm_90", "sm_80"] {
                let cubin = compile(source, arch).unwrap_or_else(|e| panic!("{e}"));
                assert_eq!(&cubin[..4], b"\x7fELF", "{}: not an ELF cubin", source.name);
            }
        }
    }
}
