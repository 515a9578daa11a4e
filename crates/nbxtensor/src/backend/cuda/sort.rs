//! `sort`, `argsort` and `searchsorted` on the GPU (`kernels/sort.cu`), with the CPU kernel's
//! semantics (`backend/cpu/sort.rs`). A sort: one block sorts each line in shared memory by a
//! bitonic network over (key, position) pairs, which is stable by construction. A search: one
//! thread per value halves the sorted input (any stride; the values in any layout). Lines of at most
//! [`SORT_EXTENT`] elements along the axis; a longer one is refused by name (sort it on the
//! host). Any input layout. Served on float32, float16, bfloat16 and the eight integer dtypes.

use super::dims::{grid_extent, merged_layout};
use super::grid::{elementwise_grid, THREADS};
use super::{device_ptr, function, register, served, Args};
use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::scan::lines_of;
use crate::ops::spec::sort::{SearchSorted, Sort};
use crate::ops::spec::NUMBERS;

pub use super::source::SORT as SOURCE;

/// The longest line a GPU sort takes: its keys (up to 8 bytes) and positions (4 bytes) fill
/// the 48 KiB of shared memory a block has without opting in to more.
pub const SORT_EXTENT: i64 = 4096;

/// The most threads of a sort's block.
const SORT_THREADS: u32 = 1024;

fn run(spec: &Sort, launch: Launch<'_>) -> Result<()> {
    let (x, y) = (&launch.inputs[0], &launch.outputs[0]);
    if y.numel() == 0 {
        return Ok(());
    }
    let name = spec.name();
    let axis = spec.axis_index(x.ndim())?;
    let (outer, extent, inner) = lines_of(name, x.shape(), axis)?;
    if extent > SORT_EXTENT {
        return Err(KernelError::Invalid(format!(
            "{name}: the GPU sorts lines of at most {SORT_EXTENT} elements along the axis, got {extent}; \
             sort this tensor on the host"
        )));
    }
    let padded = (extent as u32).next_power_of_two().max(2);
    let key_bytes = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{name}: {e}")))?;
    // float keys are float32 whatever the storage; integer keys the integer itself
    let key_bytes = if spec.dtype.is_float() { 4 } else { key_bytes as u32 };
    let shared = padded * (4 + key_bytes);
    let keep = |v: &[i64]| -> Vec<i64> { v.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &e)| e).collect() };
    let lines = merged_layout(&keep(x.shape()), &keep(x.strides()), x.offset())?;
    let count = outer * inner;
    let direction = if spec.descending { "desc" } else { "asc" };
    let f = function(y.device(), &SOURCE, format_args!("{name}_{}_{direction}", spec.dtype.launch_key()))?;
    let mut args = Args::new();
    args.ptr(x.storage().as_ptr() as u64).value(&lines).i64(x.strides()[axis]).i64(count).i64(extent).i64(inner);
    args.i32(padded as i32).ptr(device_ptr(y));
    let blocks = grid_extent(name, count, 1, i32::MAX as u32)?;
    let threads = padded.clamp(32, SORT_THREADS);
    f.launch([blocks, 1, 1], [threads, 1, 1], shared, &mut args)
}

fn run_search(spec: &SearchSorted, launch: Launch<'_>) -> Result<()> {
    let (sorted, values, y) = (&launch.inputs[0], &launch.inputs[1], &launch.outputs[0]);
    let count = y.numel();
    if count == 0 {
        return Ok(());
    }
    let side = if spec.right { "right" } else { "left" };
    let f = function(y.device(), &SOURCE, format_args!("searchsorted_{}_{side}", spec.dtype.launch_key()))?;
    let layout = merged_layout(values.shape(), values.strides(), values.offset())?;
    let mut args = Args::new();
    args.ptr(device_ptr(sorted)).i64(sorted.shape()[0]).i64(sorted.strides()[0]);
    args.ptr(values.storage().as_ptr() as u64).value(&layout).i64(count).ptr(device_ptr(y));
    f.launch(elementwise_grid(f.context(), count), [THREADS, 1, 1], 0, &mut args)
}

/// Registers sort, argsort and searchsorted on the floats but float64 and the integers.
pub fn register_all(table: &mut LaunchTable) {
    register(table, "sort", &served(&NUMBERS), run);
    register(table, "argsort", &served(&NUMBERS), run);
    register(table, "searchsorted", &served(&NUMBERS), run_search);
}
