//! Capture and verified replay: the launch list itself, checked byte for byte against an
//! eager run before it is trusted.

use super::{Executable, ProgramError, Result, Source};
use crate::kernel::Launch;
use crate::ops::with_workspace;
use crate::tensor::Tensor;

/// A captured program whose first replay matched the eager run byte for byte: replaying it
/// runs the bound launches with no allocation, dispatch or lookup.
pub struct Replay {
    executable: Executable,
}

impl Executable {
    /// Captures the launch list: runs the program eagerly on `inputs` (each launch with fresh
    /// outputs and workspace, as op calls would), then replays it once in the arena and
    /// compares every launch's outputs byte for byte. A difference refuses the capture and
    /// names the first launch whose output differs.
    pub fn capture(self, inputs: &[&Tensor]) -> Result<Replay> {
        let eager = self.eager_outputs(inputs)?;
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
        Ok(Replay { executable: self })
    }

    /// Every launch's output bytes from an eager run on `inputs`.
    fn eager_outputs(&self, inputs: &[&Tensor]) -> Result<Vec<Vec<Vec<u8>>>> {
        let mut values: Vec<Option<Tensor>> = vec![None; self.program.buffers.len()];
        for (&id, input) in self.program.inputs.iter().zip(inputs) {
            values[id] = Some((*input).clone());
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
            let device = self.arena.device();
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
        Ok(eager)
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
