//! (being written)
use pyo3::prelude::*;

/// Registers the module's functions.
pub fn register(_m: &Bound<'_, PyModule>) -> PyResult<()> {
    Ok(())
}
