//! layer_norm, rms_norm, add_rms_norm and add_layer_norm on the GPU (`kernels/norm.cu`), over
//! the last dim, with the CPU kernel's semantics (`backend/cpu/norm.rs`: weight and bias of the
//! last dim's extent, the attribute `eps`; the residual ops' sum rounded as `add` rounds it and
//! normalized in rms_norm's or layer_norm's pattern, so both outputs are bit for bit those of
//! `add` then the norm), on float32, float16 and bfloat16. Contiguous rows that fit in registers
//! take one pass (16-byte accesses where aligned; a few rows, as a decode step's, spread over
//! up to 512 threads each); other layouts and longer rows read the row once per statistic.

use super::dims::{aligned16, grid_extent, merged_layout, row_plan};
use super::{device_context, device_ptr, function, recent, register, Args};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Norm;
use crate::ops::spec::FLOATS;

pub use super::source::NORM as SOURCE;

/// Threads per block of the looped kernels.
const THREADS: u32 = 256;
/// Rows up to this many elements get one warp each in the looped kernel; longer, a block.
const WARP_ROW: i64 = 1024;

fn run(spec: &Norm, launch: Launch<'_>) -> Result<()> {
    let op = spec.name();
    let (layer, add) = (spec.layer, spec.residual);
    let x = &launch.inputs[0];
    // add_rms_norm and add_layer_norm: (x, residual, weight[, bias]) → (sum, normed); the
    // others (x, weight[, bias]) → y
    let (residual, weight) = match add {
        true => (&launch.inputs[1], &launch.inputs[2]),
        false => (x, &launch.inputs[1]),
    };
    let bias_input = if add { 3 } else { 2 };
    let y = launch.outputs.last().ok_or_else(|| KernelError::Invalid(format!("{op}: no output")))?;
    // a pointer the kernel never reads or writes (no bias, no residual, no sum) is null
    let bias = if layer { device_ptr(&launch.inputs[bias_input]) } else { 0 };
    let (r, sum) = if add { (device_ptr(residual), device_ptr(&launch.outputs[0])) } else { (0, 0) };
    if y.numel() == 0 {
        return Ok(());
    }
    let eps = spec.eps as f32;
    let n = *x.shape().last().ok_or_else(|| KernelError::Invalid(format!("{op}: x is 0-d")))?;
    let rows = y.numel() / n;
    let dt = spec.dtype.launch_key();
    let itemsize = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    let device = y.device();
    let mut args = Args::new();
    let unit = |t: &crate::tensor::Tensor| t.strides().last() == Some(&1) || n == 1;
    let unit_bias = !layer || unit(&launch.inputs[bias_input]);
    if x.is_contiguous() && residual.is_contiguous() && unit(weight) && unit_bias {
        let pointers = [device_ptr(x), r, device_ptr(weight), bias, sum, device_ptr(y), n as u64 * itemsize as u64];
        let vector = aligned16(&pointers);
        if let Some(plan) = row_plan(n, itemsize, vector) {
            let context = device_context(device)?;
            let plan = plan.for_rows(rows, context.info().multiprocessors);
            let vec = if vector { "_vec" } else { "" };
            let f = function(device, &SOURCE, format_args!("norm_{op}_{dt}_{}{vec}", plan.chunks))?;
            // the weight read before the inputs are awaited when the previous op cannot have written it
            let early = recent::untouched_by_previous_op(context.stream_handle(), weight);
            args.ptr(device_ptr(x)).ptr(r).ptr(device_ptr(weight)).ptr(bias).ptr(sum).ptr(device_ptr(y));
            args.i64(rows).i64(n).f32(eps).i32(plan.group as i32).i32(i32::from(early));
            let blocks = grid_extent(op, rows, i64::from(plan.block / plan.group), i32::MAX as u32)?;
            return f.launch([blocks, 1, 1], [plan.block, 1, 1], 0, &mut args);
        }
    }
    let last = x.ndim() - 1;
    let rows_of = |t: &crate::tensor::Tensor| merged_layout(&t.shape()[..last], &t.strides()[..last], t.offset());
    let stride = |t: &crate::tensor::Tensor| t.strides().last().copied().unwrap_or(0);
    args.ptr(x.storage().as_ptr() as u64).value(&rows_of(x)?).i64(stride(x));
    let r_base = if add { residual.storage().as_ptr() as u64 } else { 0 };
    args.ptr(r_base).value(&rows_of(residual)?).i64(stride(residual));
    let bias_stride = if layer { stride(&launch.inputs[bias_input]) } else { 0 };
    args.ptr(device_ptr(weight)).i64(stride(weight)).ptr(bias).i64(bias_stride);
    let group = if n <= WARP_ROW { 32 } else { THREADS };
    args.ptr(sum).ptr(device_ptr(y)).i64(rows).i64(n).f32(eps).i32(group as i32);
    let f = function(device, &SOURCE, format_args!("norm_{op}_{dt}_looped"))?;
    let blocks = grid_extent(op, rows, i64::from(THREADS / group), i32::MAX as u32)?;
    f.launch([blocks, 1, 1], [THREADS, 1, 1], 0, &mut args)
}

/// Registers layer_norm, rms_norm, add_rms_norm and add_layer_norm on float32, float16 and
/// bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    for op in ["layer_norm", "rms_norm", "add_rms_norm", "add_layer_norm"] {
        register(table, op, &FLOATS, run);
    }
}
