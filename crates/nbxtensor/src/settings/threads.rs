//! The CPU thread pool: one rayon pool for the whole library, sized by measurement unless the
//! application sets a size.

use super::SettingsError;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
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

thread_local! {
    /// Whether this thread runs [`install_awake`]'s work or keeps awake for it.
    static AWAKE: Cell<bool> = const { Cell::new(false) };
}

/// Idle polls of a thread kept awake between which it offers its core to the system.
const POLLS_BEFORE_YIELD: u32 = 64;

/// Runs `work` on one of the pool's threads while the pool's other threads stay awake, polling
/// for the parallel work it splits off and taking it at once. A run of many short launches (a
/// program's replay at a batch of a few rows) otherwise wakes a sleeping thread for each
/// parallel launch, which costs a system call on one side and a wake-up of tens of
/// microseconds on the other. The helpers poll only until `work` returns (or panics), offer
/// their core to the system every [`POLLS_BEFORE_YIELD`] idle polls, and are detached: `work`
/// never waits for them. Inside such a run (or on a thread kept awake) it is [`install`].
pub fn install_awake<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    let pool = pool();
    if pool.current_num_threads() < 2 || AWAKE.get() {
        return pool.install(work);
    }
    pool.install(|| {
        let owner = rayon::current_thread_index();
        let done = Arc::new(AtomicBool::new(false));
        for _ in 1..pool.current_num_threads() {
            let done = Arc::clone(&done);
            rayon::spawn(move || keep_awake(owner, &done));
        }
        // `done` is set however `work` ends
        let _finish = Finish(done);
        AWAKE.set(true);
        let _clear = Clear;
        work()
    })
}

/// Sets its flag when dropped.
struct Finish(Arc<AtomicBool>);

impl Drop for Finish {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Clears this thread's [`AWAKE`] when dropped.
struct Clear;

impl Drop for Clear {
    fn drop(&mut self) {
        AWAKE.set(false);
    }
}

/// One of [`install_awake`]'s helpers: polls the pool for work until `done`. The run's own
/// thread, and a thread already inside such a run, return at once (a helper on the run's own
/// thread would poll on top of the run's work until the run ends: never).
fn keep_awake(owner: Option<usize>, done: &AtomicBool) {
    if rayon::current_thread_index() == owner || AWAKE.get() {
        return;
    }
    AWAKE.set(true);
    let _clear = Clear;
    let mut idle = 0u32;
    while !done.load(Ordering::Acquire) {
        if rayon::yield_now() == Some(rayon::Yield::Executed) {
            idle = 0;
        } else if idle == POLLS_BEFORE_YIELD {
            std::thread::yield_now();
            idle = 0;
        } else {
            idle += 1;
            std::hint::spin_loop();
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn a_kept_awake_run_gives_its_value_nests_and_passes_a_panic_on() {
        let sum: u64 = install_awake(|| (0..10_000u64).into_par_iter().map(|i| i * i).sum());
        assert_eq!(sum, (0..10_000u64).map(|i| i * i).sum::<u64>());
        // a run inside a run runs on a pool thread too (whether helpers poll depends on the
        // pool's size, which other tests of this binary change meanwhile: not asserted)
        assert!(install_awake(|| install_awake(|| rayon::current_thread_index().is_some())));
        // a panic reaches the caller, and the runs after it finish with their values
        let caught = std::panic::catch_unwind(|| install_awake(|| -> u32 { panic!("inside a kept-awake run") }));
        assert!(caught.is_err());
        for i in 0..200u64 {
            let n = install_awake(|| (0..i).into_par_iter().sum::<u64>());
            assert_eq!(n, i * i.saturating_sub(1) / 2);
        }
    }
}
