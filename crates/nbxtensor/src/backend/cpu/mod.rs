//! The CPU backend: kernels over host memory, multithreaded on the library's pool. Kernel
//! families live one per file and register their ops in the table.

mod attention;
mod binary;
mod broadcast;
pub mod buffers;
mod cast;
mod compare;
mod copy;
mod exp;
mod flags;
mod gather;
mod gelu;
mod math;
mod matmul;
mod norm;
mod quant;
mod reduce;
mod reduce_loop;
mod rope;
mod rows;
mod select;
mod softmax;
mod unary;
mod widen;

use super::{Backend, CapabilityTable};
use crate::memory::Device;
use std::sync::OnceLock;

/// The CPU backend (one per process).
pub struct CpuBackend {
    table: CapabilityTable,
}

/// The CPU backend, its table built at first use.
pub fn cpu() -> &'static CpuBackend {
    static CPU: OnceLock<CpuBackend> = OnceLock::new();
    CPU.get_or_init(|| {
        let mut table = CapabilityTable::new("cpu");
        unary::register(&mut table);
        copy::register(&mut table);
        matmul::register(&mut table);
        gather::register(&mut table);
        rope::register(&mut table);
        attention::register(&mut table);
        quant::register(&mut table);
        binary::register(&mut table);
        compare::register(&mut table);
        select::register(&mut table);
        cast::register(&mut table);
        reduce::register(&mut table);
        softmax::register(&mut table);
        norm::register(&mut table);
        CpuBackend { table }
    })
}

impl Backend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn device(&self) -> Device {
        Device::CPU
    }

    fn table(&self) -> &CapabilityTable {
        &self.table
    }
}
