//! What the CPU and CUDA concurrency suites share (`tests/concurrency.rs`,
//! `tests/cuda/concurrency.rs`): cases run on 8 threads started together, each iteration's
//! values, and the `3x` program they trace.

use nbxtensor::kernel::Attrs;
use nbxtensor::ops;
use nbxtensor::program::ProgramError;
use nbxtensor::tensor::Tensor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

/// The threads of every case.
pub const THREADS: usize = 8;
/// The iterations of every thread.
pub const ITERATIONS: usize = 1000;

/// Runs `body(thread, wrong)` on every thread, started together; fails on a wrong answer or a
/// panic (each counted in `wrong`) or on a thread still running after `deadline`. `case`
/// names the case in the figures (shown with --nocapture) and failures.
pub fn on_threads(case: &str, deadline: Duration, body: impl Fn(usize, &AtomicUsize) + Send + Sync + 'static) {
    let body = Arc::new(body);
    let wrong = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(THREADS));
    let (done, finished) = mpsc::channel();
    for thread in 0..THREADS {
        let (body, wrong, start, done) = (Arc::clone(&body), Arc::clone(&wrong), Arc::clone(&start), done.clone());
        std::thread::spawn(move || {
            start.wait();
            // a panic is a wrong answer (and the thread still reports in)
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(thread, &wrong)));
            check(&wrong, run.is_ok());
            let _ = done.send(thread);
        });
    }
    let started = Instant::now();
    let end = started + deadline;
    for _ in 0..THREADS {
        let left = end.saturating_duration_since(Instant::now());
        finished.recv_timeout(left).unwrap_or_else(|_| panic!("{case}: a thread hung"));
    }
    assert_eq!(wrong.load(Ordering::SeqCst), 0, "{case}: wrong answers");
    println!(
        "{case}: {THREADS} threads x {ITERATIONS} iterations, 0 wrong, 0 hung, {:.2} s",
        started.elapsed().as_secs_f64()
    );
}

/// Counts a wrong answer.
pub fn check(wrong: &AtomicUsize, ok: bool) {
    if !ok {
        wrong.fetch_add(1, Ordering::SeqCst);
    }
}

/// The 64 values of a thread's iteration (distinct across threads and iterations).
pub fn values(thread: usize, iteration: usize) -> Vec<f32> {
    (0..64).map(|i| (thread * 100_000 + iteration + i) as f32).collect()
}

/// `3v`, what [`triple`] computes.
pub fn tripled(v: &[f32]) -> Vec<f32> {
    v.iter().map(|x| 3.0 * x).collect()
}

/// `3x`, as two launches.
pub fn triple(inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
    let twice = ops::call("add", &Attrs::new(), &[&inputs[0], &inputs[0]])?.remove(0);
    Ok(vec![ops::call("add", &Attrs::new(), &[&twice, &inputs[0]])?.remove(0)])
}
