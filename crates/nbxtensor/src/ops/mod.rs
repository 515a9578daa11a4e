//! Ops: what each op means ([`spec`], once above every backend), the typed Rust API (a
//! [`Tensor`] method per op, with promotion and weak scalars decided here), precision
//! policies applied to op calls, and the eager call path.
//!
//! An eager call binds the op's spec, finds the launch of the inputs' device's backend,
//! reads the declaration, allocates the declared outputs and workspace, and launches. Two
//! things can stand between the declaration and the launch: a program being traced on this
//! thread ([`start_recording`]: the launch is recorded over symbolic buffers, nothing runs),
//! and an active launch observer (a dry run: the observer records the launch key, nothing
//! runs, the outputs are symbolic).
//!
//! ```
//! use nbxtensor::{ops, kernel::Attrs, Tensor};
//! let x = Tensor::from_vec(vec![0.0f32, 1.0], &[2])?;
//! let y = x.exp()?;                                            // the typed API
//! assert_eq!(y.to_vec::<f32>()?, vec![1.0, 1.0f32.exp()]);
//! let same = ops::call("exp", &Attrs::new(), &[&x])?.remove(0);  // the string entry point
//! assert_eq!(same.to_vec::<f32>()?, y.to_vec::<f32>()?);
//! # Ok::<(), nbxtensor::kernel::KernelError>(())
//! ```

mod methods;
mod operand;
mod policy;
pub mod spec;

pub use methods::{binary, unary};
pub use operand::{Operand, Scalar};
pub use policy::{call_with_policy, policy_in_force, with_policy};

use crate::backend;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, TensorMeta, Workspace};
use crate::memory::Device;
use crate::settings::launch_observer;
use crate::tensor::{Storage, Tensor, TensorError};
use spec::Spec;
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

/// Runs `f` with this thread's recording and launch observer set aside (its launches run),
/// then puts them back, even when `f` panics: for the host values an op makes to send to a
/// device (a scalar operand's 0-d tensor), which must hold data even inside a trace.
pub(crate) fn eagerly<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Option<Vec<Recorded>>>, Option<Arc<dyn launch_observer::LaunchObserver>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(recording) = self.0.take() {
                RECORDING.with(|r| *r.borrow_mut() = recording);
            }
            if let Some(observer) = self.1.take() {
                launch_observer::set_launch_observer(Some(observer));
            }
        }
    }
    let recording = RECORDING.with(|r| r.borrow_mut().take());
    let observer = launch_observer::launch_observer();
    if observer.is_some() {
        launch_observer::set_launch_observer(None);
    }
    let _restore = Restore(Some(recording), observer);
    f()
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

/// The device every input lives on; inputs on two devices are refused naming `op`.
fn device_of(op: &str, inputs: &[&Tensor]) -> Result<Device, KernelError> {
    let device = inputs.first().map(|t| t.device()).unwrap_or(Device::CPU);
    if let Some(other) = inputs.iter().find(|t| t.device() != device) {
        return Err(KernelError::Invalid(format!(
            "{op}: an input lives on {}, another on {device}: move them to one device first",
            other.device()
        )));
    }
    Ok(device)
}

/// Calls `op` with `attrs` on `inputs` on the backend of the inputs' device; returns the
/// outputs (on that device). The op is dispatched on its first input's dtype, exactly: the
/// string entry point neither promotes nor casts (the [`Tensor`] methods do), except under a
/// precision policy in force on this thread ([`with_policy`]).
pub fn call(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    match policy_in_force() {
        Some(policy) => call_with_policy(&policy, op, attrs, inputs),
        None => call_exact(op, attrs, inputs),
    }
}

/// `op` on `inputs` dispatched on the first input's dtype, whatever policy is in force; an op
/// of no inputs (`iota`) is dispatched on its `dtype` attribute, on the host.
fn call_exact(op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    let device = device_of(op, inputs)?;
    let dtype = match inputs.first() {
        Some(t) => t.dtype(),
        None => attrs
            .dtype(op, "dtype")
            .map_err(|_| KernelError::Invalid(format!("{op}: takes at least one input, or a dtype attribute")))?,
    };
    let kernel = made_kernel(device, op, dtype, attrs)?;
    call_kernel(&kernel, inputs)
}

/// Runs a bound spec on `inputs` (the typed API's path): the launch of the inputs' device's
/// backend for the spec's op and dtype.
pub fn run<S: Spec>(spec: S, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    let device = device_of(spec.op(), inputs)?;
    run_on(device, spec, inputs)
}

