//! `nbxtensor.memory`: the memory limit every allocator holds to.

use crate::errors::to_py;
use nbxtensor::memory::{host_allocator, Allocator};
use nbxtensor::settings::memory_limit;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Holds every device to a card of `bytes` (None: the physical memory again).
#[pyfunction]
fn set_limit(bytes: Option<i128>) -> PyResult<()> {
    let bytes = bytes
        .map(|b| {
            u64::try_from(b).map_err(|_| {
                PyValueError::new_err(format!(
                    "memory limit: {b} bytes is not a size; give a positive number of bytes or None"
                ))
            })
        })
        .transpose()?;
    memory_limit::set_limit(bytes).map_err(to_py)
}

/// The limit set, in bytes, or None (the physical memory is the limit).
#[pyfunction]
fn limit() -> Option<u64> {
    memory_limit::limit()
}

/// Bytes the host allocator counts in use now (blocks, and copies being made or handed out
/// that the library still counts).
#[pyfunction]
fn host_in_use() -> u64 {
    host_allocator().in_use()
}

/// The most bytes the host allocator counted in use at once since the last
/// `reset_host_high_water()` (process-wide: it measures one piece of work while nothing else
/// allocates).
#[pyfunction]
fn host_high_water() -> u64 {
    host_allocator().high_water()
}

/// Starts a new high-water mark at the bytes in use now, and returns them.
#[pyfunction]
fn reset_host_high_water() -> u64 {
    host_allocator().reset_high_water()
}

/// Returns the blocks the host allocator keeps for reuse to the system.
#[pyfunction]
fn release_parked() {
    host_allocator().release_parked()
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(host_in_use, m)?)?;
    m.add_function(wrap_pyfunction!(host_high_water, m)?)?;
    m.add_function(wrap_pyfunction!(reset_host_high_water, m)?)?;
    m.add_function(wrap_pyfunction!(release_parked, m)?)?;
    m.add_function(wrap_pyfunction!(set_limit, m)?)?;
    m.add_function(wrap_pyfunction!(limit, m)?)?;
    Ok(())
}
