//! `copy`: any layout into a contiguous tensor of the same dtype (what `contiguous()` launches
//! when a layout is not already contiguous, so a program records it).

use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};

struct Copy {
    dtype: DType,
}

impl Kernel for Copy {
    fn key(&self) -> String {
        format!("copy:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [input] = inputs else {
            return Err(KernelError::Invalid(format!("copy: takes one input, got {}", inputs.len())));
        };
        if input.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "copy: input is {}, the kernel serves {}",
                input.dtype, self.dtype
            )));
        }
        Cost::simple(vec![input.clone()], input.bytes()?, 0)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        let output = &launch.outputs[0];
        let len = output.numel() as usize * self.dtype.itemsize().map_err(|e| KernelError::Invalid(e.to_string()))?;
        // SAFETY: the output is this launch's own contiguous buffer of `len` bytes, which no
        // other reference touches during the launch.
        let target = unsafe { std::slice::from_raw_parts_mut(output.data_ptr(), len) };
        Ok(launch.inputs[0].copy_to(target)?)
    }
}

/// Registers `copy` on every dtype a tensor can hold.
pub fn register(table: &mut CapabilityTable) {
    let dtypes: Vec<DType> = DType::ALL.into_iter().filter(|d| d.itemsize().is_ok()).collect();
    table.register("copy", &dtypes, |dtype, attrs: &Attrs| {
        attrs.only("copy", &[])?;
        Ok(Box::new(Copy { dtype }))
    });
}
