//! `nbxtensor.host`: the services an application may pass in (`settings::host` of the core),
//! as plain data; `None` restores each default.

use crate::errors::to_py;
use nbxtensor::settings::host::{self, AttentionOperands, BuildCache, DeviceDescription, MatrixOperands};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// Uses the package's device file `"vendor/name"` for every GPU instead of the one recognised
/// from the driver's name; `None` goes back to recognising.
#[pyfunction]
fn set_device_description(description: Option<&str>) -> PyResult<()> {
    let setting = match description {
        None => DeviceDescription::Recognised,
        Some(text) => {
            let (vendor, name) = text.split_once('/').ok_or_else(|| {
                PyValueError::new_err(format!(
                    "set_device_description: '{text}' is not 'vendor/name' (e.g. 'nvidia/h100')"
                ))
            })?;
            DeviceDescription::File { vendor: vendor.into(), name: name.into() }
        }
    };
    host::set_device_description(setting).map_err(to_py)
}

/// The device file in force as `"vendor/name"`, or `None` when it is the one recognised.
#[pyfunction]
fn device_description() -> Option<String> {
    match host::device_description() {
        DeviceDescription::Recognised => None,
        DeviceDescription::File { vendor, name } => Some(format!("{vendor}/{name}")),
    }
}

/// The one entry of a decision dict, or the default for `None`; another key or value is
/// refused naming the choices.
fn decision<'a>(what: &str, key: &str, given: Option<&Bound<'a, PyDict>>, values: &[&str]) -> PyResult<Option<String>> {
    let Some(given) = given else { return Ok(None) };
    let mut chosen = None;
    for (k, v) in given.iter() {
        let (k, v): (String, String) = (k.extract()?, v.extract()?);
        if k != key {
            return Err(PyValueError::new_err(format!("{what}: unknown key '{k}' (the key is '{key}')")));
        }
        if !values.contains(&v.as_str()) {
            return Err(PyValueError::new_err(format!("{what}: '{v}' is not one of {}", values.join(", "))));
        }
        chosen = Some(v);
    }
    Ok(chosen)
}

/// Sets how float32 matrix products use the matrix unit: `{"float32": "float32"}` (exact,
/// the default) or `{"float32": "tf32"}` (TF32 operands where the device has them); `None`
/// restores the default.
#[pyfunction]
fn set_matrix_operands(operands: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let chosen = decision("set_matrix_operands", "float32", operands, &["float32", "tf32"])?;
    host::set_matrix_operands(if chosen.as_deref() == Some("tf32") {
        MatrixOperands::Tf32
    } else {
        MatrixOperands::Float32
    });
    Ok(())
}

/// The matrix unit's operand decision in force, as the dict `set_matrix_operands` takes.
#[pyfunction]
fn matrix_operands(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("float32", if host::matrix_operands() == MatrixOperands::Tf32 { "tf32" } else { "float32" })?;
    Ok(dict)
}

/// Sets how attention weighs the values: `{"probabilities": "input"}` (rounded to the inputs'
/// dtype first, the default) or `{"probabilities": "float32"}`; `None` restores the default.
#[pyfunction]
fn set_attention_operands(operands: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let chosen = decision("set_attention_operands", "probabilities", operands, &["float32", "input"])?;
    host::set_attention_operands(match chosen.as_deref() {
        Some("float32") => AttentionOperands::Float32,
        Some(_) => AttentionOperands::Input,
        None => AttentionOperands::default(),
    });
    Ok(())
}

/// Attention's operand decision in force, as the dict `set_attention_operands` takes.
#[pyfunction]
fn attention_operands(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    let value = if host::attention_operands() == AttentionOperands::Input { "input" } else { "float32" };
    dict.set_item("probabilities", value)?;
    Ok(dict)
}

/// Sets where compiled GPU kernels are cached: a path, or `None` for `kernels/` in the
/// proven-settings store.
#[pyfunction]
fn set_build_cache(path: Option<PathBuf>) {
    host::set_build_cache(path.map_or(BuildCache::InStore, BuildCache::Path));
}

/// Where compiled GPU kernels are cached now.
#[pyfunction]
fn build_cache() -> PyResult<PathBuf> {
    host::build_cache().map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(set_device_description, m)?)?;
    m.add_function(wrap_pyfunction!(device_description, m)?)?;
    m.add_function(wrap_pyfunction!(set_matrix_operands, m)?)?;
    m.add_function(wrap_pyfunction!(matrix_operands, m)?)?;
    m.add_function(wrap_pyfunction!(set_attention_operands, m)?)?;
    m.add_function(wrap_pyfunction!(attention_operands, m)?)?;
    m.add_function(wrap_pyfunction!(set_build_cache, m)?)?;
    m.add_function(wrap_pyfunction!(build_cache, m)?)?;
    Ok(())
}
