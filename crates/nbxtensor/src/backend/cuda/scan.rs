//! `cumulative_sum` and `cumulative_prod` on the GPU (`kernels/scan.cu`), with the CPU
//! kernel's semantics (`backend/cpu/scan.rs`): one thread walks each line along the axis in
//! order, the running value in double (floats, each output rounded once) or in 64 bits,
//! wrapping (integers) — so every output is the CPU's, bit for bit. Any input layout (the
//! lines as a strided layout, the axis by its stride). Served on float32, float16, bfloat16
//! and the eight integer dtypes.

use super::dims::merged_layout;
use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, register, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{Launch, Result};
use crate::ops::spec::scan::{lines_of, Scan, ScanOp};
use crate::ops::spec::NUMBERS;

pub use super::source::SCAN as SOURCE;

fn run(spec: &Scan, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    if y.numel() == 0 {
        return Ok(());
    }
    let axis = spec.axis_index(x.ndim())?;
    let (outer, extent, inner) = lines_of(spec.op.name(), x.shape(), axis)?;
    let keep = |v: &[i64]| -> Vec<i64> { v.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &e)| e).collect() };
    let lines = merged_layout(&keep(x.shape()), &keep(x.strides()), x.offset())?;
    let count = outer * inner;
    let f = function(y.device(), &SOURCE, format_args!("scan_{}_{}", spec.op.name(), spec.dtype.launch_key()))?;
    let mut args = Args::new();
    args.ptr(x.storage().as_ptr() as u64).value(&lines).i64(x.strides()[axis]).i64(count).i64(extent).i64(inner);
    args.i32(i32::from(spec.include_initial)).ptr(device_ptr(y));
    f.launch(elementwise_grid(f.context(), count), [THREADS, 1, 1], 0, &mut args)
}

/// Registers cumulative_sum and cumulative_prod on the floats but float64 and the integers.
pub fn register_all(table: &mut LaunchTable) {
    for op in ScanOp::every() {
        register(table, op.name(), &served(&NUMBERS), run);
    }
}
