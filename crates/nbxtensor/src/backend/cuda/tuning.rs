//! The autotune on CUDA (`settings::autotune`): a launch's candidates measured on its own
//! operands, on the thread's stream, at the first call of a device, kernel and shape class, and
//! the choice kept in the proven-settings store. While the stream records a graph nothing can be
//! timed: a proven choice serves, or none (the caller's fallback).

use super::memory::{CudaContext, CudaDeviceInfo};
use crate::kernel::{KernelError, Result};
use crate::settings::autotune::{self, TuneKey};

/// Timed runs of each candidate (after one untimed run).
pub const TUNING_RUNS: u32 = 5;

/// The device part of a key: its name, architecture and multiprocessors.
pub fn device_key(info: &CudaDeviceInfo) -> String {
    format!("{} {} {} SMs", info.name, info.arch(), info.multiprocessors)
}

/// The chosen candidate of `names` for `key`: proven in the store, or measured now (each one
/// queued by `launch`, once untimed then [`TUNING_RUNS`] times between two events) and kept;
/// `None` while the stream records a graph and the store proves nothing.
pub fn choice(
    context: &CudaContext,
    op: &str,
    key: &TuneKey,
    names: &[&str],
    mut launch: impl FnMut(&str) -> Result<()>,
) -> Result<Option<String>> {
    let tuned = |e: crate::settings::SettingsError| KernelError::Invalid(format!("{op}: {e}"));
    if context.is_capturing().map_err(KernelError::Device)? {
        return autotune::proven(key, names).map_err(tuned);
    }
    let chosen = autotune::choose(key, names, |name| {
        launch(name).map_err(|e| e.to_string())?;
        context.time_queued(TUNING_RUNS, || launch(name).map_err(|e| e.to_string()))
    });
    chosen.map(Some).map_err(tuned)
}
