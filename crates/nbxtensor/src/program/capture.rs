//! Capture and verified replay: the launch list itself, checked byte for byte against an
//! eager run before it is trusted.

use super::{Executable, ProgramError, Result, Source};
use crate::backend::cuda::CudaGraph;
use crate::kernel::KernelError;
use crate::kernel::Launch;
use crate::memory::DeviceKind;
use crate::ops::with_workspace;
use crate::tensor::Tensor;

/// The bytes of an eager run: every launch's outputs, and the program's outputs.
struct Eager {
    launches: Vec<Vec<Vec<u8>>>,
    outputs: Vec<Vec<u8>>,
}

/// A captured program whose first replay matched the eager run byte for byte: replaying it
/// runs the bound launches with no allocation, dispatch or lookup (on a GPU, one launch of
/// the CUDA graph that recorded them).
pub struct Replay {
    executable: Executable,
    graph: Option<CudaGraph>,
}

impl Executable {
    /// Captures the launch list: runs the program eagerly on `inputs` (each launch with fresh
    /// outputs and workspace, as op calls would), then replays it once in the arena and
    /// compares every launch's outputs byte for byte. A difference refuses the capture and
    /// names the first launch whose output differs.
    ///
    /// On a GPU the launches are recorded as a CUDA graph; its first replay's outputs are
    /// compared with the eager run's, and on a difference the launches are stepped one by one
    /// to name the first that differs.
    pub fn capture(self, inputs: &[&Tensor]) -> Result<Replay> {
        let eager = self.eager_outputs(inputs)?;
        let device = self.arena.device();
        if device.kind == DeviceKind::Cuda {
            self.load_inputs(inputs)?;
            let graph = CudaGraph::capture(device, || {
                (0..self.steps.len()).try_for_each(|i| self.launch(i).map_err(to_kernel))
            })?;
            graph.launch()?;
            graph.synchronize()?;
            let replayed = self.outputs.iter().map(|t| t.to_bytes()).collect::<Result<Vec<_>, _>>()?;
            if let Some((output, byte)) = first_mismatch(&replayed, &eager.outputs) {
                self.first_difference(inputs, &eager.launches)?;
                // every launch matched when stepped: name the launch that wrote the output
                return Err(self.producer_of(output, byte));
            }
            return Ok(Replay { executable: self, graph: Some(graph) });
        }
        self.first_difference(inputs, &eager.launches)?;
        Ok(Replay { executable: self, graph: None })
    }

    /// The error naming the launch that wrote program output `output` (or its first launch
    /// when the output is an input or a constant).
    fn producer_of(&self, output: usize, byte: usize) -> ProgramError {
        let id = match self.program.outputs[output].source {
            Source::Buffer(id) => Some(id),
            Source::Constant(_) => None,
        };
        let found = self.program.steps.iter().enumerate().rev().find_map(|(index, step)| {
            let position = step.outputs.iter().position(|&o| Some(o) == id)?;
            Some((index, position))
        });
        let (index, output) = found.unwrap_or((0, 0));
        ProgramError::NotReproducible { index, key: self.program.steps[index].kernel.key(), output, byte }
    }

    /// Runs the launches one by one in the arena, comparing each launch's outputs with the
    /// eager run's; the first difference is the error.
    fn first_difference(&self, inputs: &[&Tensor], eager: &[Vec<Vec<u8>>]) -> Result<()> {
        self.load_inputs(inputs)?;
        for (index, eager_outputs) in eager.iter().enumerate() {
            self.launch(index)?;
            for (output, (replayed, expected)) in self.steps[index].outputs.iter().zip(eager_outputs).enumerate() {
                let got = replayed.to_bytes()?;
                if let Some(byte) = got.iter().zip(expected).position(|(a, b)| a != b) {
                    return Err(ProgramError::NotReproducible {
                        index,
                        key: self.program.steps[index].kernel.key(),
                        output,
                        byte,
                    });
                }
            }
        }
        Ok(())
    }

    /// Every launch's output bytes from an eager run on `inputs`, and the program's outputs'.
    fn eager_outputs(&self, inputs: &[&Tensor]) -> Result<Eager> {
        let device = self.arena.device();
        let mut values: Vec<Option<Tensor>> = vec![None; self.program.buffers.len()];
        for (&id, input) in self.program.inputs.iter().zip(inputs) {
            values[id] = Some(input.to(device)?);
        }
        let mut eager = Vec::with_capacity(self.program.steps.len());
        for (index, step) in self.program.steps.iter().enumerate() {
            let bound = step
                .inputs
                .iter()
                .map(|operand| {
                    let storage = match &operand.source {
                        Source::Buffer(id) => {
                            values[*id].as_ref().map(|t| std::sync::Arc::clone(t.storage())).ok_or_else(|| {
                                ProgramError::Invalid(format!("launch {index} reads buffer {id} before it is written"))
                            })?
                        }
                        Source::Constant(tensor) => std::sync::Arc::clone(tensor.storage()),
                    };
                    Ok(Tensor::from_storage(storage, operand.dtype, &operand.shape, &operand.strides, operand.offset)?)
                })
                .collect::<Result<Vec<_>>>()?;
            let outputs = step
                .cost
                .outputs
                .iter()
                .map(|m| Tensor::for_output(device, m.dtype, &m.shape))
                .collect::<Result<Vec<_>, _>>()?;
            with_workspace(device, step.cost.workspace as usize, |workspace| {
                step.kernel.launch(Launch { inputs: &bound, outputs: &outputs, workspace })
            })?;
            eager.push(outputs.iter().map(|t| t.to_bytes()).collect::<Result<Vec<_>, _>>()?);
            for (&id, tensor) in step.outputs.iter().zip(outputs) {
                values[id] = Some(tensor);
            }
        }
        let program_outputs = self
            .program
            .outputs
            .iter()
            .map(|operand| {
                let storage = match &operand.source {
                    Source::Buffer(id) => values[*id]
                        .as_ref()
                        .map(|t| std::sync::Arc::clone(t.storage()))
                        .ok_or_else(|| ProgramError::Invalid(format!("output buffer {id} is never written")))?,
                    Source::Constant(tensor) => std::sync::Arc::clone(tensor.storage()),
                };
                Ok(Tensor::from_storage(storage, operand.dtype, &operand.shape, &operand.strides, operand.offset)?
                    .to_bytes()?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Eager { launches: eager, outputs: program_outputs })
    }
}

impl Replay {
    /// Replays the captured launches on new `inputs` (the traced dtypes and shapes).
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        match &self.graph {
            Some(graph) => {
                self.executable.load_inputs(inputs)?;
                graph.launch()?;
                self.executable.copy_outputs()
            }
            None => self.executable.run(inputs),
        }
    }

    /// The CUDA graph a GPU program replays (`None` on the CPU).
    pub fn graph(&self) -> Option<&CudaGraph> {
        self.graph.as_ref()
    }

    /// The executable behind the replay.
    pub fn executable(&self) -> &Executable {
        &self.executable
    }
}

fn to_kernel(error: ProgramError) -> KernelError {
    match error {
        ProgramError::Kernel(e) => e,
        other => KernelError::Invalid(other.to_string()),
    }
}

/// The first output (and byte in it) where two runs' outputs differ.
fn first_mismatch(got: &[Vec<u8>], want: &[Vec<u8>]) -> Option<(usize, usize)> {
    got.iter().zip(want).enumerate().find_map(|(index, (g, w))| {
        let byte = g.iter().zip(w).position(|(a, b)| a != b).or((g.len() != w.len()).then_some(g.len().min(w.len())))?;
        Some((index, byte))
    })
}
