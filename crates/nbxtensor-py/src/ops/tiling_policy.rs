//! `nbxtensor.ops.tiling_policy`: the tiling table in force, read and set as plain data.

use crate::errors::to_py;
use nbxtensor::settings::tiling::{self, TilingTable};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The table in force, as a dict (a copy: changing it changes nothing until set).
#[pyfunction]
fn tiling_table(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let table = tiling::tiling_table();
    let dict = PyDict::new(py);
    dict.set_item("host_chunk_elements", table.host_chunk_elements)?;
    Ok(dict)
}

/// Sets a whole table, written as `tiling.yml` writes it (a dict); None restores the
/// library's file. Unknown, missing or non-positive entries are refused by name.
#[pyfunction]
fn set_tiling(table: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
    let Some(table) = table else {
        return tiling::set_tiling(None).map_err(to_py);
    };
    let mut host_chunk_elements = None;
    for (key, value) in table.iter() {
        let key: String =
            key.extract().map_err(|_| PyValueError::new_err("tiling table: keys are entry names (str)"))?;
        match key.as_str() {
            "host_chunk_elements" => {
                let n: i64 = value
                    .extract()
                    .map_err(|_| PyValueError::new_err("tiling table: host_chunk_elements must be an int"))?;
                host_chunk_elements = Some(usize::try_from(n).map_err(|_| {
                    PyValueError::new_err(format!("tiling table: host_chunk_elements must be ≥ 1, got {n}"))
                })?);
            }
            other => {
                return Err(PyValueError::new_err(format!(
                    "tiling table: unknown entry '{other}' (entries: host_chunk_elements)"
                )))
            }
        }
    }
    let host_chunk_elements = host_chunk_elements
        .ok_or_else(|| PyValueError::new_err("tiling table: missing entry 'host_chunk_elements'"))?;
    tiling::set_tiling(Some(TilingTable { host_chunk_elements })).map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tiling_table, m)?)?;
    m.add_function(wrap_pyfunction!(set_tiling, m)?)?;
    Ok(())
}
