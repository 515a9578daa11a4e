//! The mapping of the core's errors to Python exceptions.
//!
//! Every error of the dtype and shape layers is a `ValueError` whose message is the core's
//! message, which names the value at fault.

use pyo3::exceptions::PyValueError;
use pyo3::PyErr;

/// Converts any core error into the Python exception the spec gives it.
pub fn to_py(error: impl Into<nbxtensor::Error>) -> PyErr {
    match error.into() {
        nbxtensor::Error::DType(e) => PyValueError::new_err(e.to_string()),
        nbxtensor::Error::Shape(e) => PyValueError::new_err(e.to_string()),
        nbxtensor::Error::Facts(e) => PyValueError::new_err(e.to_string()),
    }
}
