//! `nbxtensor.dtype.policy`: precision policies (JAX jmp's spelling, PyTorch's autocast classes).

use super::promotion::py_scalar;
use crate::errors::to_py;
use nbxtensor::dtype::policy::{self as core, FillValue, PolicyField};
use nbxtensor::facts::policy_table;
use nbxtensor::DType;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

/// A precision policy: the dtypes of parameters, computation and outputs. Immutable: `replace`
/// makes a new one.
#[pyclass(name = "Policy", module = "nbxtensor.dtype.policy", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
struct Policy(core::Policy);

#[pymethods]
impl Policy {
    /// A policy of three dtypes (table names or aliases); each must be a float.
    #[new]
    fn new(params: &str, compute: &str, output: &str) -> PyResult<Policy> {
        let parse = |s: &str| DType::parse(s).map_err(to_py);
        core::Policy::new(parse(params)?, parse(compute)?, parse(output)?).map(Policy).map_err(to_py)
    }

    /// The dtype parameters are held in.
    #[getter]
    fn params(&self) -> &'static str {
        self.0.params().name()
    }

    /// The dtype lower-precision ops compute in.
    #[getter]
    fn compute(&self) -> &'static str {
        self.0.compute().name()
    }

    /// The dtype outputs are given in.
    #[getter]
    fn output(&self) -> &'static str {
        self.0.output().name()
    }

    /// A new policy with the fields given by keyword (params, compute, output) changed.
    #[pyo3(signature = (**fields))]
    fn replace(&self, fields: Option<&Bound<'_, PyDict>>) -> PyResult<Policy> {
        let mut policy = self.0;
        for (key, value) in fields.into_iter().flat_map(|d| d.iter()) {
            let field = PolicyField::from_name(&key.extract::<String>()?).map_err(to_py)?;
            let dtype = DType::parse(&value.extract::<String>()?).map_err(to_py)?;
            policy = policy.replace(field, dtype).map_err(to_py)?;
        }
        Ok(Policy(policy))
    }

    /// The three fields as a dict `{"params": …, "compute": …, "output": …}`.
    fn fields<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for field in PolicyField::ALL {
            d.set_item(field.name(), self.0.get(field).name())?;
        }
        Ok(d)
    }

    /// The dtype `op` computes in, given its inputs' dtypes (table names).
    fn compute_dtype(&self, op: &str, input_dtypes: Vec<String>) -> PyResult<&'static str> {
        let inputs = input_dtypes.iter().map(|n| DType::from_name(n)).collect::<Result<Vec<_>, _>>().map_err(to_py)?;
        self.0.compute_dtype(op, &inputs).map(DType::name).map_err(to_py)
    }

    /// A fill value made to fit `dtype`: a float (an int for integer dtypes, a bool for bool).
    fn fill_value<'py>(
        &self,
        py: Python<'py>,
        op: &str,
        value: &Bound<'py, PyAny>,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dtype = DType::from_name(dtype).map_err(to_py)?;
        Ok(match self.0.fill_value(op, py_scalar(value, false)?, dtype).map_err(to_py)? {
            FillValue::Float(x) => x.into_pyobject(py)?.into_any(),
            FillValue::Int(v) => v.into_pyobject(py)?.into_any(),
            FillValue::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        })
    }

    fn __repr__(&self) -> String {
        format!("Policy('{}')", self.0)
    }

    fn __str__(&self) -> String {
        self.0.to_string()
    }
}

/// A policy from JAX jmp's spelling ("params=float32,compute=float16,output=float32", or one dtype).
#[pyfunction]
fn get_policy(text: &Bound<'_, PyAny>) -> PyResult<Policy> {
    if let Ok(policy) = text.cast::<Policy>() {
        return Ok(Policy(policy.get().0));
    }
    let text = text.cast::<PyString>()?.to_cow()?;
    core::Policy::parse(&text).map(Policy).map_err(to_py)
}

/// The autocast class of an op ("lower_precision", "float32", "promote"), or None.
#[pyfunction]
fn op_class(op: &str) -> Option<&'static str> {
    policy_table().class_of(op).map(|c| c.as_str())
}

/// Registers the module's class and functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Policy>()?;
    m.add_function(wrap_pyfunction!(get_policy, m)?)?;
    m.add_function(wrap_pyfunction!(op_class, m)?)?;
    Ok(())
}
