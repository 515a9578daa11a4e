//! Reductions on the GPU (`kernels/reduce.cu`): sum, prod, mean, max, min, all, any
//! (attributes `axes`, `keepdim`), argmax and argmin (`axis`, `keepdim`), with the CPU
//! kernel's semantics (`backend/cpu/reduce.rs`): float sums and products in float64,
//! NaN-propagating max and min, the first maximum or minimum for argmax and argmin, wrapping
//! 64-bit integer sums and products, truth (nonzero) for all and any. Served on float32,
//! float16, bfloat16 and the eight integer dtypes (mean on the floats only; all and any on
//! bool too). Any input layout: the kept and the
//! reduced dims are passed as two strided layouts.
//!
//! A few outputs of many elements each are reduced in two passes: blocks fold pieces of
//! [`SPLIT_CHUNK`] elements into partials in the workspace, then one thread per output combines
//! them in order. The device declares that workspace (16 bytes a partial), 0 otherwise.

use super::dims::{grid_extent, merged_layout, workspace_of};
use super::{device_ptr, function, register_with_workspace, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result, TensorMeta};
use crate::ops::spec::reduce::{Reduce, ReduceOp};

pub use super::source::REDUCE as SOURCE;

/// Threads of a row kernel's block.
const ROW_THREADS: u32 = 256;
/// Reduced extents up to this fold in one warp per output; longer ones in a whole block.
const WARP_EXTENT: i64 = 1024;
/// Outputs per block of the column kernel, and its lanes over the reduced elements.
const COLUMNS: u32 = 32;
const COLUMN_LANES: u32 = 8;
/// Reductions of at most this many outputs, of at least [`SPLIT_MIN`] elements each, take two
/// passes; a block of the first folds about [`SPLIT_CHUNK`] elements, at most
/// [`SPLIT_MAX`] blocks per output.
pub const SPLIT_OUTPUTS: i64 = 512;
/// See [`SPLIT_OUTPUTS`].
pub const SPLIT_MIN: i64 = 1 << 16;
/// See [`SPLIT_OUTPUTS`].
pub const SPLIT_CHUNK: i64 = 1 << 14;
/// See [`SPLIT_OUTPUTS`].
pub const SPLIT_MAX: i64 = 1024;
/// Bytes of one partial (`NBX_SLOT` of the source).
const SLOT: i64 = 16;

/// `(splits, chunk)` of a two-pass reduction of `outputs` × `count` elements (None: one pass).
fn split_plan(outputs: i64, count: i64) -> Option<(i64, i64)> {
    if outputs == 0 || outputs > SPLIT_OUTPUTS || count < SPLIT_MIN {
        return None;
    }
    let splits = ((count + SPLIT_CHUNK - 1) / SPLIT_CHUNK).min(SPLIT_MAX);
    Some((splits, (count + splits - 1) / splits))
}

/// `(outputs, count)` of a reduction of `shape` over the `reduced` dims.
fn extents(shape: &[i64], reduced: &[bool]) -> (i64, i64) {
    let pick = |want: bool| shape.iter().zip(reduced).filter(|(_, &r)| r == want).map(|(&e, _)| e).product();
    (pick(false), pick(true))
}

/// Bytes of the partials of a two-pass reduction.
fn partial_bytes(outputs: i64, splits: i64) -> u64 {
    (SLOT * outputs * splits) as u64
}

/// The device workspace: the partials of a two-pass reduction, else nothing.
fn workspace(spec: &Reduce, inputs: &[TensorMeta]) -> Result<u64> {
    let [x] = inputs else { return Ok(0) };
    let (outputs, count) = extents(&x.shape, &spec.reduced(x.shape.len())?);
    Ok(split_plan(outputs, count).map_or(0, |(splits, _)| partial_bytes(outputs, splits)))
}

fn run(spec: &Reduce, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    let outputs = y.numel();
    if outputs == 0 {
        return Ok(());
    }
    let reduced = spec.reduced(x.ndim())?;
    let pick = |want: bool| -> (Vec<i64>, Vec<i64>) {
        let dims = x.shape().iter().zip(x.strides()).zip(&reduced).filter(|(_, &r)| r == want);
        dims.map(|((&extent, &stride), _)| (extent, stride)).unzip()
    };
    let (kept_shape, kept_strides) = pick(false);
    let (red_shape, red_strides) = pick(true);
    let count: i64 = red_shape.iter().product();
    let kept = merged_layout(&kept_shape, &kept_strides, x.offset())?;
    let red = merged_layout(&red_shape, &red_strides, 0)?;
    let inner = |l: &super::Layout| if l.ndim > 0 { l.strides[l.ndim as usize - 1] } else { 0 };
    let (op, dt) = (spec.op.name(), spec.dtype.launch_key());
    let device = y.device();
    let mut args = Args::new();
    args.ptr(x.storage().as_ptr() as u64).value(&kept).value(&red);
    if let Some((splits, chunk)) = split_plan(outputs, count) {
        let partials = workspace_of(op, &launch.workspace, partial_bytes(outputs, splits))?;
        let f = function(device, &SOURCE, format_args!("reduce_{op}_{dt}_split"))?;
        args.i64(count).i64(chunk).i32(splits as i32).ptr(partials);
        let grid_y = grid_extent(op, outputs, 1, 65535)?;
        f.launch([splits as u32, grid_y, 1], [ROW_THREADS, 1, 1], 0, &mut args)?;
        let finish = function(device, &SOURCE, format_args!("reduce_{op}_{dt}_finish"))?;
        let mut args = Args::new();
        args.ptr(partials).i64(outputs).i64(count).i32(splits as i32).ptr(device_ptr(y));
        let blocks = grid_extent(op, outputs, i64::from(ROW_THREADS), i32::MAX as u32)?;
        return finish.launch([blocks, 1, 1], [ROW_THREADS, 1, 1], 0, &mut args);
    }
    args.i64(outputs).i64(count).ptr(device_ptr(y));
    if inner(&red) != 1 && inner(&kept) == 1 {
        // reduced elements far apart, outputs adjacent: one thread per output, coalesced
        let f = function(device, &SOURCE, format_args!("reduce_{op}_{dt}_cols"))?;
        let blocks = grid_extent(op, outputs, i64::from(COLUMNS), i32::MAX as u32)?;
        return f.launch([blocks, 1, 1], [COLUMNS, COLUMN_LANES, 1], 0, &mut args);
    }
    let group = if count <= WARP_EXTENT { 32 } else { ROW_THREADS };
    args.i32(group as i32);
    let per_block = i64::from(ROW_THREADS / group);
    let f = function(device, &SOURCE, format_args!("reduce_{op}_{dt}_rows"))?;
    let blocks = grid_extent(op, outputs, per_block, i32::MAX as u32)?;
    f.launch([blocks, 1, 1], [ROW_THREADS, 1, 1], 0, &mut args)
}

/// Registers sum, prod, max, min, argmax and argmin on the floats but float64 and the
/// integers, mean on the floats but float64, all and any on those and bool.
pub fn register_all(table: &mut LaunchTable) {
    for op in ReduceOp::every() {
        register_with_workspace(table, op.name(), &served(op.dtypes()), run, workspace);
    }
}
