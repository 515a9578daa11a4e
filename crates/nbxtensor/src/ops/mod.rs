//! Eager ops: an op call looks up its kernel in the backend's capability table, reads the
//! kernel's declaration, allocates the declared outputs and workspace, and launches it.
//!
//! Two things can stand between the declaration and the launch: a program being traced on
//! this thread ([`start_recording`]: the launch is recorded over symbolic buffers, nothing
//! runs), and an active launch observer (a dry run: the observer records the launch key,
//! nothing runs, the outputs are symbolic).
//!
//! ```
//! use nbxtensor::{ops, tensor::Tensor, kernel::Attrs};
//! let x = Tensor::from_vec(vec![0.0f32, 1.0], &[2])?;
//! let y = ops::call("exp", &Attrs::new(), &[&x])?.remove(0);
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 1.0f32.exp()]);
//! # Ok::<(), nbxtensor::kernel::KernelError>(())
//! ```

use crate::backend::for_device;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, TensorMeta, Workspace};
use crate::memory::cuda::cuda_allocator;
use crate::memory::{host_allocator, Allocator, Device, DeviceKind};
use crate::settings::launch_observer;
use crate::tensor::{Storage, Tensor, TensorError};
use std::cell::RefCell;
use std::sync::Arc;

/// One launch as a trace records it: the kernel, its declaration and its tensors (the
/// outputs symbolic).
#[derive(Clone)]
pub struct Recorded {
    /// The kernel, bound to its attributes.
    pub kernel: Arc<dyn Kernel>,
    /// Its declaration for these inputs.
    pub cost: Cost,
    /// The inputs as the model passed them (views included).
    pub inputs: Vec<Tensor>,
    /// The outputs (symbolic, contiguous).
    pub outputs: Vec<Tensor>,
}

thread_local! {
    static RECORDING: RefCell<Option<Vec<Recorded>>> = const { RefCell::new(None) };
}

/// Starts recording this thread's launches instead of running them; refused when a
/// recording is already on.
pub fn start_recording() -> Result<(), KernelError> {
    RECORDING.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_some() {
            return Err(KernelError::Invalid("a program is already being traced on this thread".into()));
        }
        *r = Some(Vec::new());
        Ok(())
    })
}

/// Stops recording and returns the launches recorded (empty when none was on).
pub fn finish_recording() -> Vec<Recorded> {
    RECORDING.with(|r| r.borrow_mut().take()).unwrap_or_default()
}

/// Calls `op` with `attrs` on `inputs` on the backend of the inputs' device; returns the
/// outputs (on that device).
pub fn call(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    let device = inputs.first().map(|t| t.device()).unwrap_or(Device::CPU);
    if let Some(other) = inputs.iter().find(|t| t.device() != device) {
        let backend = for_device(device)?;
        return Err(KernelError::Invalid(format!(
            "{op}: an input lives on {}, the {} backend runs on {}",
            other.device(),
            backend.name(),
            backend.device()
        )));
    }
    let dtype = inputs
        .first()
        .map(|t| t.dtype())
        .ok_or_else(|| KernelError::Invalid(format!("{op}: takes at least one input")))?;
    let kernel = made_kernel(device, op, dtype, attrs)?;
    call_kernel(&kernel, inputs)
}

/// How many kernels a thread keeps from its recent op calls.
const KERNELS_KEPT: usize = 64;

/// A kernel made by an op call, with what it was made for.
struct Made {
    device: Device,
    dtype: DType,
    op: String,
    attrs: Attrs,
    kernel: Arc<dyn Kernel>,
}

thread_local! {
    /// The kernels of this thread's recent op calls, most recent first (kernels hold no
    /// state: an op call of the same op, dtype and attributes on the same device reuses one).
    static MADE: RefCell<Vec<Made>> = const { RefCell::new(Vec::new()) };
}

