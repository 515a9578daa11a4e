//! The autotune on CUDA (`settings::autotune`): a launch's candidates measured on its own
//! operands, on the thread's stream, at the first call of a device, kernel and shape class, and
//! the choice kept in the proven-settings store. While the stream records a graph nothing can be
//! timed: a proven choice serves, or none (the caller's fallback).

use super::memory::{cuda_allocator, CudaAllocator, CudaBlock, CudaContext, CudaDeviceInfo};
use crate::kernel::{KernelError, Result};
use crate::settings::autotune::{self, TuneKey};

/// Timed runs of each candidate (after one untimed run).
pub const TUNING_RUNS: u32 = 5;

/// The device part of a key: its name, architecture and multiprocessors.
pub fn device_key(info: &CudaDeviceInfo) -> String {
    format!("{} {} {} SMs", info.name, info.arch(), info.multiprocessors)
}

/// How the autotune times a candidate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timing {
    /// Runs queued back to back: the operands as warm as repeated calls leave them in L2.
    BackToBack,
    /// Each run alone after the L2 is evicted (a write of twice its bytes, outside the time):
    /// the operands come from memory, as a model's weights and a decoder's KV cache do at each
    /// step (int4's products and decode attention; a weight of 8 MiB timed from a warm L2 chose
    /// worse than the graph of weights from memory showed, docs/BENCHMARKS.md).
    FromMemory,
}

/// The chosen candidate of `names` for `key`: proven in the store, or measured now (each one
/// queued by `launch`, once untimed then [`TUNING_RUNS`] times as `timing` says) and kept;
/// `None` while the stream records a graph and the store proves nothing.
pub fn choice(
    context: &CudaContext,
    op: &str,
    key: &TuneKey,
    names: &[&str],
    timing: Timing,
    mut launch: impl FnMut(&str) -> Result<()>,
) -> Result<Option<String>> {
    let tuned = |e: crate::settings::SettingsError| KernelError::Invalid(format!("{op}: {e}"));
    if context.is_capturing().map_err(KernelError::Device)? {
        return autotune::proven(key, names).map_err(tuned);
    }
    // the block written to evict the L2, made at the first measurement (none where the store
    // proves the choice)
    let mut eviction: Option<(&CudaAllocator, CudaBlock)> = None;
    let chosen = autotune::choose(key, names, |name| {
        launch(name).map_err(|e| e.to_string())?;
        match timing {
            Timing::BackToBack => context.time_queued(TUNING_RUNS, || launch(name).map_err(|e| e.to_string())),
            Timing::FromMemory => {
                let (allocator, block) = match &mut eviction {
                    Some(made) => made,
                    none => none.insert(eviction_block(context.info())?),
                };
                let evict =
                    || allocator.zero(block.device_ptr(), block.len()).map_err(|e| format!("the L2's eviction: {e}"));
                context.time_each(TUNING_RUNS, evict, || launch(name).map_err(|e| e.to_string()))
            }
        }
    });
    chosen.map(Some).map_err(tuned)
}

/// A block of twice the L2's bytes on the device of `info`, with its allocator (under the
/// memory limit, which may refuse it: the error names it).
fn eviction_block(info: &CudaDeviceInfo) -> std::result::Result<(&'static CudaAllocator, CudaBlock), String> {
    let bytes = usize::try_from(2 * info.l2_bytes).map_err(|_| "the L2's size overflows".to_string())?;
    let refused = |e| format!("the {bytes} bytes that evict the L2 between timed runs: {e}");
    let allocator = cuda_allocator(info.index).map_err(refused)?;
    Ok((allocator, allocator.alloc_exact(bytes).map_err(refused)?))
}
