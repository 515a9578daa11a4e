//! softmax and log_softmax on the GPU (`kernels/softmax.cu`), along the attribute `axis`
//! (default -1), with the CPU kernel's semantics (`backend/cpu/softmax.rs`), on float32,
//! float16 and bfloat16. Contiguous rows that fit in registers take one pass (read once,
//! written once, 16-byte accesses where aligned); longer rows and other layouts take two
//! passes: an online (max, sum), then the writes.

use super::dims::{aligned16, grid_extent, merged_layout, row_plan};
use super::{device_ptr, function, register, Args};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Softmax;
use crate::ops::spec::{axis_of, FLOATS};

pub use super::source::SOFTMAX as SOURCE;

/// Threads per block of the two-pass kernels.
const THREADS: u32 = 256;
/// Rows up to this many elements get one warp each in the looped kernel; longer, a block.
const WARP_ROW: i64 = 1024;
/// Rows adjacent in memory take a thread each when there are at least this many of them
/// (fewer would leave the device idle: they take the looped kernel's warps or blocks).
const COLUMN_ROWS: i64 = 1024;

fn run(spec: &Softmax, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let op = spec.name();
    if y.numel() == 0 {
        return Ok(());
    }
    let axis = axis_of(op, spec.axis, x.ndim())?;
    let n = x.shape()[axis];
    let inner: i64 = x.shape()[axis + 1..].iter().product();
    let rows = y.numel() / n;
    let log = i32::from(op == "log_softmax");
    let dt = spec.dtype.launch_key();
    let itemsize = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    let device = y.device();
    let mut args = Args::new();
    if x.is_contiguous() && inner == 1 {
        let vector = aligned16(&[device_ptr(x), device_ptr(y), n as u64 * itemsize as u64]);
        if let Some(plan) = row_plan(n, itemsize, vector) {
            let vec = if vector { "_vec" } else { "" };
            let f = function(device, &SOURCE, format_args!("softmax_rows_{dt}_{}{vec}", plan.chunks))?;
            args.ptr(device_ptr(x)).ptr(device_ptr(y)).i64(rows).i64(n).i32(plan.group as i32).i32(log);
            let blocks = grid_extent(op, rows, i64::from(plan.block / plan.group), i32::MAX as u32)?;
            return f.launch([blocks, 1, 1], [plan.block, 1, 1], 0, &mut args);
        }
    }
    let mut shape = x.shape().to_vec();
    let mut strides = x.strides().to_vec();
    shape.remove(axis);
    let axis_stride = strides.remove(axis);
    let others = merged_layout(&shape, &strides, x.offset())?;
    args.ptr(x.storage().as_ptr() as u64)
        .value(&others)
        .i64(axis_stride)
        .i64(n)
        .i64(inner)
        .i64(rows)
        .ptr(device_ptr(y));
    let others_inner = if others.ndim > 0 { others.strides[others.ndim as usize - 1] } else { 0 };
    if axis_stride != 1 && others_inner == 1 && rows >= COLUMN_ROWS {
        // neighbouring rows are adjacent in memory: a thread per row reads coalesced
        let f = function(device, &SOURCE, format_args!("softmax_columns_{dt}"))?;
        args.i32(log);
        let blocks = grid_extent(op, rows, i64::from(THREADS), i32::MAX as u32)?;
        return f.launch([blocks, 1, 1], [THREADS, 1, 1], 0, &mut args);
    }
    let group = if n <= WARP_ROW { 32 } else { THREADS };
    args.i32(group as i32).i32(log);
    let f = function(device, &SOURCE, format_args!("softmax_looped_{dt}"))?;
    let blocks = grid_extent(op, rows, i64::from(THREADS / group), i32::MAX as u32)?;
    f.launch([blocks, 1, 1], [THREADS, 1, 1], 0, &mut args)
}

/// Registers softmax and log_softmax on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "softmax", &FLOATS, run);
    register(table, "log_softmax", &FLOATS, run);
}
