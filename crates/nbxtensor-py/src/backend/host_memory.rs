//! `nbxtensor.backend.host_memory`: the host's memory, as this process sees it.

use crate::errors::to_py;
use nbxtensor::settings::host_memory;
use pyo3::prelude::*;

/// Total, free and available bytes of host memory, and where they were read.
#[pyclass(module = "nbxtensor.backend.host_memory", name = "MemoryState", frozen, get_all)]
struct MemoryState {
    /// Bytes the process may hold in all (a smaller cgroup limit wins).
    total: u64,
    /// Bytes not in use at all.
    free: u64,
    /// Bytes that can be had without swapping.
    available: u64,
    /// Where the figures were read.
    source: String,
}

#[pymethods]
impl MemoryState {
    fn __repr__(&self) -> String {
        format!(
            "MemoryState(total={}, free={}, available={}, source={:?})",
            self.total, self.free, self.available, self.source
        )
    }
}

/// Reads the host's memory now.
#[pyfunction]
fn memory_state() -> PyResult<MemoryState> {
    let state = host_memory::memory_state().map_err(to_py)?;
    Ok(MemoryState { total: state.total, free: state.free, available: state.available, source: state.source })
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<MemoryState>()?;
    m.add_function(wrap_pyfunction!(memory_state, m)?)?;
    Ok(())
}
