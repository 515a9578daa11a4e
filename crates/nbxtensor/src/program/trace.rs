//! Tracing a model function into a [`Program`]: launches over symbolic buffers.

use super::{ProgramError, Result};
use crate::dtype::policy::Policy;
use crate::kernel::{Cost, Kernel};
use crate::memory::Device;
use crate::ops;
use crate::tensor::{Storage, Tensor};
use crate::DType;
use std::collections::HashMap;
use std::sync::Arc;

/// A buffer of a program (an input, or an output of a launch).
pub type BufferId = usize;

/// Where an operand's bytes come from.
#[derive(Clone)]
pub enum Source {
    /// A buffer of the program.
    Buffer(BufferId),
    /// A tensor the model captured (a weight): used in place, never copied.
    Constant(Tensor),
}

/// An operand of a launch: its bytes' source and the layout the launch sees them with.
#[derive(Clone)]
pub struct Operand {
    /// The bytes.
    pub source: Source,
    /// The dtype seen.
    pub dtype: DType,
    /// The shape seen.
    pub shape: Vec<i64>,
    /// The strides seen (elements).
    pub strides: Vec<i64>,
    /// The offset seen (elements).
    pub offset: i64,
}

/// One launch of a program.
#[derive(Clone)]
pub struct Step {
    /// The kernel, bound to its attributes.
    pub kernel: Arc<dyn Kernel>,
    /// Its declaration for these inputs.
    pub cost: Cost,
    /// Its inputs.
    pub inputs: Vec<Operand>,
    /// Its outputs, one buffer each (contiguous, as declared).
    pub outputs: Vec<BufferId>,
}

/// A buffer's size and meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// Bytes.
    pub bytes: u64,
    /// The dtype it holds.
    pub dtype: DType,
    /// Its contiguous shape.
    pub shape: Vec<i64>,
}

/// A traced model: its launches over symbolic buffers, its inputs and its outputs.
#[derive(Clone)]
pub struct Program {
    /// The launches, in order.
    pub steps: Vec<Step>,
    /// Every buffer: the inputs first, then the launches' outputs.
    pub buffers: Vec<BufferInfo>,
    /// The buffers of the program's inputs, in the order `trace` was given them.
    pub inputs: Vec<BufferId>,
    /// What the model function returned.
    pub outputs: Vec<Operand>,
    /// The device every buffer lives on (the inputs' device).
    pub device: Device,
}

/// Runs `model` on symbolic stand-ins of `inputs` (same dtypes and shapes) with every op
/// recorded instead of launched, and returns the program it formed. Tensors the model uses
/// that neither are inputs nor come from a launch (weights) become constants.
///
/// ```
/// use nbxtensor::{kernel::Attrs, ops, program, tensor::Tensor, DType};
/// let x = Tensor::from_vec(vec![0.5f32; 8], &[2, 4])?;
/// let p = program::trace(&[x.clone()], |t| {
///     let y = ops::call("exp", &Attrs::new(), &[&t[0]])?.remove(0);
///     Ok(ops::call("neg", &Attrs::new(), &[&y])?)
/// })?;
/// assert_eq!(p.steps.len(), 2);
/// # Ok::<(), nbxtensor::program::ProgramError>(())
/// ```
pub fn trace(inputs: &[Tensor], model: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>) -> Result<Program> {
    record(inputs, model)
}

/// As [`trace`], with `policy` in force for every op the model calls: each op's class decides
/// the dtype it computes in, its float inputs cast to it first (the casts recorded as
/// launches), and the model's float outputs cast to the policy's output dtype at the end.
///
/// ```
/// use nbxtensor::dtype::policy::Policy;
/// use nbxtensor::{program, DType, Tensor};
/// let x = Tensor::from_vec(vec![0.5f32; 8], &[2, 4])?;
/// let w = Tensor::from_vec(vec![0.25f32; 16], &[4, 4])?;
/// let policy = Policy::parse("params=float32,compute=bfloat16,output=float32")?;
/// let p = program::trace_with_policy(&policy, &[x], |t| Ok(vec![t[0].linear(&w, None)?.softmax(-1)?]))?;
/// let launched: Vec<String> = p.steps.iter().map(|s| s.kernel.key()).collect();
/// assert_eq!(launched, ["cast:fp32:bf16", "cast:fp32:bf16", "linear:bf16", "cast:bf16:fp32", "softmax:fp32:axis=-1"]);
/// # Ok::<(), nbxtensor::Error>(())
/// ```
pub fn trace_with_policy(
    policy: &Policy,
    inputs: &[Tensor],
    model: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>,
) -> Result<Program> {
    let output = policy.output();
    record(inputs, |stand_ins| {
        ops::with_policy(*policy, || {
            let returned = model(stand_ins)?;
            returned
                .into_iter()
                .map(|t| if t.dtype().is_float() && t.dtype() != output { Ok(t.cast(output)?) } else { Ok(t) })
                .collect()
        })
    })
}

