//! The mapping of the core's errors to Python exceptions.
//!
//! Bad values (unknown dtypes, bad shapes, refused settings, empty ranges) are `ValueError`;
//! a machine file or directory that cannot be read or written is `OSError`; an allocation
//! over the memory limit is `MemoryError`. Every message is
//! the core's, which names the value or the path at fault.

use nbxtensor::random::RandomError;
use nbxtensor::settings::SettingsError;
use pyo3::exceptions::{PyMemoryError, PyOSError, PyValueError};
use pyo3::PyErr;

/// Converts any core error into the Python exception the spec gives it.
pub fn to_py(error: impl Into<nbxtensor::Error>) -> PyErr {
    let error = error.into();
    let message = error.to_string();
    let settings = match &error {
        nbxtensor::Error::Settings(e) | nbxtensor::Error::Random(RandomError::Memory(e)) => Some(e),
        _ => None,
    };
    match settings {
        Some(SettingsError::OverLimit(_)) => PyMemoryError::new_err(message),
        Some(SettingsError::Unreadable(_) | SettingsError::Unwritable(_)) => PyOSError::new_err(message),
        Some(SettingsError::Invalid(_)) | None => PyValueError::new_err(message),
    }
}
