//! `nbxtensor.dtype.promotion`: type promotion, by table name.

use crate::errors::to_py;
use nbxtensor::dtype::promotion::{self, PyScalar};
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};

fn named(name: &str) -> PyResult<DType> {
    DType::from_name(name).map_err(to_py)
}

fn all_named(names: Vec<String>) -> PyResult<Vec<DType>> {
    names.iter().map(|n| named(n)).collect()
}

/// A Python scalar by its type: bool before int (a bool is an int in Python). With `exact`,
/// subclasses are refused (numpy scalars carry a dtype of their own and are not weak).
pub(crate) fn py_scalar(value: &Bound<'_, PyAny>, exact: bool) -> PyResult<PyScalar> {
    fn is<T: pyo3::type_object::PyTypeInfo>(value: &Bound<'_, PyAny>, exact: bool) -> bool {
        if exact {
            value.is_exact_instance_of::<T>()
        } else {
            value.is_instance_of::<T>()
        }
    }
    if is::<PyBool>(value, exact) {
        Ok(PyScalar::Bool(value.extract()?))
    } else if is::<PyInt>(value, exact) {
        value.extract::<i128>().map(PyScalar::Int).map_err(|_| {
            PyValueError::new_err(format!("{value} does not fit any integer dtype: it is outside 128 bits"))
        })
    } else if is::<PyFloat>(value, exact) {
        Ok(PyScalar::Float(value.extract()?))
    } else if is::<PyComplex>(value, exact) {
        let complex = value.cast::<PyComplex>()?;
        Ok(PyScalar::Complex { re: complex.real(), im: complex.imag() })
    } else {
        let wanted = if exact { "a Python bool, int, float or complex" } else { "a number" };
        Err(PyValueError::new_err(format!("{} is not {wanted}", value.repr()?)))
    }
}

/// The dtype of a binary op on arrays of dtypes `a` and `b` (the Array API standard's table).
#[pyfunction]
fn binary_result(a: &str, b: &str) -> PyResult<&'static str> {
    promotion::binary_result(named(a)?, named(b)?).map(DType::name).map_err(to_py)
}

/// The dtype a list of dtypes promotes to, or None when the float16/bfloat16 meeting decides it.
#[pyfunction]
fn promoted(dtypes: Vec<String>) -> PyResult<Option<&'static str>> {
    Ok(promotion::promoted(&all_named(dtypes)?).map_err(to_py)?.map(DType::name))
}

/// The dtype a list of dtypes promotes to, in any order (float16 with bfloat16 gives float32).
#[pyfunction]
fn common_dtype(dtypes: Vec<String>) -> PyResult<&'static str> {
    promotion::common_dtype(&all_named(dtypes)?).map(DType::name).map_err(to_py)
}

/// The dtype a float-only math op reads its input as (integers and bool as float32).
#[pyfunction]
fn float_math_input(dtype: &str) -> PyResult<&'static str> {
    promotion::float_math_input(named(dtype)?).map(DType::name).map_err(to_py)
}

/// The dtype of a binary op between an array of `dtype` and a weak Python scalar.
#[pyfunction]
fn scalar_result(dtype: &str, value: &Bound<'_, PyAny>) -> PyResult<&'static str> {
    let array = named(dtype)?;
    promotion::scalar_result(array, py_scalar(value, true)?).map(DType::name).map_err(to_py)
}

/// The float dtype of each part of a complex dtype (float32 for complex64).
#[pyfunction]
fn complex_part(dtype: &str) -> PyResult<&'static str> {
    promotion::complex_part(named(dtype)?).map(DType::name).map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(binary_result, m)?)?;
    m.add_function(wrap_pyfunction!(promoted, m)?)?;
    m.add_function(wrap_pyfunction!(common_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(float_math_input, m)?)?;
    m.add_function(wrap_pyfunction!(scalar_result, m)?)?;
    m.add_function(wrap_pyfunction!(complex_part, m)?)?;
    Ok(())
}
