//! Comparisons with numpy broadcasting on the GPU: eq, ne, lt, le, gt, ge on float32, float16
//! and bfloat16 (compared as float32, which holds the half formats exactly; NaN is unequal to
//! everything), to bool outputs: `kernels/compare.cu`.

use super::binary::storage_ptr;
use super::declared::CudaKernel;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, suffix, Args, KernelSource, FLOATS};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Launch, Result};

/// The source of the comparison kernels (after the indexer).
pub static SOURCE: KernelSource = KernelSource {
    name: "compare.cu",
    text: concat!(include_str!("kernels/indexer.cuh"), "#line 1 \"compare.cu\"\n", include_str!("kernels/compare.cu")),
};

fn run(kernel: &CudaKernel, launch: Launch<'_>) -> Result<()> {
    let (a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (op, device, shape) = (kernel.op, y.device(), y.shape());
    let name = format!("compare_{op}_{}", suffix(op, kernel.dtype)?);
    let mut args = Args::new();
    let f = if a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape {
        args.ptr(device_ptr(a)).ptr(device_ptr(b)).ptr(device_ptr(y)).i64(n);
        function(device, &SOURCE, &name)?
    } else {
        let ix = Indexer::new(op, shape, &[Operand::broadcast(op, a, shape)?, Operand::broadcast(op, b, shape)?])?;
        args.ptr(storage_ptr(a)).ptr(storage_ptr(b)).value(&ix).ptr(device_ptr(y)).i64(n).i32(narrow(n));
        function(device, &SOURCE, &format!("{name}_strided"))?
    };
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers the comparisons on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    let dtypes: Vec<DType> = FLOATS.iter().map(|(d, _)| *d).collect();
    macro_rules! op {
        ($name:literal) => {
            table.register($name, &dtypes, |dtype, attrs| CudaKernel::new($name, dtype, attrs, run))
        };
    }
    op!("eq");
    op!("ne");
    op!("lt");
    op!("le");
    op!("gt");
    op!("ge");
}
