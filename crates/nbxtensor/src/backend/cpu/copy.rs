//! `copy` on the host: any layout into a contiguous tensor of the same dtype; `assign`: a
//! value, broadcast, written through any layout in place.

use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::cast::{Assign, Copy};

fn launch(spec: &Copy, launch: Launch<'_>) -> Result<()> {
    let output = &launch.outputs[0];
    let len = output.numel() as usize * spec.dtype.itemsize().map_err(|e| KernelError::Invalid(e.to_string()))?;
    // SAFETY: the output is this launch's own contiguous buffer of `len` bytes, which no
    // other reference touches during the launch.
    let target = unsafe { std::slice::from_raw_parts_mut(output.data_ptr(), len) };
    Ok(launch.inputs[0].copy_to(target)?)
}

/// Writes the value (input 1, broadcast) into the destination (input 0) element by element
/// through both layouts; a run where both are contiguous in the last dim.
fn assign(spec: &Assign, launch: Launch<'_>) -> Result<()> {
    let (dst, src) = (&launch.inputs[0], &launch.inputs[1]);
    Assign::check_layouts(dst, src)?;
    if dst.numel() == 0 {
        return Ok(());
    }
    let itemsize = spec.dtype.itemsize().map_err(|e| KernelError::Invalid(e.to_string()))? as isize;
    let value_strides = Assign::value_strides(dst.shape(), src.shape(), src.strides())?;
    let (shape, dst_strides) = (dst.shape(), dst.strides());
    let last = shape.len().wrapping_sub(1);
    let run = match (shape.last(), dst_strides.last(), value_strides.last()) {
        (Some(&extent), Some(&1), Some(&1)) => extent,
        _ => 1,
    };
    let outer = if run > 1 { &shape[..last] } else { shape };
    let (to, from) = (dst.data_ptr(), src.data_ptr() as *const u8);
    let mut index = vec![0i64; outer.len()];
    loop {
        let at = |strides: &[i64]| index.iter().zip(strides).map(|(i, s)| i * s).sum::<i64>() as isize * itemsize;
        // SAFETY: both offsets reach elements of their views (every index is inside the
        // shape; the layouts were checked to lie in their storages when the tensors were
        // made); the destination's elements are distinct and the value's memory is another
        // storage (checked above), so the run copied never overlaps.
        unsafe {
            std::ptr::copy_nonoverlapping(
                from.offset(at(&value_strides)),
                to.offset(at(dst_strides)),
                run as usize * itemsize as usize,
            )
        };
        // advance the row-major index over the outer dims
        let mut axis = outer.len();
        loop {
            if axis == 0 {
                return Ok(());
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < outer[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// Registers `copy` and `assign` on every dtype a tensor can hold.
pub fn register(table: &mut LaunchTable) {
    table.register("copy", &crate::ops::spec::sized(), launch);
    table.register("assign", &crate::ops::spec::sized(), assign);
}
