//! `nbxtensor.io.safetensors`: load-time conversions of weights, split across the CPU pool.

use crate::dtype::convert::{run, Input};
use half::f16;
use nbxtensor::dtype::convert;
use numpy::{PyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// float32 or float16 weights rounded to bfloat16 bit patterns (uint16), nearest even, split
/// across the pool: the same bytes as one call. Other dtypes are refused by name.
#[pyfunction]
#[pyo3(signature = (x, out = None))]
fn to_bf16_bits<'py>(x: &Bound<'py, PyAny>, out: Option<&Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyArrayDyn<u16>>> {
    if x.cast::<PyArrayDyn<f32>>().is_ok() {
        return run("to_bf16_bits", x, out, Input::Values, convert::f32_to_bf16_bits);
    }
    if x.cast::<PyArrayDyn<f16>>().is_ok() {
        return run("to_bf16_bits", x, out, Input::Values, convert::f16_to_bf16_bits);
    }
    let found = match x.cast::<numpy::PyUntypedArray>() {
        Ok(array) => array.dtype().to_string(),
        Err(_) => format!("a {}", x.get_type().name()?),
    };
    Err(PyValueError::new_err(format!("to_bf16_bits: takes a float32 or float16 numpy array, got {found}")))
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(to_bf16_bits, m)?)?;
    Ok(())
}
