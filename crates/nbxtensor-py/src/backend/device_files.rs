//! `nbxtensor.backend.device_files` and `device_names`: the device description files and the
//! host CPU, as plain Python data.

use crate::errors::to_py;
use nbxtensor::facts::{self, FactValue};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;

/// Converts generic fact data to Python (dict, list, str, int, float, bool, None).
fn to_python<'py>(py: Python<'py>, value: &FactValue) -> PyResult<Bound<'py, PyAny>> {
    match value {
        FactValue::Null => Ok(py.None().into_bound(py)),
        FactValue::Bool(b) => b.into_bound_py_any(py),
        FactValue::Int(i) => i.into_bound_py_any(py),
        FactValue::Float(f) => f.into_bound_py_any(py),
        FactValue::Str(s) => s.into_bound_py_any(py),
        FactValue::List(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            Ok(list.into_any())
        }
        FactValue::Map(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            Ok(dict.into_any())
        }
    }
}

/// One device's description as a new dict (vendor `"cpu"`, name `"host"`: the host measured now).
#[pyfunction]
fn read<'py>(py: Python<'py>, vendor: &str, name: &str) -> PyResult<Bound<'py, PyAny>> {
    to_python(py, &facts::device_description(vendor, name).map_err(to_py)?)
}

/// The vendors with descriptions, sorted.
#[pyfunction]
fn vendors() -> Vec<&'static str> {
    facts::vendors()
}

/// One vendor's device names, sorted.
#[pyfunction]
fn devices(vendor: &str) -> PyResult<Vec<&'static str>> {
    facts::devices(vendor).map_err(to_py)
}

/// The key (compute capability) of the device a driver names.
#[pyfunction]
fn arch_string(name: &str) -> PyResult<String> {
    facts::arch_string(name).map_err(to_py)
}

/// Whether the device's memory is the host's (no copy between them).
#[pyfunction]
fn shares_host_memory(vendor: &str, name: &str) -> PyResult<bool> {
    facts::shares_host_memory(vendor, name).map_err(to_py)
}

/// Whether the device's kernels compute float64.
#[pyfunction]
fn computes_float64(vendor: &str, name: &str) -> PyResult<bool> {
    facts::computes_float64(vendor, name).map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(vendors, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(arch_string, m)?)?;
    m.add_function(wrap_pyfunction!(shares_host_memory, m)?)?;
    m.add_function(wrap_pyfunction!(computes_float64, m)?)?;
    Ok(())
}
