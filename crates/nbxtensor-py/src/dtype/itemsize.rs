//! `nbxtensor.dtype.itemsize`: the table readers, by table name.

use crate::errors::to_py;
use nbxtensor::DType;
use pyo3::prelude::*;

fn named(name: &str) -> PyResult<DType> {
    DType::from_name(name).map_err(to_py)
}

/// Bytes per element of a dtype.
#[pyfunction]
fn itemsize(name: &str) -> PyResult<usize> {
    named(name)?.itemsize().map_err(to_py)
}

/// The kind of a dtype: bool, int, uint, float, complex or packed.
#[pyfunction]
fn kind(name: &str) -> PyResult<&'static str> {
    Ok(named(name)?.kind().as_str())
}

/// The table name of a safetensors header code.
#[pyfunction]
fn from_safetensors(code: &str) -> PyResult<&'static str> {
    DType::from_safetensors(code).map(DType::name).map_err(to_py)
}

/// The safetensors header code of a dtype.
#[pyfunction]
fn to_safetensors(name: &str) -> PyResult<&'static str> {
    named(name)?.safetensors_code().map_err(to_py)
}

/// The table name of a launch-key spelling.
#[pyfunction]
fn from_autotune_key(key: &str) -> PyResult<&'static str> {
    DType::from_launch_key(key).map(DType::name).map_err(to_py)
}

/// The launch-key spelling of a dtype.
#[pyfunction]
fn autotune_key(name: &str) -> PyResult<&'static str> {
    Ok(named(name)?.launch_key())
}

/// The DLPack `(code, bits, lanes)` of a dtype.
#[pyfunction]
fn dlpack_type(name: &str) -> PyResult<(u8, u8, u16)> {
    let dl = named(name)?.dlpack().map_err(to_py)?;
    Ok((dl.code, dl.bits, 1))
}

/// The dtype a store holds `name` in (float64 → float32 where the store has no float64).
#[pyfunction]
#[pyo3(signature = (name, stores_fp64 = true))]
fn storage_dtype(name: &str, stores_fp64: bool) -> PyResult<&'static str> {
    named(name)?.storage_dtype(stores_fp64).map(DType::name).map_err(to_py)
}

/// Bytes that `numel` elements take in a representation (codes, then per-group scales).
#[pyfunction]
#[pyo3(signature = (name, numel, channels = None))]
fn representation_bytes(name: &str, numel: i64, channels: Option<i64>) -> PyResult<u64> {
    let count = |what: &str, n: i64| {
        u64::try_from(n).map_err(|_| pyo3::exceptions::PyValueError::new_err(format!("{what} must be ≥ 0, got {n}")))
    };
    let channels = channels.map(|c| count("channels", c)).transpose()?;
    named(name)?.representation_bytes(count("numel", numel)?, channels).map_err(to_py)
}

/// The table's entry of a dtype as a dict (name, value, kind, width, codes, aliases, source).
#[pyfunction]
fn entry<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let e = named(name)?.entry();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("name", &e.name)?;
    d.set_item("value", e.value)?;
    d.set_item("kind", e.kind.as_str())?;
    d.set_item("width", e.width)?;
    let float = match &e.float {
        Some(f) => {
            let facts = pyo3::types::PyDict::new(py);
            facts.set_item("exponent_bits", f.exponent_bits)?;
            facts.set_item("mantissa_bits", f.mantissa_bits)?;
            facts.set_item("max", f.max)?;
            facts.set_item("inf", f.inf)?;
            Some(facts)
        }
        None => None,
    };
    d.set_item("float", float)?;
    d.set_item("safetensors", e.safetensors.as_deref())?;
    d.set_item("dlpack", e.dlpack.map(|dl| (dl.code, dl.bits, 1u16)))?;
    d.set_item("launch_key", &e.launch_key)?;
    d.set_item("aliases", e.aliases.clone())?;
    d.set_item("source", &e.source)?;
    Ok(d)
}

/// Every table name, in code order.
#[pyfunction]
fn names() -> Vec<&'static str> {
    DType::ALL.iter().map(|d| d.name()).collect()
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(itemsize, m)?)?;
    m.add_function(wrap_pyfunction!(kind, m)?)?;
    m.add_function(wrap_pyfunction!(from_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(to_safetensors, m)?)?;
    m.add_function(wrap_pyfunction!(from_autotune_key, m)?)?;
    m.add_function(wrap_pyfunction!(autotune_key, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_type, m)?)?;
    m.add_function(wrap_pyfunction!(storage_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(representation_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(entry, m)?)?;
    m.add_function(wrap_pyfunction!(names, m)?)?;
    Ok(())
}
