//! The mapping of the core's errors to Python exceptions.
//!
//! Bad values (unknown dtypes, bad shapes, refused settings, empty ranges, buffer requests no
//! plan can hold) are `ValueError`; a machine file or directory that cannot be read or written
//! is `OSError`; an allocation over the memory limit is `MemoryError`; a failed device call
//! (driver, compiler, library) is `RuntimeError`. Every message is
//! the core's, which names the value or the path at fault.

use nbxtensor::io::IoError;
use nbxtensor::kernel::KernelError;
use nbxtensor::memory::MemoryError;
use nbxtensor::program::ProgramError;
use nbxtensor::random::RandomError;
use nbxtensor::settings::SettingsError;
use nbxtensor::tensor::TensorError;
use pyo3::exceptions::{
    PyFileNotFoundError, PyKeyError, PyMemoryError, PyOSError, PyPermissionError, PyRuntimeError, PyValueError,
};
use pyo3::PyErr;

/// Converts any core error into the Python exception the spec gives it.
pub fn to_py(error: impl Into<nbxtensor::Error>) -> PyErr {
    let error = error.into();
    let message = error.to_string();
    match &error {
        nbxtensor::Error::Io(IoError::Os { kind: std::io::ErrorKind::NotFound, .. }) => {
            return PyFileNotFoundError::new_err(message)
        }
        nbxtensor::Error::Io(IoError::Os { kind: std::io::ErrorKind::PermissionDenied, .. }) => {
            return PyPermissionError::new_err(message)
        }
        nbxtensor::Error::Io(IoError::Os { .. }) => return PyOSError::new_err(message),
        nbxtensor::Error::Io(IoError::UnknownTensor(_)) => return PyKeyError::new_err(message),
        nbxtensor::Error::Kernel(KernelError::Device(_))
        | nbxtensor::Error::Program(ProgramError::Kernel(KernelError::Device(_))) => {
            return PyRuntimeError::new_err(message)
        }
        _ => {}
    }
    let memory = match &error {
        nbxtensor::Error::Memory(e)
        | nbxtensor::Error::Tensor(TensorError::Memory(e))
        | nbxtensor::Error::Kernel(KernelError::Tensor(TensorError::Memory(e)))
        | nbxtensor::Error::Program(ProgramError::Memory(e))
        | nbxtensor::Error::Program(ProgramError::Tensor(TensorError::Memory(e)))
        | nbxtensor::Error::Program(ProgramError::Kernel(KernelError::Tensor(TensorError::Memory(e))))
        | nbxtensor::Error::Io(IoError::Tensor(TensorError::Memory(e))) => Some(e),
        _ => None,
    };
    let settings = match (&error, memory) {
        (nbxtensor::Error::Settings(e) | nbxtensor::Error::Random(RandomError::Memory(e)), _) => Some(e),
        (_, Some(MemoryError::Settings(e))) => Some(e),
        _ => None,
    };
    match (memory, settings) {
        (Some(MemoryError::OverLimit { .. } | MemoryError::Refused { .. }), _)
        | (_, Some(SettingsError::OverLimit(_))) => PyMemoryError::new_err(message),
        (_, Some(SettingsError::Unreadable(_) | SettingsError::Unwritable(_))) => PyOSError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}
