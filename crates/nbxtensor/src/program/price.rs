//! Pricing a program before it runs: flops, bytes, peak memory and a predicted time, from the
//! declarations alone and a device's peak rates (the roofline: each launch takes the longer of
//! its flops at the dtype's peak and its bytes at the memory bandwidth).

use super::{Program, ProgramError, Result};
use crate::backend::Peaks;

/// What a program costs, known before it runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Price {
    /// Launches.
    pub launches: usize,
    /// Flops of every launch.
    pub flops: u64,
    /// Bytes read and written by every launch.
    pub bytes: u64,
    /// The arena's bytes (the plan's peak memory, workspace included).
    pub arena_bytes: u64,
    /// The bytes the device's allocator will take for that arena (its granularity): what the run
    /// allocates, to the byte.
    pub allocated_bytes: u64,
    /// The plan's lower bound.
    pub lower_bound: u64,
    /// The predicted time in seconds (the roofline of every launch, added).
    pub seconds: f64,
}

impl Program {
    /// Prices the program on a device's `peaks`: a launch of a dtype the peaks do not list is
    /// refused by name (a missing fact, never a default).
    pub fn price(&self, peaks: &Peaks) -> Result<Price> {
        let plan = self.plan()?;
        let mut seconds = 0.0;
        for step in &self.steps {
            let dtype = step.cost.outputs.first().map(|m| m.dtype.name()).unwrap_or("float32");
            let rates = if step.kernel.uses_matrix_unit() { &peaks.matrix } else { &peaks.vector };
            let flops_time = if step.cost.flops == 0 {
                0.0
            } else {
                let rate = rates.get(dtype).ok_or_else(|| {
                    ProgramError::Invalid(format!(
                        "{}: {} has no peak rate for {dtype} ({})",
                        step.kernel.key(),
                        peaks.source,
                        if step.kernel.uses_matrix_unit() { "matrix" } else { "vector" }
                    ))
                })?;
                step.cost.flops as f64 / rate
            };
            let bytes_time = (step.cost.bytes_read + step.cost.bytes_written) as f64 / peaks.bandwidth;
            seconds += flops_time.max(bytes_time);
        }
        Ok(Price {
            launches: self.steps.len(),
            flops: self.flops(),
            bytes: self.bytes_moved(),
            arena_bytes: plan.arena_bytes(),
            allocated_bytes: plan.allocated_bytes(),
            lower_bound: plan.plan.lower_bound,
            seconds,
        })
    }
}
