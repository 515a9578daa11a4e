//! What numpy and torch users expect of a tensor beyond its layout: its values as Python
//! objects (`tolist`, `item`, `float(t)`, `bool(t)` …), reductions by numpy's keywords, and
//! pickling through bytes.
//!
//! A tensor's values are read on the host (a GPU tensor is copied there first); a traced
//! tensor has none until its program runs, and a packed dtype has no value per element:
//! both are refused by name.

use crate::errors::{guard, to_py};
use crate::ops::call::computed;
use crate::shape::{dims_of, int_of};
use nbxtensor::facts::Kind;
use nbxtensor::memory::Device;
use nbxtensor::ops::spec::reduce::ReduceOp;
use nbxtensor::tensor::{Tensor as CoreTensor, TensorError};
use nbxtensor::DType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList};

/// One element's value, as the Python number it becomes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A bool element.
    Bool(bool),
    /// A signed integer element.
    Int(i64),
    /// An unsigned integer element.
    Uint(u64),
    /// A real float element (every float dtype, read exactly as float64).
    Float(f64),
    /// A complex element: its real and imaginary parts.
    Complex(f64, f64),
}

impl Value {
    /// The Python bool, int, float or complex.
    fn to_py(self, py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
        Ok(match self {
            Value::Bool(b) => PyBool::new(py, b).to_owned().into_any(),
            Value::Int(v) => v.into_pyobject(py)?.into_any(),
            Value::Uint(v) => v.into_pyobject(py)?.into_any(),
            Value::Float(v) => PyFloat::new(py, v).into_any(),
            Value::Complex(re, im) => PyComplex::from_doubles(py, re, im).into_any(),
        })
    }
}

/// Every element's value in row-major order, read on the host.
pub fn values(t: &CoreTensor) -> nbxtensor::Result<Vec<Value>> {
    if t.storage().is_symbolic() {
        return Err(TensorError::Invalid("a traced tensor has no values until its program runs".into()).into());
    }
    let host = t.to(Device::CPU)?;
    Ok(match host.dtype().kind() {
        Kind::Bool => host.to_bytes()?.into_iter().map(|b| Value::Bool(b != 0)).collect(),
        Kind::Int => host.cast(DType::Int64)?.to_vec::<i64>()?.into_iter().map(Value::Int).collect(),
        Kind::Uint => host.cast(DType::Uint64)?.to_vec::<u64>()?.into_iter().map(Value::Uint).collect(),
        Kind::Float => host.cast(DType::Float64)?.to_vec::<f64>()?.into_iter().map(Value::Float).collect(),
        Kind::Complex => host
            .cast(DType::Complex128)?
            .to_bytes()?
            .chunks_exact(16)
            .map(|c| {
                let part = |b: &[u8]| f64::from_le_bytes(b.try_into().expect("8 bytes of a float64"));
                Value::Complex(part(&c[..8]), part(&c[8..]))
            })
            .collect(),
        Kind::Packed => {
            return Err(TensorError::Invalid(format!(
                "{} is a packed dtype: it has no value per element",
                host.dtype()
            ))
            .into())
        }
    })
}

/// The values as nested Python lists of the tensor's shape (a number for a 0-d tensor).
pub fn tolist<'py>(py: Python<'py>, t: &CoreTensor) -> PyResult<Bound<'py, PyAny>> {
    let inner = t.clone();
    let flat = py.detach(move || guard(|| values(&inner).map_err(to_py)))?;
    nested(py, &flat, t.shape())
}

fn nested<'py>(py: Python<'py>, flat: &[Value], shape: &[i64]) -> PyResult<Bound<'py, PyAny>> {
    let Some((&size, inner)) = shape.split_first() else {
        return flat[0].to_py(py);
    };
    let step = inner.iter().product::<i64>() as usize;
    let rows =
        (0..size as usize).map(|i| nested(py, &flat[i * step..(i + 1) * step], inner)).collect::<PyResult<Vec<_>>>()?;
    Ok(PyList::new(py, rows)?.into_any())
}

/// The value of a tensor of one element (any number of dims); `refuse` makes the error for
/// any other count.
pub fn one(py: Python<'_>, t: &CoreTensor, refuse: impl FnOnce(i64) -> PyErr) -> PyResult<Value> {
    if t.numel() != 1 {
        return Err(refuse(t.numel()));
    }
    let inner = t.clone();
    let flat = py.detach(move || guard(|| values(&inner).map_err(to_py)))?;
    Ok(flat[0])
}

/// The TypeError of `float(t)`, `int(t)` and `complex(t)` on a tensor of `n` elements.
pub fn not_one(what: &str) -> impl FnOnce(i64) -> PyErr + '_ {
    move |n| {
        PyTypeError::new_err(format!(
            "{what}: only a tensor of one element converts to a Python scalar, not one of {n}"
        ))
    }
}

/// `item()`: the one element as a Python number; ValueError for another count (as numpy).
pub fn item<'py>(py: Python<'py>, t: &CoreTensor) -> PyResult<Bound<'py, PyAny>> {
    one(py, t, |n| {
        PyValueError::new_err(format!(
            "item(): only a tensor of one element converts to a Python scalar, not one of {n}"
        ))
    })?
    .to_py(py)
}

