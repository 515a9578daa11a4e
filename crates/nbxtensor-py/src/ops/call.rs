//! `nbxtensor.ops` calls: any op of the capability table, by name, on tensors.

use crate::errors::{guard, to_py};
use crate::tensor::Tensor;
use nbxtensor::backend::{cpu::cpu, Backend};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::memory::DeviceKind;
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

/// An attribute from Python: bool, int, float, a sequence of ints, or a dtype name.
fn attr_value(op: &str, name: &str, value: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if value.is_instance_of::<PyBool>() {
        return Ok(AttrValue::Bool(value.extract()?));
    }
    if value.is_instance_of::<PyInt>() {
        return value
            .extract()
            .map(AttrValue::Int)
            .map_err(|_| PyValueError::new_err(format!("{op}: attribute '{name}' does not fit 64 bits")));
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(AttrValue::Float(value.extract()?));
    }
    if value.is_instance_of::<PyString>() {
        return DType::parse(&value.extract::<String>()?).map(AttrValue::DType).map_err(to_py);
    }
    value.extract::<Vec<i64>>().map(AttrValue::Ints).map_err(|_| {
        PyValueError::new_err(format!("{op}: attribute '{name}' must be a bool, an int, a float, ints or a dtype name"))
    })
}

/// The attributes of a call, from Python keywords.
fn parse_attrs(op: &str, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<Attrs> {
    let mut parsed = Attrs::new();
    for (name, value) in attrs.into_iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        parsed = parsed.with(&name, attr_value(op, &name, &value)?);
    }
    Ok(parsed)
}

/// Runs `op` on `inputs`: a CPU op computes before it returns, so other Python threads run
/// meanwhile; a GPU op only queues its launch, which costs less than giving the interpreter
/// lock away and back.
fn run(py: Python<'_>, op: &str, attrs: &Attrs, inputs: &[&nbxtensor::tensor::Tensor]) -> PyResult<Vec<Tensor>> {
    let call = || guard(|| nbxtensor::ops::call(op, attrs, inputs).map_err(to_py));
    let on_gpu = inputs.first().is_some_and(|t| t.device().kind == DeviceKind::Cuda);
    let outputs = if on_gpu { call() } else { py.detach(call) }?;
    Ok(outputs.into_iter().map(Tensor::wrap).collect())
}

/// Calls `op` on `inputs` with keyword attributes; returns the list of outputs.
#[pyfunction]
#[pyo3(signature = (op, inputs, attrs = None))]
fn call(
    py: Python<'_>,
    op: &str,
    inputs: Vec<PyRef<'_, Tensor>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Tensor>> {
    let parsed = parse_attrs(op, attrs)?;
    let tensors: Vec<&nbxtensor::tensor::Tensor> = inputs.iter().map(|t| &t.inner).collect();
    run(py, op, &parsed, &tensors)
}

/// Calls an op of one input and one output (the unary ops, casts, reductions): as `call`,
/// without the lists.
#[pyfunction]
#[pyo3(signature = (op, x, attrs = None))]
fn call_one(py: Python<'_>, op: &str, x: PyRef<'_, Tensor>, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<Tensor> {
    let parsed = parse_attrs(op, attrs)?;
    let mut outputs = run(py, op, &parsed, &[&x.inner])?;
    match outputs.len() {
        1 => Ok(outputs.remove(0)),
        n => Err(PyValueError::new_err(format!("{op}: gives {n} outputs, call_one takes ops of one"))),
    }
}

/// The CPU backend's capability table, printed (one line per op and its dtypes).
#[pyfunction]
fn capability_table() -> String {
    cpu().table().to_string()
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(call, m)?)?;
    m.add_function(wrap_pyfunction!(call_one, m)?)?;
    m.add_function(wrap_pyfunction!(capability_table, m)?)?;
    Ok(())
}