/// The kernel of `op` on `dtype` with `attrs` from `device`'s backend: one this thread made
/// recently, or a new one.
fn made_kernel(device: Device, op: &str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Kernel>, KernelError> {
    let recent = MADE.with(|made| {
        let mut made = made.borrow_mut();
        let at = made.iter().position(|m| m.device == device && m.dtype == dtype && m.op == op && m.attrs == *attrs)?;
        let kernel = Arc::clone(&made[at].kernel);
        if at > 0 {
            let entry = made.remove(at);
            made.insert(0, entry);
        }
        Some(kernel)
    });
    if let Some(kernel) = recent {
        return Ok(kernel);
    }
    let kernel: Arc<dyn Kernel> = for_device(device)?.table().kernel(op, dtype, attrs)?.into();
    MADE.with(|made| {
        let mut made = made.borrow_mut();
        made.truncate(KERNELS_KEPT - 1);
        let entry = Made { device, dtype, op: op.to_string(), attrs: attrs.clone(), kernel: Arc::clone(&kernel) };
        made.insert(0, entry);
    });
    Ok(kernel)
}

/// Launches a kernel object on `inputs` (declared, allocated, run — or recorded, when a
/// trace or a dry run is on): the path every op call takes, open to kernels of one's own.
pub fn call_kernel(kernel: &Arc<dyn Kernel>, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    let device = inputs.first().map(|t| t.device()).unwrap_or(Device::CPU);
    let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let cost = kernel.declare(&metas)?;
    let recording = RECORDING.with(|r| r.borrow().is_some());
    let observer = launch_observer::launch_observer().filter(|o| o.active());
    if recording || observer.is_some() {
        let outputs = cost.outputs.iter().map(|m| symbolic(m, device)).collect::<Result<Vec<_>, _>>()?;
        if let Some(observer) = observer {
            observer.record(false, &kernel.key());
        }
        if recording {
            let inputs = inputs.iter().map(|t| (*t).clone()).collect();
            let launch = Recorded { kernel: Arc::clone(kernel), cost, inputs, outputs: outputs.clone() };
            RECORDING.with(|r| r.borrow_mut().as_mut().map(|launches| launches.push(launch)));
        }
        return Ok(outputs);
    }
    if inputs.iter().any(|t| t.storage().is_symbolic()) {
        return Err(KernelError::Invalid(format!(
            "{}: an input is a traced tensor, which has no data outside its program",
            kernel.key()
        )));
    }
    let outputs =
        cost.outputs.iter().map(|m| Tensor::for_output(device, m.dtype, &m.shape)).collect::<Result<Vec<_>, _>>()?;
    let inputs: Vec<Tensor> = inputs.iter().map(|t| (*t).clone()).collect();
    with_workspace(device, cost.workspace as usize, |workspace| {
        kernel.launch(Launch { inputs: &inputs, outputs: &outputs, workspace })
    })?;
    Ok(outputs)
}

/// Runs `f` with a fresh workspace of `bytes` on `device`, freed after (on a GPU, the stream
/// orders its reuse after the launch).
pub fn with_workspace<T>(
    device: Device,
    bytes: usize,
    f: impl FnOnce(Workspace<'_>) -> Result<T, KernelError>,
) -> Result<T, KernelError> {
    match device.kind {
        DeviceKind::Cpu => {
            let mut block = host_allocator().alloc(bytes).map_err(TensorError::from)?;
            f(Workspace::host(block.as_mut_slice()))
        }
        DeviceKind::Cuda => {
            let block = cuda_allocator(device.index).and_then(|a| a.alloc(bytes)).map_err(TensorError::from)?;
            // SAFETY: the block is this launch's alone while f runs.
            f(unsafe { Workspace::from_raw(block.device_ptr() as *mut u8, bytes, device) })
        }
    }
}

/// A contiguous symbolic tensor of a declared output, on `device`.
fn symbolic(meta: &TensorMeta, device: Device) -> Result<Tensor, KernelError> {
    let strides = crate::shape::contiguous_strides(&meta.shape).map_err(|e| KernelError::Invalid(e.to_string()))?;
    let storage = Storage::symbolic(meta.bytes()? as usize, device);
    Ok(Tensor::from_storage(Arc::new(storage), meta.dtype, &meta.shape, &strides, 0)?)
}