/// `bool(t)`: the truth of the one element; ValueError for another count (as numpy).
pub fn truth(py: Python<'_>, t: &CoreTensor) -> PyResult<bool> {
    let refuse = |n| {
        PyValueError::new_err(format!(
            "the truth value of a tensor of {n} elements is ambiguous: reduce it to one element first"
        ))
    };
    Ok(match one(py, t, refuse)? {
        Value::Bool(b) => b,
        Value::Int(v) => v != 0,
        Value::Uint(v) => v != 0,
        Value::Float(v) => v != 0.0,
        Value::Complex(re, im) => re != 0.0 || im != 0.0,
    })
}

/// `float(t)`: a real element as a Python float; a complex one is a TypeError (as Python's
/// own complex numbers).
pub fn to_float(py: Python<'_>, t: &CoreTensor) -> PyResult<f64> {
    match one(py, t, not_one("float()"))? {
        Value::Bool(b) => Ok(f64::from(u8::from(b))),
        Value::Int(v) => Ok(v as f64),
        Value::Uint(v) => Ok(v as f64),
        Value::Float(v) => Ok(v),
        Value::Complex(..) => Err(PyTypeError::new_err("float(): a complex tensor has no real value: use complex(t)")),
    }
}

/// `int(t)`: the element truncated toward zero as Python's `int` does (NaN and infinities are
/// a ValueError); a complex one is a TypeError.
pub fn to_int<'py>(py: Python<'py>, t: &CoreTensor) -> PyResult<Bound<'py, PyAny>> {
    match one(py, t, not_one("int()"))? {
        Value::Complex(..) => Err(PyTypeError::new_err("int(): a complex tensor has no integer value")),
        Value::Float(v) => PyFloat::new(py, v).call_method0("__int__"),
        Value::Bool(b) => Ok(i64::from(b).into_pyobject(py)?.into_any()),
        other => other.to_py(py),
    }
}

/// `complex(t)`: the element as a Python complex.
pub fn to_complex<'py>(py: Python<'py>, t: &CoreTensor) -> PyResult<Bound<'py, PyComplex>> {
    let (re, im) = match one(py, t, not_one("complex()"))? {
        Value::Bool(b) => (f64::from(u8::from(b)), 0.0),
        Value::Int(v) => (v as f64, 0.0),
        Value::Uint(v) => (v as f64, 0.0),
        Value::Float(v) => (v, 0.0),
        Value::Complex(re, im) => (re, im),
    };
    Ok(PyComplex::from_doubles(py, re, im))
}

/// `operator.index(t)`: a 0-d integer tensor as a Python int (as numpy: other dtypes and
/// shapes are a TypeError).
pub fn to_index<'py>(py: Python<'py>, t: &CoreTensor) -> PyResult<Bound<'py, PyAny>> {
    if !matches!(t.dtype().kind(), Kind::Int | Kind::Uint) || t.ndim() != 0 {
        return Err(PyTypeError::new_err(format!(
            "only a 0-d integer tensor is an index, not a {} tensor of shape {:?}",
            t.dtype(),
            t.shape()
        )));
    }
    one(py, t, not_one("__index__"))?.to_py(py)
}

/// numpy's `axis` argument as the core's axes: None for every axis, an int, or a sequence of
/// ints.
pub fn axes_of(axis: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<i64>>> {
    match axis.filter(|a| !a.is_none()) {
        None => Ok(None),
        Some(a) if a.is_instance_of::<PyInt>() => Ok(Some(vec![int_of(a, &|| "axis".to_string())?])),
        Some(a) => dims_of(a, "axis").map(Some),
    }
}

/// The reduction `op` over numpy's `axis` with numpy's `keepdims`, computed without the
/// interpreter lock on the host.
pub fn reduce(
    py: Python<'_>,
    t: &CoreTensor,
    op: ReduceOp,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
) -> PyResult<CoreTensor> {
    let axes = axes_of(axis)?;
    let inner = t.clone();
    let run = move || inner.reduce(op, axes.as_deref(), keepdims);
    computed(py, !nbxtensor::backend::of(t.device()).host_addressable(), run)
}

/// `argmax(axis=None)`: along one axis, or (None) over the flattened tensor, as numpy.
pub fn argmax(py: Python<'_>, t: &CoreTensor, axis: Option<i64>, keepdims: bool) -> PyResult<CoreTensor> {
    let inner = t.clone();
    let run = move || -> nbxtensor::Result<CoreTensor> {
        match axis {
            Some(axis) => Ok(inner.argmax(axis, keepdims)?),
            None => {
                let found = inner.contiguous()?.reshape(&[-1])?.argmax(0, false)?;
                Ok(if keepdims { found.reshape(&vec![1; inner.ndim()])? } else { found })
            }
        }
    };
    computed(py, !nbxtensor::backend::of(t.device()).host_addressable(), run)
}
