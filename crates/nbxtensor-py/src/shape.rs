//! `nbxtensor.shape`: element counts, strides, the view rule, broadcasting, slice bounds.
//!
//! Shapes and strides arrive as any Python sequence of ints (or a numpy array of ints); every entry is read as an `i64`
//! here and every rule is the core's (`nbxtensor::shape`).

use crate::errors::to_py;
use nbxtensor::shape;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyInt, PyString, PyTuple};

/// `repr(value)`, or a placeholder when repr itself fails.
fn repr_of(value: &Bound<'_, PyAny>) -> String {
    value.repr().map_or_else(|_| "<unprintable>".to_string(), |r| r.to_string())
}

/// One int argument as an `i64`: a bool, a non-int or an int beyond 64 bits is a ValueError
/// whose message starts with `what`.
pub(crate) fn int_of(value: &Bound<'_, PyAny>, what: &dyn Fn() -> String) -> PyResult<i64> {
    if !value.is_instance_of::<PyBool>() {
        if let Ok(n) = value.extract::<i64>() {
            return Ok(n);
        }
        if value.is_instance_of::<PyInt>() {
            return Err(PyValueError::new_err(format!("{} {} does not fit in 64 bits", what(), repr_of(value))));
        }
    }
    Err(PyValueError::new_err(format!("{} {} is not an int", what(), repr_of(value))))
}

/// A sequence of ints (a shape or strides) as `i64`s; `what` names it in errors.
pub(crate) fn dims_of(value: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<i64>> {
    let not_a_sequence = || PyValueError::new_err(format!("{what} must be a sequence of ints, got {}", repr_of(value)));
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        return Err(not_a_sequence());
    }
    // Anything indexable by position with a length: tuples, lists, numpy arrays of ints.
    (0..value.len().map_err(|_| not_a_sequence())?)
        .map(|axis| {
            let entry = value.get_item(axis).map_err(|_| not_a_sequence())?;
            int_of(&entry, &|| format!("entry at axis {axis} of {what} {}:", repr_of(value)))
        })
        .collect()
}

/// A start or stop of a slice: None, or an int.
fn bound_of(value: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<i64>> {
    value.filter(|v| !v.is_none()).map(|v| int_of(v, &|| what.to_string())).transpose()
}

fn tuple<'py>(py: Python<'py>, dims: Vec<i64>) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(py, dims)
}

/// The number of elements of a shape.
#[pyfunction]
fn numel(shape: &Bound<'_, PyAny>) -> PyResult<i64> {
    shape::numel(&dims_of(shape, "shape")?).map_err(to_py)
}

/// The row-major strides of a shape, in elements, as a tuple.
#[pyfunction]
fn contiguous_strides<'py>(py: Python<'py>, shape: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
    tuple(py, shape::contiguous_strides(&dims_of(shape, "shape")?).map_err(to_py)?)
}

/// Whether a layout addresses its elements in row-major order (dims of extent 1 ignored).
#[pyfunction]
fn is_contiguous(shape: &Bound<'_, PyAny>, strides: &Bound<'_, PyAny>) -> PyResult<bool> {
    shape::is_contiguous(&dims_of(shape, "shape")?, &dims_of(strides, "strides")?).map_err(to_py)
}

/// The strides of a view of a layout under a new shape (one -1 inferred), or None: copy first.
#[pyfunction]
fn view_strides(
    shape: &Bound<'_, PyAny>,
    strides: &Bound<'_, PyAny>,
    new_shape: &Bound<'_, PyAny>,
) -> PyResult<Option<Vec<i64>>> {
    shape::view_strides(&dims_of(shape, "shape")?, &dims_of(strides, "strides")?, &dims_of(new_shape, "new_shape")?)
        .map_err(to_py)
}

/// The shape that the given shapes broadcast to (numpy's rules), as a tuple.
#[pyfunction]
#[pyo3(signature = (*shapes))]
fn broadcast_shapes<'py>(py: Python<'py>, shapes: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyTuple>> {
    let shapes = shapes.iter().map(|s| dims_of(&s, "shape")).collect::<PyResult<Vec<_>>>()?;
    tuple(py, shape::broadcast_shapes(&shapes).map_err(to_py)?)
}

/// `(target_shape, strides)` presenting a layout as the target shape without a copy.
#[pyfunction]
fn broadcast_strides<'py>(
    py: Python<'py>,
    shape: &Bound<'py, PyAny>,
    strides: &Bound<'py, PyAny>,
    target_shape: &Bound<'py, PyAny>,
) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyTuple>)> {
    let target = dims_of(target_shape, "target_shape")?;
    let new_strides =
        shape::broadcast_strides(&dims_of(shape, "shape")?, &dims_of(strides, "strides")?, &target).map_err(to_py)?;
    Ok((tuple(py, target)?, tuple(py, new_strides)?))
}

/// `(start, stop)` of `[start:stop]` on a dim of `size` elements, clamped as numpy does.
#[pyfunction]
#[pyo3(signature = (start, stop, size))]
fn slice_bounds(
    start: Option<&Bound<'_, PyAny>>,
    stop: Option<&Bound<'_, PyAny>>,
    size: &Bound<'_, PyAny>,
) -> PyResult<(i64, i64)> {
    let size = int_of(size, &|| "size".to_string())?;
    shape::slice_bounds(bound_of(start, "start")?, bound_of(stop, "stop")?, size).map_err(to_py)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(numel, m)?)?;
    m.add_function(wrap_pyfunction!(contiguous_strides, m)?)?;
    m.add_function(wrap_pyfunction!(is_contiguous, m)?)?;
    m.add_function(wrap_pyfunction!(view_strides, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_shapes, m)?)?;
    m.add_function(wrap_pyfunction!(broadcast_strides, m)?)?;
    m.add_function(wrap_pyfunction!(slice_bounds, m)?)?;
    Ok(())
}
