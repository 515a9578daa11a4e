//! A CUDA kernel whose cost is the CPU kernel's declaration of the same op, dtype and
//! attributes, so that a program plans and prices alike on both backends. A family may
//! replace the workspace where the device needs other scratch (cuBLASLt's), and says so.

use crate::backend::cpu::cpu;
use crate::backend::Backend;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};

/// How a family launches one op on the device.
pub type Run = fn(&CudaKernel, Launch<'_>) -> Result<()>;

/// The device's own workspace for given inputs, in place of the CPU kernel's.
pub type DeviceWorkspace = fn(&CudaKernel, &[TensorMeta]) -> Result<u64>;

/// A CUDA kernel: the CPU kernel's declaration, and the family's launch.
pub struct CudaKernel {
    declared: Box<dyn Kernel>,
    /// The op.
    pub op: &'static str,
    /// The dtype it serves.
    pub dtype: DType,
    /// The call's attributes (checked by the declaration when the kernel was made).
    pub attrs: Attrs,
    run: Run,
    workspace: Option<DeviceWorkspace>,
}

impl CudaKernel {
    /// The kernel of `op` on `dtype` with `attrs`, launched by `run`; the attributes are
    /// checked by the CPU kernel's constructor (bad ones are refused by name).
    pub fn new(op: &'static str, dtype: DType, attrs: &Attrs, run: Run) -> Result<Box<dyn Kernel>> {
        let declared = cpu().table().kernel(op, dtype, attrs)?;
        Ok(Box::new(CudaKernel { declared, op, dtype, attrs: attrs.clone(), run, workspace: None }))
    }

    /// As [`CudaKernel::new`], with the device's own workspace declaration.
    pub fn with_workspace(
        op: &'static str,
        dtype: DType,
        attrs: &Attrs,
        run: Run,
        workspace: DeviceWorkspace,
    ) -> Result<Box<dyn Kernel>> {
        let declared = cpu().table().kernel(op, dtype, attrs)?;
        Ok(Box::new(CudaKernel { declared, op, dtype, attrs: attrs.clone(), run, workspace: Some(workspace) }))
    }

    /// The declaration's outputs and sizes for `inputs` (what `launch` was planned with).
    pub fn declaration(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        self.declare(inputs)
    }
}

impl Kernel for CudaKernel {
    fn key(&self) -> String {
        self.declared.key()
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let mut cost = self.declared.declare(inputs)?;
        if let Some(workspace) = self.workspace {
            cost.workspace = workspace(self, inputs)?;
        }
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        if let Some(t) =
            launch.inputs.iter().chain(launch.outputs).find(|t| t.device().kind != crate::memory::DeviceKind::Cuda)
        {
            return Err(KernelError::Invalid(format!(
                "{}: a CUDA kernel was given a tensor on {}",
                self.op,
                t.device()
            )));
        }
        (self.run)(self, launch)
    }

    fn uses_matrix_unit(&self) -> bool {
        self.declared.uses_matrix_unit()
    }
}
