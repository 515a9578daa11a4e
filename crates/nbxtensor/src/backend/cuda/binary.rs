//! Binary ops with numpy broadcasting on the GPU (`kernels/binary.cu`), as the host's: the
//! float ops on float32, float16 and bfloat16 (computed in float32; nextafter steps the stored
//! bits), the integer ops on the integers (wrapping), the logical and bitwise ops on bool;
//! the floats and the rest compiled apart.
//!
//! Operands of the output's shape, both contiguous, take 16-byte accesses; broadcast operands
//! whose innermost dim is contiguous or broadcast take 16-byte words per row; any other layout
//! (transposed, narrowed, broadcast inside) is read element by element through its strides.

use super::addressing::{rows_fit, storage_ptr, width};
use super::grid::{elementwise_grid, THREADS};
use super::indexer::{narrow, Indexer, Operand};
use super::{device_ptr, function, register, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result};
use crate::ops::spec::binary::{Binary, BinaryOp};

pub use super::source::BINARY as SOURCE;
pub use super::source::BINARY_INTEGERS as INTEGER_SOURCE;

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
    if a.is_contiguous() && b.is_contiguous() && a.shape() == shape && b.shape() == shape {
        args.ptr(device_ptr(a)).ptr(device_ptr(b)).ptr(device_ptr(y)).i64(n);
        let f = function(device, source, format_args!("binary_{op}_{dt}"))?;
        return f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args);
    }
    let ix = Indexer::new(op, shape, &[Operand::broadcast(op, a, shape)?, Operand::broadcast(op, b, shape)?])?;
    let per_word = 16 / width(op, spec.dtype)?;
    args.ptr(storage_ptr(a)).ptr(storage_ptr(b)).value(&ix).ptr(device_ptr(y));
    if device_ptr(y) % 16 == 0 && rows_fit(&ix, &[a, b], per_word) {
        args.i64(n / per_word).i32(narrow(n));
        let f = function(device, source, format_args!("binary_{op}_{dt}_rows"))?;
        return f.launch(elementwise_grid(f.context(), n / per_word), [THREADS, 1, 1], 0, &mut args);
    }
    args.i64(n).i32(narrow(n));
    let f = function(device, source, format_args!("binary_{op}_{dt}_strided"))?;
    f.launch(elementwise_grid(f.context(), n), [THREADS, 1, 1], 0, &mut args)
}

/// Registers every binary op but the comparisons on the dtypes it takes but float64.
pub fn register_all(table: &mut LaunchTable) {
    for op in BinaryOp::all().filter(|op| !op.is_comparison()) {
        register(table, op.name(), &served(&op.dtypes()), run);
    }
}
