//! The mapping of the core's errors to Python exceptions, and the last guard against panics.
//!
//! Bad values (unknown dtypes, bad shapes, refused settings, empty ranges, buffer requests no
//! plan can hold, sizes past the address space) are `ValueError`; a machine file or directory
//! that cannot be read or written is `OSError`; an allocation over the memory limit (or one no
//! memory can hold) and a plan over the device's memory are `MemoryError`; a failed device
//! call (driver, compiler, library) is `RuntimeError`. Every message is the core's, which
//! names the value or the path at fault.
//!
//! A panic is a bug: [`guard`] (around the calls into the core) turns one into
//! `nbxtensor.InternalError` (a `RuntimeError`) whose message says so and names the panic and
//! where it happened, instead of PyO3's `PanicException` (a `BaseException` that an ordinary
//! `except Exception` lets through).

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
use pyo3::prelude::*;
use pyo3::PyErr;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

pyo3::create_exception!(
    nbxtensor,
    InternalError,
    PyRuntimeError,
    "A bug in nbxtensor: a Rust panic caught at the Python edge (the message names it and where it happened)."
);

/// The memory error inside a core error, through every layer that wraps one.
fn memory_of(error: &nbxtensor::Error) -> Option<&MemoryError> {
    fn of_tensor(e: &TensorError) -> Option<&MemoryError> {
        match e {
            TensorError::Memory(m) => Some(m),
            _ => None,
        }
    }
    fn of_kernel(e: &KernelError) -> Option<&MemoryError> {
        match e {
            KernelError::Tensor(t) => of_tensor(t),
            _ => None,
        }
    }
    match error {
        nbxtensor::Error::Memory(m) => Some(m),
        nbxtensor::Error::Tensor(t) | nbxtensor::Error::Io(IoError::Tensor(t)) => of_tensor(t),
        nbxtensor::Error::Kernel(k) => of_kernel(k),
        nbxtensor::Error::Program(ProgramError::Memory(m)) => Some(m),
        nbxtensor::Error::Program(ProgramError::Tensor(t)) => of_tensor(t),
        nbxtensor::Error::Program(ProgramError::Kernel(k)) => of_kernel(k),
        _ => None,
    }
}

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
    let memory = memory_of(&error);
    let settings = match (&error, memory) {
        (nbxtensor::Error::Settings(e) | nbxtensor::Error::Random(RandomError::Memory(e)), _) => Some(e),
        (_, Some(MemoryError::Settings(e))) => Some(e),
        _ => None,
    };
    match (memory, settings) {
        (Some(MemoryError::OverLimit { .. } | MemoryError::Refused { .. } | MemoryError::TooLarge { .. }), _)
        | (_, Some(SettingsError::OverLimit(_))) => PyMemoryError::new_err(message),
        (_, Some(SettingsError::Unreadable(_) | SettingsError::Unwritable(_))) => PyOSError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

thread_local! {
    /// Where this thread's last panic happened, and its message (set by the panic hook).
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Chains a panic hook that remembers each panic's message and place for [`guard`], then
/// runs the hook that was there (which prints it).
fn remember_panics() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let place = info.location().map(|l| format!(" at {}:{}:{}", l.file(), l.line(), l.column()));
            let text = payload_text(info.payload());
            let _ =
                LAST_PANIC.try_with(|last| *last.borrow_mut() = Some(format!("'{text}'{}", place.unwrap_or_default())));
            previous(info);
        }));
    });
}

fn payload_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else {
        "a panic without a message".to_string()
    }
}

/// Runs `work` (a call into the core) and turns a panic in it into `InternalError`: the last
/// guard of the Python edge. Costs nothing when nothing panics.
pub fn guard<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    match catch_unwind(AssertUnwindSafe(work)) {
        Ok(result) => result,
        Err(payload) => {
            let named = LAST_PANIC
                .try_with(|last| last.borrow_mut().take())
                .ok()
                .flatten()
                .unwrap_or_else(|| format!("'{}'", payload_text(payload.as_ref())));
            Err(InternalError::new_err(format!(
                "a bug in nbxtensor (please report it): the Rust core panicked with {named}"
            )))
        }
    }
}

/// Panics with `message` inside [`guard`]: how the tests see the guard work.
#[pyfunction]
fn _panic_for_test(message: &str) -> PyResult<()> {
    guard(|| panic!("{message}"))
}

/// Installs the panic hook and registers `InternalError` and the guard's test function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    remember_panics();
    m.add("InternalError", m.py().get_type::<InternalError>())?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    Ok(())
}
