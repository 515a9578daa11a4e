//! The CPU thread pool: one rayon pool for the whole library, sized by measurement unless the
//! application sets a size.

use super::SettingsError;
use std::sync::{Arc, OnceLock, RwLock};

/// The pool in force and the size it was built with (`None`: the measured size).
struct PoolState {
    setting: Option<usize>,
    pool: Arc<rayon::ThreadPool>,
}

fn state() -> &'static RwLock<PoolState> {
    static STATE: OnceLock<RwLock<PoolState>> = OnceLock::new();
    STATE.get_or_init(|| RwLock::new(PoolState { setting: None, pool: build(measured_threads()) }))
}

fn build(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("nbxtensor-cpu-{i}"))
            .build()
            .expect("a rayon pool of at least one thread can be built"),
    )
}

/// The machine's compute cores as this process may use them: the CPUs of its affinity mask,
/// bounded by a cgroup CPU quota where one is set (read by `std::thread::available_parallelism`),
/// measured once per process (the reading opens files under /proc and /sys: 10–20 µs, which
/// every kernel launch asking for the pool's size paid before).
///
/// ```
/// assert!(nbxtensor::settings::threads::measured_threads() >= 1);
/// ```
pub fn measured_threads() -> usize {
    static MEASURED: OnceLock<usize> = OnceLock::new();
    *MEASURED.get_or_init(|| std::thread::available_parallelism().map(usize::from).unwrap_or(1))
}

/// Where [`measured_threads`] reads the machine.
pub const MEASURED_FROM: &str = "sched_getaffinity bounded by the cgroup CPU quota (cpu.max / cpu.cfs_quota_us)";

/// The pool's size: the application's setting, or the measurement.
pub fn threads() -> usize {
    let guard = state().read().unwrap_or_else(|e| e.into_inner());
    guard.setting.unwrap_or_else(measured_threads)
}

/// The largest pool [`set_threads`] builds: every thread is spawned when the pool is built,
/// and past a thousand threads their stacks alone take gigabytes.
pub const MAX_THREADS: usize = 1024;

/// Sets the pool's size; `None` goes back to the measurement. Zero, and more than
/// [`MAX_THREADS`], are refused.
///
/// ```
/// use nbxtensor::settings::threads;
/// threads::set_threads(Some(3))?;
/// assert_eq!(threads::threads(), 3);
/// threads::set_threads(None)?;
/// assert_eq!(threads::threads(), threads::measured_threads());
/// assert!(threads::set_threads(Some(0)).is_err());
/// assert!(threads::set_threads(Some(1 << 20)).is_err());
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn set_threads(threads: Option<usize>) -> Result<(), SettingsError> {
    if threads == Some(0) {
        return Err(SettingsError::Invalid("set_threads(0): a pool needs at least one thread".into()));
    }
    if let Some(n) = threads.filter(|n| *n > MAX_THREADS) {
        return Err(SettingsError::Invalid(format!("set_threads({n}): more than {MAX_THREADS} threads is refused")));
    }
    let size = threads.unwrap_or_else(measured_threads);
    let mut guard = state().write().unwrap_or_else(|e| e.into_inner());
    if guard.pool.current_num_threads() != size {
        guard.pool = build(size);
    }
    guard.setting = threads;
    Ok(())
}

/// The pool in force (kept alive by the caller while it runs work on it).
pub fn pool() -> Arc<rayon::ThreadPool> {
    Arc::clone(&state().read().unwrap_or_else(|e| e.into_inner()).pool)
}

/// Runs `work` inside the pool in force, so rayon's parallel iterators in it use that pool.
pub fn install<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    pool().install(work)
}

/// Splits `0..n` into at most `pieces` contiguous ranges of near-equal length (the first
/// `n % pieces` ranges one longer), none empty.
///
/// ```
/// use nbxtensor::settings::threads::split;
/// assert_eq!(split(10, 3), vec![0..4, 4..7, 7..10]);
/// assert_eq!(split(2, 4), vec![0..1, 1..2]);
/// assert!(split(0, 4).is_empty());
/// ```
pub fn split(n: usize, pieces: usize) -> Vec<std::ops::Range<usize>> {
    let pieces = pieces.max(1).min(n);
    let (base, extra) = if pieces == 0 { (0, 0) } else { (n / pieces, n % pieces) };
    let mut start = 0;
    (0..pieces)
        .map(|i| {
            let len = base + usize::from(i < extra);
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}
