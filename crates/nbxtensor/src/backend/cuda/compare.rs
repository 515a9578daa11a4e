//! Comparisons with numpy broadcasting on the GPU, as the CPU kernels: eq, ne, lt, le, gt, ge to
//! bool outputs, on float32, float16 and bfloat16 (compared as float32, which holds the half
//! formats exactly; NaN is unequal to everything), on the integers (as themselves) and on bool
//! (false < true; any nonzero byte is true): `kernels/compare.cu`, the floats and the rest
//! compiled apart.

use super::addressing::storage_ptr;
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, register, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};

pub use super::source::COMPARE as SOURCE;
pub use super::source::COMPARE_INTEGERS as INTEGER_SOURCE;

fn run(spec: &Binary, launch: Launch<'_>) -> Result<()> {
    let (a, b, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let n = y.numel();
    if n == 0 {
        return Ok(());
    }
    let (op, device, shape) = (spec.op.name(), y.device(), y.shape());
    let dt = spec.dtype.launch_key();
    let source = if spec.dtype.is_float() { &SOURCE } else { &INTEGER_SOURCE };
    let mut args = Args::new();
    let f = if a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape {
        args.ptr(device_ptr(a)).ptr(device_ptr(b)).ptr(device_ptr(y)).i64(n);
        function(device, source, format_args!("compare_{op}_{dt}"))?
    } else {
        let ix = Indexer::new(op, shape, &[Operand::broadcast(op, a, shape)?, Operand::broadcast(op, b, shape)?])?;
        args.ptr(storage_ptr(a)).ptr(storage_ptr(b)).value(&ix).ptr(device_ptr(y)).i64(n).i32(narrow(n));
        function(device, source, format_args!("compare_{op}_{dt}_strided"))?
    };
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers the comparisons on every dtype they take but float64.
pub fn register_all(table: &mut LaunchTable) {
    for op in BinaryOp::all().filter(|op| op.is_comparison()) {
        register(table, op.name(), &served(&op.dtypes()), run);
    }
}
