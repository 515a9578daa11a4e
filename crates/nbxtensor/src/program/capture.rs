//! Capture and verified replay: the launch list itself, checked byte for byte against an
//! eager run before it is trusted.

use super::{Executable, ProgramError, Result, Source};
use crate::kernel::Launch;
use crate::memory::{host_allocator, Allocator};
use crate::tensor::Tensor;

/// A captured program whose first replay matched the eager run byte for byte: replaying it
/// runs the bound launches with no allocation, dispatch or lookup.
pub struct Replay {
    executable: Executable,
}

impl Executable {
    /// Captures the launch list: runs the program eagerly on `inputs` (each launch with fresh
    /// outputs and workspace, as op calls would) and replays it once in the arena, launch by
    /// launch, comparing every launch's outputs byte for byte. A difference refuses the
    /// capture and names the first launch whose output differs. An eager value is dropped
    /// after its last reader, so the capture holds the arena and the eager run's live values,
    /// never every launch's output at once.
    pub fn capture(self, inputs: &[&Tensor]) -> Result<Replay> {
        self.load_inputs(inputs)?;
        let steps = &self.program.steps;
        let mut last_reader = vec![0usize; self.program.buffers.len()];
        for (index, step) in steps.iter().enumerate() {
            for operand in &step.inputs {
                if let Source::Buffer(id) = operand.source {
                    last_reader[id] = index;
                }
            }
        }
        let mut values: Vec<Option<Tensor>> = vec![None; self.program.buffers.len()];
        for (&id, input) in self.program.inputs.iter().zip(inputs) {
            values[id] = Some((*input).clone());
        }
        for (index, step) in steps.iter().enumerate() {
            let eager = self.eager_launch(index, &values)?;
            self.launch(index)?;
            for (output, (replayed, expected)) in self.steps[index].outputs.iter().zip(&eager).enumerate() {
                let (got, want) = (replayed.to_bytes()?, expected.to_bytes()?);
                if let Some(byte) = got.iter().zip(&want).position(|(a, b)| a != b) {
                    return Err(ProgramError::NotReproducible { index, key: step.kernel.key(), output, byte });
                }
            }
            for (&id, tensor) in step.outputs.iter().zip(eager) {
                values[id] = Some(tensor);
            }
            for operand in &step.inputs {
                if let Source::Buffer(id) = operand.source {
                    if last_reader[id] == index {
                        values[id] = None;
                    }
                }
            }
        }
        Ok(Replay { executable: self })
    }

    /// Launch `index` run eagerly over the eager `values` of its inputs, into fresh outputs
    /// and workspace.
    fn eager_launch(&self, index: usize, values: &[Option<Tensor>]) -> Result<Vec<Tensor>> {
        let step = &self.program.steps[index];
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
        let outputs =
            step.cost.outputs.iter().map(|m| Tensor::zeros(m.dtype, &m.shape)).collect::<Result<Vec<_>, _>>()?;
        let mut workspace = host_allocator().alloc(step.cost.workspace as usize)?;
        step.kernel.launch(Launch { inputs: &bound, outputs: &outputs, workspace: workspace.as_mut_slice() })?;
        Ok(outputs)
    }
}

impl Replay {
    /// Replays the captured launches on new `inputs` (the traced dtypes and shapes).
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        self.executable.run(inputs)
    }

    /// The executable behind the replay.
    pub fn executable(&self) -> &Executable {
        &self.executable
    }
}
