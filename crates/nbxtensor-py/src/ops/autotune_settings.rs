//! `nbxtensor.ops.autotune_settings`: where proven kernel settings are kept, and how many
//! this process measured.

use crate::errors::to_py;
use nbxtensor::settings::autotune;
use nbxtensor::settings::autotune_store::{self, StoreSetting};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Arc;

/// Sets the store: a path (str or os.PathLike), a callable returning one (asked each time the
/// directory is needed), or None for the default in the user's cache.
#[pyfunction]
fn set_store(store: Option<Bound<'_, PyAny>>) -> PyResult<()> {
    let setting = match store {
        None => StoreSetting::Default,
        Some(store) if store.is_callable() => {
            let provider: Py<PyAny> = store.unbind();
            StoreSetting::Provider(Arc::new(move || {
                Python::attach(|py| {
                    let answer = provider.call0(py).map_err(|e| e.to_string())?;
                    answer.extract::<PathBuf>(py).map_err(|_| "it must return a path (str or os.PathLike)".to_string())
                })
            }))
        }
        Some(store) => StoreSetting::Path(store.extract::<PathBuf>().map_err(|_| {
            PyValueError::new_err("set_store: give a path (str or os.PathLike), a callable returning one, or None")
        })?),
    };
    autotune_store::set_store(setting);
    Ok(())
}

/// The store's directory in force, as a str (the Python module returns a pathlib.Path).
#[pyfunction]
fn directory() -> PyResult<PathBuf> {
    autotune_store::directory().map_err(to_py)
}

/// The store's directory, created and proven writable; OSError naming it otherwise.
#[pyfunction]
fn writable_directory() -> PyResult<PathBuf> {
    autotune_store::writable_directory().map_err(to_py)
}

/// How many candidate measurements the autotune has made in this process (0 where every
/// choice was found in the store).
#[pyfunction]
fn measurements() -> u64 {
    autotune::measurements()
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_store, m)?)?;
    m.add_function(wrap_pyfunction!(directory, m)?)?;
    m.add_function(wrap_pyfunction!(writable_directory, m)?)?;
    m.add_function(wrap_pyfunction!(measurements, m)?)?;
    Ok(())
}
