//! `nbxtensor.backend.cpu.pool`: the CPU pool, and `parallel_for` over Python callables.
//!
//! The pieces run on the library's rayon pool with the GIL released around it; each piece
//! takes the GIL to call the Python function (numpy releases it again inside its loops).

use super::blas;
use crate::errors::to_py;
use nbxtensor::settings::threads as pool_threads;
use nbxtensor::settings::work_split::{self, Plan};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use rayon::prelude::*;
use std::ops::Range;
use std::time::{Duration, Instant};

/// The pool's size: the application's setting, or the measurement.
#[pyfunction]
fn threads() -> usize {
    pool_threads::threads()
}

/// The machine's compute cores as this process may use them (affinity and cgroup quota).
#[pyfunction]
fn measured_threads() -> usize {
    pool_threads::measured_threads()
}

/// Sets the pool's size (None: back to the measurement); the BLAS follows.
#[pyfunction]
fn set_threads(threads: Option<i64>) -> PyResult<()> {
    let threads = threads
        .map(|n| {
            usize::try_from(n)
                .map_err(|_| PyValueError::new_err(format!("set_threads({n}): a pool needs at least one thread")))
        })
        .transpose()?;
    pool_threads::set_threads(threads).map_err(to_py)?;
    blas::hold_to(pool_threads::threads());
    Ok(())
}

/// Calls `work(start, stop)` on each piece, across the pool, BLAS held to one thread per
/// piece; the first exception in piece order is raised once every piece has finished.
fn run_pieces(py: Python<'_>, work: &Py<PyAny>, pieces: Vec<Range<usize>>) -> PyResult<()> {
    let pool = pool_threads::pool();
    blas::hold_to(1);
    let results: Vec<PyResult<()>> = py.detach(|| {
        pool.install(|| {
            pieces
                .into_par_iter()
                .map(|piece| Python::attach(|py| work.call1(py, (piece.start, piece.end)).map(drop)))
                .collect()
        })
    });
    blas::hold_to(pool_threads::threads());
    results.into_iter().collect()
}

/// Runs `work` on `0..size`, inline or split, and times it.
fn time_once(py: Python<'_>, work: &Py<PyAny>, size: usize, split: bool) -> PyResult<Duration> {
    let start = Instant::now();
    if split {
        run_pieces(py, work, pool_threads::split(size, pool_threads::threads()))?;
    } else {
        work.call1(py, (0, size))?;
    }
    Ok(start.elapsed())
}

/// Runs `work(start, stop)` over `0..n`: inline under the threshold measured for `kind`,
/// else one contiguous piece per pool thread. The first call of a kind measures its
/// threshold with `probe(size)`, which returns the work function for a problem of `size`
/// elements (it must be repeatable: it is run several times).
#[pyfunction]
#[pyo3(signature = (n, work, kind, probe = None))]
fn parallel_for(py: Python<'_>, n: i64, work: Py<PyAny>, kind: &str, probe: Option<Py<PyAny>>) -> PyResult<()> {
    let n = usize::try_from(n).map_err(|_| PyValueError::new_err(format!("parallel_for: n must be ≥ 0, got {n}")))?;
    if !work.bind(py).is_callable() {
        return Err(PyValueError::new_err("parallel_for: work must be a callable work(start, stop)"));
    }
    loop {
        match work_split::plan(kind, n) {
            Plan::Inline if n == 0 => return Ok(()),
            Plan::Inline => return work.call1(py, (0, n)).map(drop),
            Plan::Pieces(pieces) => return run_pieces(py, &work, pieces),
            Plan::Measure => {
                let probe = probe.as_ref().ok_or_else(|| {
                    PyValueError::new_err(format!(
                        "parallel_for: kind '{kind}' has no threshold measured for {n} elements and no probe was given to measure it"
                    ))
                })?;
                let mut raised: Option<PyErr> = None;
                let measured = work_split::measure(n, |size, split| {
                    let attempt = probe.call1(py, (size,)).and_then(|f| time_once(py, &f, size, split));
                    attempt.map_err(|e| {
                        let message = e.to_string();
                        raised = Some(e);
                        message
                    })
                });
                match (measured, raised) {
                    (Ok(threshold), _) => work_split::record_threshold(kind, threshold),
                    (Err(_), Some(error)) => return Err(error),
                    (Err(message), None) => return Err(PyValueError::new_err(message)),
                }
            }
        }
    }
}

/// The threshold measured for `kind`: (split_from or None, measured_up_to), or None.
#[pyfunction]
fn threshold(kind: &str) -> Option<(Option<usize>, usize)> {
    work_split::threshold(kind).map(|t| (t.split_from, t.measured_up_to))
}

/// Forgets every measured threshold.
#[pyfunction]
fn forget_thresholds() {
    work_split::forget_thresholds();
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(threads, m)?)?;
    m.add_function(wrap_pyfunction!(measured_threads, m)?)?;
    m.add_function(wrap_pyfunction!(set_threads, m)?)?;
    m.add_function(wrap_pyfunction!(parallel_for, m)?)?;
    m.add_function(wrap_pyfunction!(threshold, m)?)?;
    m.add_function(wrap_pyfunction!(forget_thresholds, m)?)?;
    Ok(())
}
