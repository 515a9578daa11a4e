//! `nbxtensor.dtype.nbx_dtype`: what the Python enum `NBXDtype` is built from.

use crate::errors::to_py;
use nbxtensor::DType;
use pyo3::prelude::*;

/// `(table name, frozen value)` of every dtype, in code order.
#[pyfunction]
fn members() -> Vec<(&'static str, u8)> {
    DType::ALL.iter().map(|d| (d.name(), d.value())).collect()
}

/// Bytes per element of the dtype with this frozen value.
#[pyfunction]
fn size_of_value(value: u8) -> PyResult<usize> {
    DType::from_value(value).and_then(DType::itemsize).map_err(to_py)
}

/// The frozen value of a table name or alias, an `NBXDtype` member or a numpy dtype.
#[pyfunction]
fn parse_value(spelling: &Bound<'_, PyAny>) -> PyResult<u8> {
    super::dtype_arg(spelling, "parse_dtype").map(DType::value)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(members, m)?)?;
    m.add_function(wrap_pyfunction!(size_of_value, m)?)?;
    m.add_function(wrap_pyfunction!(parse_value, m)?)?;
    Ok(())
}