/// Runs a bound spec on `device` (where its outputs are made): the path of an op of no inputs
/// (`iota`); inputs on another device are refused naming the op.
pub fn run_on<S: Spec>(device: Device, spec: S, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    if let Some(other) = inputs.iter().find(|t| t.device() != device) {
        return Err(KernelError::Invalid(format!(
            "{}: an input lives on {}, the op runs on {device}: move it there first",
            spec.op(),
            other.device()
        )));
    }
    let equal = |m: &Made| m.kernel.spec().is_some_and(|s| spec.same(s.as_any()));
    let kernel = match recent_kernel(device, equal) {
        Some(kernel) => kernel,
        None => {
            let kernel = backend::of(device).launches().kernel(Arc::new(spec))?;
            keep_kernel(Made { device, named: None, kernel: Arc::clone(&kernel) });
            kernel
        }
    };
    launch_on(device, &kernel, inputs)
}

/// The spec `build` makes for the dispatch dtype, run on `inputs` (the typed API's path): under
/// a policy in force, the float inputs are cast to the dtype `op` computes in first.
fn apply<S: Spec>(
    op: &str,
    inputs: &[&Tensor],
    build: impl FnOnce(DType) -> Result<S, KernelError>,
) -> Result<Vec<Tensor>, KernelError> {
    let first = inputs.first().ok_or_else(|| KernelError::Invalid(format!("{op}: takes at least one input")))?;
    match policy_in_force() {
        None => run(build(first.dtype())?, inputs),
        Some(policy) => {
            let cast = policy::cast_for(&policy, op, inputs)?;
            let refs: Vec<&Tensor> = cast.iter().collect();
            run(build(refs[0].dtype())?, &refs)
        }
    }
}

/// How many kernels a thread keeps from its recent op calls.
const KERNELS_KEPT: usize = 64;

/// A kernel made by an op call, with the device it runs on and, for a call by name, the op,
/// dtype and attributes it was made for (a typed call compares the kernel's spec).
struct Made {
    device: Device,
    named: Option<(String, DType, Attrs)>,
    kernel: Arc<dyn Kernel>,
}

thread_local! {
    /// The kernels of this thread's recent op calls, most recent first (kernels hold no
    /// state: an op call equal to an earlier one on the same device reuses its kernel).
    static MADE: RefCell<Vec<Made>> = const { RefCell::new(Vec::new()) };
}

/// The kernel of the most recent call `matches` accepts on `device`, moved to the front.
fn recent_kernel(device: Device, matches: impl Fn(&Made) -> bool) -> Option<Arc<dyn Kernel>> {
    MADE.with(|made| {
        let mut made = made.borrow_mut();
        let at = made.iter().position(|m| m.device == device && matches(m))?;
        let kernel = Arc::clone(&made[at].kernel);
        if at > 0 {
            let entry = made.remove(at);
            made.insert(0, entry);
        }
        Some(kernel)
    })
}

/// Keeps a new kernel in front of this thread's recent ones (the oldest dropped).
fn keep_kernel(entry: Made) {
    MADE.with(|made| {
        let mut made = made.borrow_mut();
        made.truncate(KERNELS_KEPT - 1);
        made.insert(0, entry);
    });
}

