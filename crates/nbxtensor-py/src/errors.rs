//! The mapping of the core's errors to Python exceptions.
//!
//! Bad values (unknown dtypes, bad shapes, refused settings, empty ranges) are `ValueError`;
//! a machine file or directory that cannot be read or written is `OSError`. Every message is
//! the core's, which names the value or the path at fault.

use nbxtensor::settings::SettingsError;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::PyErr;

/// Converts any core error into the Python exception the spec gives it.
pub fn to_py(error: impl Into<nbxtensor::Error>) -> PyErr {
    let error = error.into();
    let message = error.to_string();
    match error {
        nbxtensor::Error::Settings(SettingsError::Unreadable(_) | SettingsError::Unwritable(_)) => {
            PyOSError::new_err(message)
        }
        nbxtensor::Error::DType(_)
        | nbxtensor::Error::Facts(_)
        | nbxtensor::Error::Shape(_)
        | nbxtensor::Error::Settings(SettingsError::Invalid(_))
        | nbxtensor::Error::Random(_) => PyValueError::new_err(message),
    }
}
