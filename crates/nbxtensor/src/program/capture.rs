//! Capture and verified replay: the launch list itself (a CUDA graph on a GPU), checked byte
//! for byte against an eager run before it is trusted.

use super::{Executable, ProgramError, Result, Source};
use crate::backend::{self, Graph};
use crate::dtype::DType;
use crate::kernel::{Attrs, KernelError, Launch};
use crate::ops::with_workspace;
use crate::tensor::Tensor;

/// A captured program whose first replay matched the eager run byte for byte: replaying it
/// runs the bound launches with no allocation, dispatch or lookup (on a GPU, one launch of
/// the graph that recorded them).
pub struct Replay {
    executable: Executable,
    graph: Option<Box<dyn Graph>>,
}

impl Executable {
    /// Captures the launch list: runs the program eagerly on `inputs` (each launch with fresh
    /// outputs and workspace, as op calls would) and replays it once in the arena, launch by
    /// launch, comparing every launch's outputs byte for byte. A difference refuses the
    /// capture and names the first launch whose output differs. An eager value is dropped
    /// after its last reader, so the capture holds the arena and the eager run's live values,
    /// never every launch's output at once.
    ///
    /// On a device that records graphs (a GPU) the launches are then recorded as one, and its first replay
    /// must give the same outputs as the launches did one by one; a difference names the
    /// launch that wrote the differing output.
    pub fn capture(self, inputs: &[&Tensor]) -> Result<Replay> {
        self.check_launches(inputs)?;
        let device = backend::of(self.arena.device());
        let mut queue = || (0..self.steps.len()).try_for_each(|i| self.launch(i).map_err(to_kernel));
        let Some(graph) = device.capture(&mut queue)? else {
            return Ok(Replay { executable: self, graph: None });
        };
        // recording ran nothing: the outputs still hold the launch-by-launch run's bytes
        let expected = self.outputs.iter().map(|t| t.to_bytes()).collect::<Result<Vec<_>, _>>()?;
        self.load_inputs(inputs)?;
        graph.launch()?;
        graph.synchronize()?;
        let replayed = self.outputs.iter().map(|t| t.to_bytes()).collect::<Result<Vec<_>, _>>()?;
        if let Some((output, byte)) = first_mismatch(&replayed, &expected) {
            return Err(self.producer_of(output, byte));
        }
        Ok(Replay { executable: self, graph: Some(graph) })
    }

    /// Runs every launch eagerly and in the arena, one after the other, comparing their
    /// outputs; the first difference is the error.
    fn check_launches(&self, inputs: &[&Tensor]) -> Result<()> {
        self.load_inputs(inputs)?;
        let device = self.arena.device();
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
            values[id] = Some(input.to(device)?);
        }
        for (index, step) in steps.iter().enumerate() {
            let eager = self.eager_launch(index, &values)?;
            self.launch(index)?;
            for (output, (replayed, expected)) in self.steps[index].outputs.iter().zip(&eager).enumerate() {
                if let Some(byte) = first_difference(replayed, expected)? {
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
        Ok(())
    }

    /// The error naming the launch that wrote program output `output` (or the first launch
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

    /// Launch `index` run eagerly over the eager `values` of its inputs, into fresh outputs
    /// and workspace on the program's device.
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
        Ok(outputs)
    }
}

impl Replay {
    /// Replays the captured launches on new `inputs` (the traced dtypes and shapes).
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        match &self.graph {
            Some(graph) => {
                let _turn = self.executable.turn(); // replays share the arena: one at a time
                self.executable.load_inputs(inputs)?;
                graph.launch()?;
                self.executable.copy_outputs()
            }
            None => self.executable.run(inputs),
        }
    }

    /// The graph a GPU program replays (`None` on the CPU, which replays its launch list).
    pub fn graph(&self) -> Option<&dyn Graph> {
        self.graph.as_deref()
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

/// The first byte where two launch outputs of one dtype and shape differ, if any. Where the host
/// cannot read them (a GPU) they are compared there first, as unsigned integers of their width
/// (`ne`, then `any`), so that only a flag crosses to the host: a prefill's outputs are
/// gigabytes, which the host would copy twice and compare. Their bytes are read to the host only
/// where they differ (to name the byte), or where no unsigned dtype has their width; on the
/// host they are compared in place.
fn first_difference(got: &Tensor, want: &Tensor) -> Result<Option<usize>> {
    let width = got.dtype().itemsize().map_err(|e| ProgramError::Invalid(e.to_string()))?;
    let unsigned = match width {
        1 => Some(DType::Uint8),
        2 => Some(DType::Uint16),
        4 => Some(DType::Uint32),
        8 => Some(DType::Uint64),
        _ => None,
    };
    if let (false, Some(unsigned)) = (backend::of(got.device()).host_addressable(), unsigned) {
        let (a, b) = (got.view_dtype(unsigned)?, want.view_dtype(unsigned)?);
        let differs = crate::ops::call("ne", &Attrs::new(), &[&a, &b])?.remove(0);
        let axes: Vec<i64> = (0..differs.ndim() as i64).collect();
        if differs.any(&axes, false)?.to_bytes()? == [0] {
            return Ok(None);
        }
    }
    // contiguous host outputs are compared where they are, without a copy, as whole slices (the
    // C library's vectorized comparison; a byte loop cost a MiniLM capture a tenth of its time),
    // then byte by byte only where they differ
    let (got, want) = (got.host_bytes()?, want.host_bytes()?);
    if got[..] == want[..] {
        return Ok(None);
    }
    Ok(got.iter().zip(want.iter()).position(|(a, b)| a != b))
}

/// The first output (and byte in it) where two runs' outputs differ.
fn first_mismatch(got: &[Vec<u8>], want: &[Vec<u8>]) -> Option<(usize, usize)> {
    got.iter().zip(want).enumerate().find_map(|(index, (g, w))| {
        let byte = g.iter().zip(w).position(|(a, b)| a != b).or((g.len() != w.len()).then_some(g.len().min(w.len())))?;
        Some((index, byte))
    })
}
