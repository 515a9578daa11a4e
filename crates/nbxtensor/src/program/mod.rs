//! The program layer: trace → [`Program`] → plan → [`Executable`] → capture → verified
//! [`Replay`].
//!
//! 1. Trace: the model function runs with the ops recording instead of launching
//!    ([`trace`]); every launch is kept over symbolic buffers; nothing runs.
//! 2. Plan: every buffer's lifetime from its first to its last use; offsets in one arena from
//!    the static planner (in place where a kernel declares it safe); the program's price (its
//!    peak memory, flops and bytes) is known here, before anything is allocated.
//! 3. Execute: one arena allocation, then launches over planned addresses.
//! 4. Capture: the launch list itself (a graph on a device that records them). The first replay is compared byte for byte with an eager
//!    run on the same inputs; a difference refuses the capture and names the first launch
//!    whose output differs.
//! 5. Replay: no allocation, no dispatch, no lookups: the launches with their tensors bound.

mod capture;
mod error;
mod execute;
mod plan;
mod price;
mod trace;

pub use capture::Replay;
pub use error::ProgramError;
pub use execute::Executable;
pub use plan::ProgramPlan;
pub use price::Price;
pub use trace::{trace, trace_with_policy, BufferId, Operand, Program, Source, Step};

/// A result of the program layer.
pub type Result<T, E = ProgramError> = std::result::Result<T, E>;
