//! `nbxtensor.dtype.outputs`: output dtypes under a precision policy, by table name.

use crate::errors::to_py;
use nbxtensor::dtype::outputs;
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The output dtype of an op computing in float32 inside under a half compute dtype.
#[pyfunction]
#[pyo3(signature = (compute_dtype, graph_dtype, *, safe, narrowed))]
fn amp_fp32_output_dtype(compute_dtype: &str, graph_dtype: &str, safe: bool, narrowed: bool) -> PyResult<&'static str> {
    let compute = DType::from_name(compute_dtype).map_err(to_py)?;
    let graph = DType::from_name(graph_dtype).map_err(to_py)?;
    outputs::amp_fp32_output_dtype(compute, graph, safe, narrowed).map(DType::name).map_err(to_py)
}

/// Whether a traced record's "output_dtypes" include a complex dtype.
#[pyfunction]
fn traced_output_is_complex(record: &Bound<'_, PyDict>) -> PyResult<bool> {
    let names: Vec<String> = record
        .get_item("output_dtypes")?
        .ok_or_else(|| {
            PyValueError::new_err("the traced record has no 'output_dtypes' (the list of its outputs' dtypes)")
        })?
        .extract()?;
    let dtypes = names.iter().map(|n| DType::from_name(n)).collect::<Result<Vec<_>, _>>().map_err(to_py)?;
    Ok(outputs::traced_output_is_complex(&dtypes))
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(amp_fp32_output_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(traced_output_is_complex, m)?)?;
    Ok(())
}