/// The kernel of `op` on `dtype` with `attrs` on `device`'s backend: one this thread made
/// recently, or a new one (the spec bound once, its attributes parsed once).
fn made_kernel(device: Device, op: &str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Kernel>, KernelError> {
    let named = |m: &Made| m.named.as_ref().is_some_and(|(o, d, a)| *d == dtype && o == op && a == attrs);
    if let Some(kernel) = recent_kernel(device, named) {
        return Ok(kernel);
    }
    let kernel = backend::of(device).launches().kernel(spec::bind(op, dtype, attrs)?)?;
    keep_kernel(Made { device, named: Some((op.to_string(), dtype, attrs.clone())), kernel: Arc::clone(&kernel) });
    Ok(kernel)
}

/// Launches a kernel object on `inputs` (declared, allocated, run — or recorded, when a
/// trace or a dry run is on): the path every op call takes, open to kernels of one's own. An
/// input the backend cannot read in its layout ([`Kernel::unreadable`]) is copied first.
pub fn call_kernel(kernel: &Arc<dyn Kernel>, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    launch_on(inputs.first().map(|t| t.device()).unwrap_or(Device::CPU), kernel, inputs)
}

/// [`call_kernel`] with its outputs made on `device` (the inputs' device, or the one an op
/// of no inputs was asked for).
fn launch_on(device: Device, kernel: &Arc<dyn Kernel>, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
    if let Some(index) = kernel.unreadable(inputs) {
        // the backend cannot read this layout: a contiguous copy, launched (and traced) first
        let copied = call_exact("copy", &Attrs::new(), &[inputs[index]])?.remove(0);
        let mut readable = inputs.to_vec();
        readable[index] = &copied;
        return launch_on(device, kernel, &readable);
    }
    let metas: Vec<TensorMeta> = inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let cost = kernel.declare(&metas)?;
    let recording = RECORDING.with(|r| r.borrow().is_some());
    let observer = launch_observer::launch_observer().filter(|o| o.active());
    if recording || observer.is_some() {
        let outputs = cost.outputs.iter().map(|m| symbolic(m, device)).collect::<Result<Vec<_>, _>>()?;
        if let Some(observer) = observer {
            match kernel.tuning(&metas, device) {
                Some((key, proven)) => observer.record(proven, &key),
                None => observer.record(false, &kernel.key()),
            }
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
    if bytes == 0 {
        return f(Workspace::empty(device));
    }
    let block = backend::of(device).alloc(bytes).map_err(TensorError::from)?;
    // SAFETY: the block is this launch's alone while f runs.
    f(unsafe { Workspace::from_raw(block.address() as *mut u8, bytes, device) })
}

/// A contiguous symbolic tensor of a declared output, on `device`.
fn symbolic(meta: &TensorMeta, device: Device) -> Result<Tensor, KernelError> {
    let strides = crate::shape::contiguous_strides(&meta.shape).map_err(|e| KernelError::Invalid(e.to_string()))?;
    let storage = Storage::symbolic(meta.bytes()? as usize, device);
    Ok(Tensor::from_storage(Arc::new(storage), meta.dtype, &meta.shape, &strides, 0)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eagerly_runs_its_launches_inside_a_trace_or_a_dry_run_and_puts_them_back() {
        let x = Tensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
        let program = crate::program::trace(&[x.clone()], |t| {
            let real = eagerly(|| call("neg", &Attrs::new(), &[&x])).unwrap().remove(0);
            assert_eq!(real.to_vec::<f32>().unwrap(), vec![-1.0, -2.0], "run, not recorded");
            Ok(call("add", &Attrs::new(), &[&t[0], &real])?)
        })
        .unwrap();
        assert_eq!(program.steps.len(), 1, "the trace records the add alone, and records again after");
        let recorder = Arc::new(launch_observer::KeyRecorder::default());
        launch_observer::set_launch_observer(Some(recorder.clone()));
        let real = eagerly(|| call("neg", &Attrs::new(), &[&x])).unwrap().remove(0);
        assert!(!real.storage().is_symbolic() && launch_observer::dry_run(), "the observer is back");
        launch_observer::set_launch_observer(None);
        assert!(recorder.launches().is_empty());
    }

    fn kept() -> usize {
        MADE.with(|made| made.borrow().len())
    }

    #[test]
    fn an_equal_typed_call_reuses_its_kernel_and_another_attribute_makes_a_new_one() {
        let x = Tensor::from_vec(vec![-1.0f32, 0.5, 3.0], &[3]).unwrap();
        assert_eq!(x.clip(Some(0.0), Some(1.0)).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.5, 1.0]);
        let after_first = kept();
        assert_eq!(x.clip(Some(0.0), Some(1.0)).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.5, 1.0]);
        assert_eq!(kept(), after_first, "the equal call found its kernel");
        // other bounds are another spec: a kernel of its own, not the first one's
        assert_eq!(x.clip(Some(0.0), Some(2.0)).unwrap().to_vec::<f32>().unwrap(), vec![0.0, 0.5, 2.0]);
        assert_eq!(kept(), after_first + 1);
        // another dtype is another spec too
        let y = Tensor::from_vec(vec![-1.0f64, 0.5, 3.0], &[3]).unwrap();
        assert_eq!(y.clip(Some(0.0), Some(1.0)).unwrap().to_vec::<f64>().unwrap(), vec![0.0, 0.5, 1.0]);
        assert_eq!(kept(), after_first + 2);
    }

    #[test]
    fn a_thread_keeps_at_most_its_share_of_kernels() {
        let x = Tensor::from_vec(vec![0.25f32], &[1]).unwrap();
        for i in 0..(KERNELS_KEPT + 10) {
            let high = 1.0 + i as f64;
            assert_eq!(x.clip(None, Some(high)).unwrap().to_vec::<f32>().unwrap(), vec![0.25]);
        }
        assert_eq!(kept(), KERNELS_KEPT);
    }
}