fn record(inputs: &[Tensor], model: impl FnOnce(&[Tensor]) -> Result<Vec<Tensor>>) -> Result<Program> {
    let device = inputs.first().map(|t| t.device()).unwrap_or(Device::CPU);
    if let Some(other) = inputs.iter().find(|t| t.device() != device) {
        return Err(ProgramError::Invalid(format!(
            "trace: the inputs live on {device} and {}: a program runs on one device",
            other.device()
        )));
    }
    let stand_ins = inputs
        .iter()
        .map(|t| {
            let bytes = t.numel() as usize * t.dtype().itemsize().map_err(|e| ProgramError::Invalid(e.to_string()))?;
            let strides =
                crate::shape::contiguous_strides(t.shape()).map_err(|e| ProgramError::Invalid(e.to_string()))?;
            Ok(Tensor::from_storage(Arc::new(Storage::symbolic(bytes, device)), t.dtype(), t.shape(), &strides, 0)?)
        })
        .collect::<Result<Vec<_>>>()?;
    ops::start_recording()?;
    /// Ends the recording if the model panics, so the thread can trace again.
    struct StopOnUnwind;
    impl Drop for StopOnUnwind {
        fn drop(&mut self) {
            ops::finish_recording();
        }
    }
    let stop = StopOnUnwind;
    let returned = model(&stand_ins);
    std::mem::forget(stop);
    let launches = ops::finish_recording();
    let returned = returned?;

    let mut buffers = Vec::new();
    let mut by_storage: HashMap<*const Storage, BufferId> = HashMap::new();
    let register = |t: &Tensor, buffers: &mut Vec<BufferInfo>, by_storage: &mut HashMap<*const Storage, BufferId>| {
        let id = buffers.len();
        buffers.push(BufferInfo { bytes: t.storage().len() as u64, dtype: t.dtype(), shape: t.shape().to_vec() });
        by_storage.insert(Arc::as_ptr(t.storage()), id);
        id
    };
    let input_ids = stand_ins.iter().map(|t| register(t, &mut buffers, &mut by_storage)).collect();
    let mut steps = Vec::with_capacity(launches.len());
    for launch in launches {
        let inputs = launch.inputs.iter().map(|t| operand(t, &by_storage)).collect();
        let outputs = launch.outputs.iter().map(|t| register(t, &mut buffers, &mut by_storage)).collect();
        steps.push(Step { kernel: launch.kernel, cost: launch.cost, inputs, outputs });
    }
    for (index, step) in steps.iter().enumerate() {
        for &input in &step.cost.updates {
            if !matches!(step.inputs.get(input).map(|o| &o.source), Some(Source::Constant(_))) {
                return Err(ProgramError::Invalid(format!(
                    "launch {index} ({}) updates its input {input} in place: in a program that must be state \
                     the model holds (a tensor it captured, as a KV cache), not a program input or a value the \
                     program computes",
                    step.kernel.key()
                )));
            }
        }
    }
    let outputs = returned.iter().map(|t| operand(t, &by_storage)).collect();
    Ok(Program { steps, buffers, inputs: input_ids, outputs, device })
}

fn operand(tensor: &Tensor, by_storage: &HashMap<*const Storage, BufferId>) -> Operand {
    let source = match by_storage.get(&Arc::as_ptr(tensor.storage())) {
        Some(&id) => Source::Buffer(id),
        None => Source::Constant(tensor.clone()),
    };
    Operand {
        source,
        dtype: tensor.dtype(),
        shape: tensor.shape().to_vec(),
        strides: tensor.strides().to_vec(),
        offset: tensor.offset(),
    }
}

impl Program {
    /// Flops of every launch, added.
    pub fn flops(&self) -> u64 {
        self.steps.iter().map(|s| s.cost.flops).sum()
    }

    /// Bytes every launch reads and writes, added.
    pub fn bytes_moved(&self) -> u64 {
        self.steps.iter().map(|s| s.cost.bytes_read + s.cost.bytes_written).sum()
    }

    /// The launch keys, in order (what a dry run lists).
    pub fn keys(&self) -> Vec<String> {
        self.steps.iter().map(|s| s.kernel.key()).collect()
    }
}
