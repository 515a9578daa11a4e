//! layer_norm and rms_norm on the GPU (`kernels/norm.cu`), over the last dim, with the CPU
//! kernel's semantics (`backend/cpu/norm.rs`: weight and bias of the last dim's extent, the
//! attribute `eps`), on float32, float16 and bfloat16. Contiguous rows that fit in registers
//! take one pass (16-byte accesses where aligned); other layouts and longer rows read the row
//! once per statistic.

use super::dims::{aligned16, grid_extent, merged_layout, row_plan};
use super::{device_ptr, function, register, Args, KernelSource};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Norm;
use crate::ops::spec::FLOATS;

/// The source of the normalization kernels.
pub static SOURCE: KernelSource = KernelSource {
    name: "norm.cu",
    text: concat!(include_str!("kernels/rows.cuh"), "#line 1 \"norm.cu\"\n", include_str!("kernels/norm.cu")),
};

/// Threads per block of the looped kernels.
const THREADS: u32 = 256;
/// Rows up to this many elements get one warp each in the looped kernel; longer, a block.
const WARP_ROW: i64 = 1024;

fn run(spec: &Norm, launch: Launch<'_>) -> Result<()> {
    let op = spec.name();
    let layer = spec.layer;
    let (x, weight, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    // rms_norm has no bias: the weight stands in for the pointer the kernel never reads
    let bias = if layer { &launch.inputs[2] } else { weight };
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
    if x.is_contiguous() && unit(weight) && unit(bias) {
        let pointers = [device_ptr(x), device_ptr(weight), device_ptr(bias), device_ptr(y), n as u64 * itemsize as u64];
        let vector = aligned16(&pointers);
        if let Some(plan) = row_plan(n, itemsize, vector) {
            let vec = if vector { "_vec" } else { "" };
            let f = function(device, &SOURCE, format_args!("norm_{op}_{dt}_{}{vec}", plan.chunks))?;
            args.ptr(device_ptr(x)).ptr(device_ptr(weight)).ptr(device_ptr(bias)).ptr(device_ptr(y));
            args.i64(rows).i64(n).f32(eps).i32(plan.group as i32);
            let blocks = grid_extent(op, rows, i64::from(plan.block / plan.group), i32::MAX as u32)?;
            return f.launch([blocks, 1, 1], [plan.block, 1, 1], 0, &mut args);
        }
    }
    let last = x.ndim() - 1;
    let rows_at = merged_layout(&x.shape()[..last], &x.strides()[..last], x.offset())?;
    let stride = |t: &crate::tensor::Tensor| t.strides().last().copied().unwrap_or(0);
    args.ptr(x.storage().as_ptr() as u64).value(&rows_at).i64(stride(x));
    args.ptr(device_ptr(weight)).i64(stride(weight)).ptr(device_ptr(bias)).i64(stride(bias));
    let group = if n <= WARP_ROW { 32 } else { THREADS };
    args.ptr(device_ptr(y)).i64(rows).i64(n).f32(eps).i32(group as i32);
    let f = function(device, &SOURCE, format_args!("norm_{op}_{dt}_looped"))?;
    let blocks = grid_extent(op, rows, i64::from(THREADS / group), i32::MAX as u32)?;
    f.launch([blocks, 1, 1], [THREADS, 1, 1], 0, &mut args)
}

/// Registers layer_norm and rms_norm on float32, float16 and bfloat16.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "layer_norm", &FLOATS, run);
    register(table, "rms_norm", &FLOATS, run);
}
