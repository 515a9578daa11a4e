//! `nbxtensor.ops.tiling_policy`: the tiling table in force, read and set as plain data.

use crate::errors::to_py;
use nbxtensor::settings::tiling::{self, TilingTable};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The table in force, as a dict (a copy: changing it changes nothing until set).
#[pyfunction]
fn tiling_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in tiling::tiling_table().entries() {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}

/// Sets a whole table, written as `tiling.yml` writes it (a dict); None restores the
/// library's file. Unknown, missing or non-positive entries are refused by name.
#[pyfunction]
fn set_tiling(table: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(table) = table else {
        return tiling::set_tiling(None).map_err(to_py);
    };
    let mut entries = Vec::new();
    for (key, value) in table.iter() {
        let key: String =
            key.extract().map_err(|_| PyValueError::new_err("tiling table: keys are entry names (str)"))?;
        let n: i64 =
            value.extract().map_err(|_| PyValueError::new_err(format!("tiling table: {key} must be an int")))?;
        let n = usize::try_from(n)
            .map_err(|_| PyValueError::new_err(format!("tiling table: {key} must be ≥ 1, got {n}")))?;
        entries.push((key, n));
    }
    let entries: Vec<(&str, usize)> = entries.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    let table = TilingTable::from_entries(&entries).map_err(to_py)?;
    tiling::set_tiling(Some(table)).map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tiling_table, m)?)?;
    m.add_function(wrap_pyfunction!(set_tiling, m)?)?;
    Ok(())
}
