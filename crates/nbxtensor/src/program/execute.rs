//! Executing a planned program: one arena, then launches over planned addresses.

use super::{Program, ProgramError, ProgramPlan, Result, Source};
use crate::kernel::{Launch, Workspace};
use crate::memory::{Arena, Region};
use crate::settings::threads;
use crate::tensor::{Storage, Tensor};
use std::sync::{Arc, Mutex, MutexGuard};

/// One launch with its tensors bound to the arena.
pub(super) struct BoundStep {
    pub(super) inputs: Vec<Tensor>,
    pub(super) outputs: Vec<Tensor>,
    pub(super) workspace: Region,
}

/// A program with its arena allocated and every launch's tensors bound: running it copies the
/// inputs in, launches every kernel, and copies the outputs out.
///
/// An executable may be shared between threads: its one arena serves one run at a time, so
/// runs from several threads take turns (each waits for the run before it), and each gets
/// the outputs of its own inputs.
pub struct Executable {
    pub(super) program: Program,
    pub(super) plan: ProgramPlan,
    pub(super) arena: Arc<Arena>,
    pub(super) steps: Vec<BoundStep>,
    pub(super) buffers: Vec<Tensor>,
    pub(super) outputs: Vec<Tensor>,
    /// Held for the whole of a run: the arena's inputs, launches and outputs belong to it.
    pub(super) turn: Mutex<()>,
}

impl Executable {
    /// Allocates the plan's arena (one allocation, counted against the memory limit) and binds
    /// every launch's inputs, outputs and workspace to it.
    pub fn new(program: Program, plan: ProgramPlan) -> Result<Executable> {
        let arena = Arena::on(program.device, plan.arena_bytes() as usize)?;
        let buffers = program
            .buffers
            .iter()
            .zip(&plan.buffer_offsets)
            .map(|(info, &offset)| {
                let region = Arena::region(&arena, offset as usize, info.bytes as usize)?;
                let strides =
                    crate::shape::contiguous_strides(&info.shape).map_err(|e| ProgramError::Invalid(e.to_string()))?;
                Ok(Tensor::from_storage(Arc::new(Storage::in_region(region)), info.dtype, &info.shape, &strides, 0)?)
            })
            .collect::<Result<Vec<Tensor>>>()?;
        let bind = |operand: &super::Operand| -> Result<Tensor> {
            let storage = match &operand.source {
                Source::Buffer(id) => Arc::clone(buffers[*id].storage()),
                Source::Constant(tensor) => Arc::clone(tensor.storage()),
            };
            Ok(Tensor::from_storage(storage, operand.dtype, &operand.shape, &operand.strides, operand.offset)?)
        };
        let steps = program
            .steps
            .iter()
            .zip(&plan.workspace_offsets)
            .map(|(step, &offset)| {
                Ok(BoundStep {
                    inputs: step.inputs.iter().map(&bind).collect::<Result<_>>()?,
                    outputs: step.outputs.iter().map(|&id| buffers[id].clone()).collect(),
                    workspace: Arena::region(&arena, offset as usize, step.cost.workspace as usize)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let outputs = program.outputs.iter().map(bind).collect::<Result<Vec<_>>>()?;
        Ok(Executable { program, plan, arena, steps, buffers, outputs, turn: Mutex::new(()) })
    }

    /// The program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The plan.
    pub fn plan(&self) -> &ProgramPlan {
        &self.plan
    }

    /// Bytes the arena holds (the one allocation of a run).
    pub fn arena_bytes(&self) -> usize {
        self.arena.len()
    }

    /// Copies `inputs` into their buffers, checking each against the traced dtype and shape.
    pub(super) fn load_inputs(&self, inputs: &[&Tensor]) -> Result<()> {
        if inputs.len() != self.program.inputs.len() {
            return Err(ProgramError::Invalid(format!(
                "the program takes {} inputs, {} were given",
                self.program.inputs.len(),
                inputs.len()
            )));
        }
        for (index, (given, &id)) in inputs.iter().zip(&self.program.inputs).enumerate() {
            let slot = &self.buffers[id];
            if given.dtype() != slot.dtype() || given.shape() != slot.shape() {
                return Err(ProgramError::Invalid(format!(
                    "input {index}: the program was traced with {} {:?}, given {} {:?}",
                    slot.dtype(),
                    slot.shape(),
                    given.dtype(),
                    given.shape()
                )));
            }
            // SAFETY: the slot is this executable's own buffer, and no launch runs while
            // inputs are loaded (on a GPU the copy is ordered on the launches' stream).
            unsafe { given.write_into(slot)? };
        }
        Ok(())
    }

    /// Launches step `index` over its bound tensors.
    pub(super) fn launch(&self, index: usize) -> Result<()> {
        let bound = &self.steps[index];
        // SAFETY: the workspace region belongs to this launch alone for its duration.
        let workspace =
            unsafe { Workspace::from_raw(bound.workspace.as_ptr(), bound.workspace.len(), bound.workspace.device()) };
        self.program.steps[index].kernel.launch(Launch {
            inputs: &bound.inputs,
            outputs: &bound.outputs,
            workspace,
        })?;
        Ok(())
    }

    /// Copies of the program's outputs.
    pub(super) fn copy_outputs(&self) -> Result<Vec<Tensor>> {
        Ok(self.outputs.iter().map(Tensor::fresh_copy).collect::<Result<_, _>>()?)
    }

    /// Copies of the outputs the arena holds: those of the last run, taken in turn with runs
    /// (after [`capture`](Self::capture), those of its verified run on the capture's inputs,
    /// which `replay.run` on the same inputs would give again: a caller that captured for a
    /// batch takes them here instead of running the program a third time).
    pub fn last_outputs(&self) -> Result<Vec<Tensor>> {
        let _turn = self.turn();
        self.copy_outputs()
    }

    /// This executable's turn at its arena: held by a run from loading the inputs to copying
    /// the outputs out (a run that panicked leaves nothing behind that the next one reads
    /// first: every run loads all its inputs anew).
    pub(super) fn turn(&self) -> MutexGuard<'_, ()> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs the program on `inputs` (the traced dtypes and shapes): copies them in, launches
    /// every kernel over the arena (a host program's from one of the CPU pool's threads), and
    /// returns copies of the outputs. Runs from several threads take turns.
    pub fn run(&self, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
        let _turn = self.turn();
        self.load_inputs(inputs)?;
        let launch_all = || (0..self.steps.len()).try_for_each(|index| self.launch(index));
        if crate::backend::of(self.program.device).host_addressable() {
            // on one of the pool's threads, so that a launch that splits its work starts on it
            // at once (from this thread each split would hand the work over and wait to be
            // woken), the others kept awake for the parts it splits off
            threads::install_awake(launch_all)?;
        } else {
            launch_all()?;
        }
        self.copy_outputs()
    }
}
