//! `nbxtensor.memory`: the memory limit every allocator holds to.

use crate::errors::to_py;
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

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_limit, m)?)?;
    m.add_function(wrap_pyfunction!(limit, m)?)?;
    Ok(())
}
