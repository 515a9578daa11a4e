//! `copy` on the host: any layout into a contiguous tensor of the same dtype.

use crate::backend::LaunchTable;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::cast::Copy;

fn launch(spec: &Copy, launch: Launch<'_>) -> Result<()> {
    let output = &launch.outputs[0];
    let len = output.numel() as usize * spec.dtype.itemsize().map_err(|e| KernelError::Invalid(e.to_string()))?;
    // SAFETY: the output is this launch's own contiguous buffer of `len` bytes, which no
    // other reference touches during the launch.
    let target = unsafe { std::slice::from_raw_parts_mut(output.data_ptr(), len) };
    Ok(launch.inputs[0].copy_to(target)?)
}

/// Registers `copy` on every dtype a tensor can hold.
pub fn register(table: &mut LaunchTable) {
    table.register("copy", &crate::ops::spec::sized(), launch);
}
