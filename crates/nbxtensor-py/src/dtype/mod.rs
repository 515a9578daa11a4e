//! Bindings of the dtype layer: one file per Python module of `nbxtensor.dtype`.

pub mod convert;
pub mod itemsize;
pub mod nbx_dtype;
pub mod outputs;
pub mod policy;
pub mod promotion;

use crate::errors::to_py;
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

/// A dtype argument as the core's `DType`: a table name or an alias (`"float32"`, `"half"`),
/// an `NBXDtype` member, or anything `numpy.dtype` reads (`np.float32`, `np.dtype("int8")`,
/// ml_dtypes' `bfloat16`), read by its numpy name. `what` names the argument in errors.
pub fn dtype_arg(value: &Bound<'_, PyAny>, what: &str) -> PyResult<DType> {
    if let Ok(name) = value.cast::<PyString>() {
        return DType::parse(name.to_str()?).map_err(to_py);
    }
    if let Ok(name) = value.getattr("table_name").and_then(|n| n.extract::<String>()) {
        return DType::from_name(&name).map_err(to_py);
    }
    let refused = || {
        let shown = value.repr().map(|r| r.to_string()).unwrap_or_else(|_| "<unprintable>".to_string());
        PyValueError::new_err(format!(
            "{what}: unknown dtype {shown}: a dtype is a table name, an NBXDtype or a numpy dtype"
        ))
    };
    if value.is_none() {
        return Err(refused());
    }
    let numpy_dtype = value.py().import("numpy")?.getattr("dtype")?.call1((value,)).map_err(|_| refused())?;
    let name: String = numpy_dtype.getattr("name")?.extract()?;
    DType::parse(&name).map_err(to_py)
}
