//! Planning a program: every buffer's lifetime, the workspace of every launch, and their
//! offsets in one arena from the static planner.

use super::{Program, ProgramError, Result, Source};
use crate::backend;
use crate::memory::{BufferRequest, Device, Plan};

/// A program's memory plan: the arena offset of each buffer and of each launch's workspace.
#[derive(Clone, Debug)]
pub struct ProgramPlan {
    /// The planner's answer (the requests are the buffers, then one workspace per launch).
    pub plan: Plan,
    /// The requests planned, for the report and the picture.
    pub requests: Vec<BufferRequest>,
    /// Each buffer's offset.
    pub buffer_offsets: Vec<u64>,
    /// Each launch's workspace offset.
    pub workspace_offsets: Vec<u64>,
    /// The device the arena lives on.
    pub device: Device,
}

impl ProgramPlan {
    /// The arena's size: the program's peak memory, workspace included.
    pub fn arena_bytes(&self) -> u64 {
        self.plan.arena_bytes
    }

    /// The bytes the device's allocator takes for the arena (its granularity): what executing
    /// the plan allocates, to the byte.
    pub fn allocated_bytes(&self) -> u64 {
        backend::of(self.device).allocated_bytes(self.arena_bytes())
    }

    /// The plan's report (arena, bound, ratio, per-buffer table).
    pub fn report(&self) -> String {
        self.plan.report(&self.requests)
    }

    /// The plan's picture (SVG: time across, address up).
    pub fn svg(&self, title: &str) -> String {
        self.plan.svg(&self.requests, title)
    }
}

impl Program {
    /// The buffers' lifetimes as planner requests: an input lives from launch 0, a launch's
    /// output from that launch; each to its last reader (the program's outputs to the end).
    /// An output takes over an input in place where the kernel declared it safe and that
    /// input is a whole buffer read for the last time by that launch. Then one workspace
    /// request per launch, alive during that launch only.
    pub fn requests(&self) -> Vec<BufferRequest> {
        let end = self.steps.len();
        let mut first = vec![0usize; self.buffers.len()];
        let mut last = vec![0usize; self.buffers.len()];
        for (index, step) in self.steps.iter().enumerate() {
            for &out in &step.outputs {
                first[out] = index;
                last[out] = index;
            }
            for operand in &step.inputs {
                if let Source::Buffer(id) = operand.source {
                    last[id] = last[id].max(index);
                }
            }
        }
        let mut pinned = vec![false; self.buffers.len()];
        for &id in &self.inputs {
            pinned[id] = true;
        }
        for operand in &self.outputs {
            if let Source::Buffer(id) = operand.source {
                last[id] = end;
                pinned[id] = true;
            }
        }
        let mut requests: Vec<BufferRequest> = (0..self.buffers.len())
            .map(|id| BufferRequest::new(id, self.buffers[id].bytes, first[id], last[id]))
            .collect();
        for (index, step) in self.steps.iter().enumerate() {
            for &(input, output) in &step.cost.in_place {
                let (Some(operand), Some(&out)) = (step.inputs.get(input), step.outputs.get(output)) else { continue };
                let Source::Buffer(id) = operand.source else { continue };
                let whole = operand.offset == 0
                    && crate::shape::is_contiguous(&operand.shape, &operand.strides).unwrap_or(false)
                    && self.buffers[id].bytes == self.buffers[out].bytes;
                if whole && !pinned[id] && last[id] == index && requests[out].reuse_of.is_none() {
                    requests[out] = requests[out].in_place_of(id);
                }
            }
        }
        let base = self.buffers.len();
        requests.extend(
            self.steps
                .iter()
                .enumerate()
                .map(|(index, step)| BufferRequest::new(base + index, step.cost.workspace, index, index)),
        );
        requests
    }

    /// Plans the program in one arena on its device (offsets aligned to the device
    /// allocator's alignment); refused before anything is allocated when the arena passes the memory
    /// limit.
    pub fn plan(&self) -> Result<ProgramPlan> {
        let requests = self.requests();
        let alignment = backend::of(self.device).alignment();
        let plan = Plan::new(&requests, alignment).map_err(|e| ProgramError::Invalid(e.to_string()))?;
        crate::memory::check_fits(self.device, plan.arena_bytes, "the program's arena")?;
        let buffer_offsets = plan.offsets[..self.buffers.len()].to_vec();
        let workspace_offsets = plan.offsets[self.buffers.len()..].to_vec();
        Ok(ProgramPlan { plan, requests, buffer_offsets, workspace_offsets, device: self.device })
    }
}
