//! `nbxtensor.dtype.convert`: the host conversions over numpy arrays.
//!
//! Each function reads its input as a C-contiguous array of the input dtype, takes or makes
//! the output array (the input's shape, or the caller's `out=`), and runs the core's slice
//! conversion with the GIL released. The rules of the input and of `out=`:
//!
//! - a numpy array must already have the input dtype (a float64 array is refused rather than
//!   rounded twice); a non-contiguous or unaligned one is copied first;
//! - any other array-like (list, tuple, scalar) is read by `numpy.asarray(x, dtype=...)`; for
//!   bit-pattern inputs its values must be integers;
//! - `out` must be a writable, aligned, C-contiguous numpy array of the output dtype with as
//!   many elements as the input, sharing no memory with it; it is returned.

use crate::errors::to_py;
use half::f16;
use nbxtensor::dtype::{convert, Result as ConvertResult};
use numpy::{
    Element, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// What a conversion reads: float values, or bit patterns (which must be integers).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// Float values: a numpy array must already have the input dtype.
    Values,
    /// Bit patterns (unsigned integers).
    Bits,
}

/// The numpy name of the dtype of `T` (`"float32"`, `"uint16"` …).
fn dtype_name<T: Element>(py: Python<'_>) -> String {
    T::get_dtype(py).to_string()
}

/// The input as an aligned, C-contiguous array of `T` (see the module's rules).
fn read_input<'py, T: Element>(name: &str, x: &Bound<'py, PyAny>, input: Input) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    let py = x.py();
    let wanted = T::get_dtype(py);
    let array = match x.cast::<PyUntypedArray>() {
        Ok(array) => {
            let given = array.dtype();
            if !given.is_equiv_to(&wanted) {
                return Err(PyValueError::new_err(format!(
                    "{name}: the input must be a {wanted} array, got {given} (convert it with .astype(numpy.{wanted}) first)"
                )));
            }
            array.clone()
        }
        Err(_) => {
            let asarray = py.import("numpy")?.getattr("asarray")?;
            let unreadable =
                |e: PyErr| PyValueError::new_err(format!("{name}: cannot read the input as {wanted}: {e}"));
            if input == Input::Bits {
                let natural = asarray.call1((x,)).map_err(unreadable)?.cast_into::<PyUntypedArray>()?;
                let kind = natural.dtype().kind();
                if kind != b'i' && kind != b'u' {
                    return Err(PyValueError::new_err(format!(
                        "{name}: the input holds {wanted} bit patterns, got {} values",
                        natural.dtype()
                    )));
                }
            }
            asarray.call1((x, &wanted)).map_err(unreadable)?.cast_into::<PyUntypedArray>()?
        }
    };
    let array = if array.is_c_contiguous() && array.is_aligned() {
        array
    } else {
        array.call_method1("copy", ("C",))?.cast_into::<PyUntypedArray>()?
    };
    Ok(array.cast_into::<PyArrayDyn<T>>()?)
}

/// The array the result goes to: the caller's `out`, checked, or a new one of `shape`.
fn output_array<'py, D: Element>(
    name: &str,
    py: Python<'py>,
    shape: &[usize],
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<D>>> {
    let Some(out) = out else {
        // SAFETY: the elements are plain numbers, and every one is written by the conversion
        // (its destination has exactly the input's length) before the array is returned.
        return Ok(unsafe { PyArrayDyn::<D>::new(py, shape, false) });
    };
    let refuse = |why: String| Err(PyValueError::new_err(format!("{name}: out {why}")));
    let Ok(array) = out.cast::<PyUntypedArray>() else {
        return refuse(format!("must be a numpy array, got {}", out.get_type().name()?));
    };
    let wanted = D::get_dtype(py);
    if !array.dtype().is_equiv_to(&wanted) {
        return refuse(format!("must have dtype {wanted}, got {}", array.dtype()));
    }
    let numel: usize = shape.iter().product();
    if array.len() != numel {
        return refuse(format!("has {} elements but the input has {numel}", array.len()));
    }
    if !array.is_c_contiguous() {
        return refuse("must be C-contiguous (write into a contiguous array, then copy)".to_string());
    }
    if !array.is_aligned() {
        return refuse(format!("must be aligned to its {wanted} elements"));
    }
    Ok(array.cast::<PyArrayDyn<D>>()?.clone())
}

/// Reads `x`, checks or makes the output, and runs `convert` on them with the GIL released.
pub(crate) fn run<'py, S: Element + Sync, D: Element + Send>(
    name: &str,
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
    input: Input,
    convert: fn(&[S], &mut [D]) -> ConvertResult<()>,
) -> PyResult<Bound<'py, PyArrayDyn<D>>> {
    let py = x.py();
    let source = read_input::<S>(name, x, input)?;
    let source: PyReadonlyArrayDyn<'py, S> = source.readonly();
    let target = output_array::<D>(name, py, source.shape(), out)?;
    {
        let mut writer = target.try_readwrite().map_err(|e| {
            PyValueError::new_err(format!("{name}: out must be writable and share no memory with the input ({e})"))
        })?;
        let src = source
            .as_slice()
            .map_err(|e| PyValueError::new_err(format!("{name}: the input as {}: {e}", dtype_name::<S>(py))))?;
        let dst = writer.as_slice_mut().map_err(|e| PyValueError::new_err(format!("{name}: out: {e}")))?;
        py.detach(|| convert(src, dst)).map_err(to_py)?;
    }
    Ok(target)
}

/// float32 → bfloat16 bit patterns (uint16): round to nearest even; every NaN → 0x7FC0.
#[pyfunction]
#[pyo3(signature = (x, out = None))]
fn f32_to_bf16_bits<'py>(
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u16>>> {
    run("f32_to_bf16_bits", x, out, Input::Values, convert::f32_to_bf16_bits)
}

/// bfloat16 bit patterns (uint16) → float32, exact.
#[pyfunction]
#[pyo3(signature = (bits, out = None))]
fn bf16_bits_to_f32<'py>(
    bits: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    run("bf16_bits_to_f32", bits, out, Input::Bits, convert::bf16_bits_to_f32)
}

/// bfloat16 bit patterns (uint16) → float16, through float32.
#[pyfunction]
#[pyo3(signature = (bits, out = None))]
fn bf16_bits_to_f16<'py>(
    bits: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<f16>>> {
    run("bf16_bits_to_f16", bits, out, Input::Bits, convert::bf16_bits_to_f16)
}

/// float16 → bfloat16 bit patterns (uint16), through float32.
#[pyfunction]
#[pyo3(signature = (x, out = None))]
fn f16_to_bf16_bits<'py>(
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u16>>> {
    run("f16_to_bf16_bits", x, out, Input::Values, convert::f16_to_bf16_bits)
}

/// float32 → float8_e4m3fn bit patterns (uint8): round to nearest even; overflow, inf, NaN → NaN.
#[pyfunction]
#[pyo3(signature = (x, out = None))]
fn f32_to_fp8_e4m3fn_bits<'py>(
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    run("f32_to_fp8_e4m3fn_bits", x, out, Input::Values, convert::f32_to_fp8_e4m3fn_bits)
}

/// float8_e4m3fn bit patterns (uint8) → float32, exact.
#[pyfunction]
#[pyo3(signature = (bits, out = None))]
fn fp8_e4m3fn_bits_to_f32<'py>(
    bits: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    run("fp8_e4m3fn_bits_to_f32", bits, out, Input::Bits, convert::fp8_e4m3fn_bits_to_f32)
}

/// float32 → float8_e5m2 bit patterns (uint8): round to nearest even; overflow → inf.
#[pyfunction]
#[pyo3(signature = (x, out = None))]
fn f32_to_fp8_e5m2_bits<'py>(
    x: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<u8>>> {
    run("f32_to_fp8_e5m2_bits", x, out, Input::Values, convert::f32_to_fp8_e5m2_bits)
}

/// float8_e5m2 bit patterns (uint8) → float32, exact.
#[pyfunction]
#[pyo3(signature = (bits, out = None))]
fn fp8_e5m2_bits_to_f32<'py>(
    bits: &Bound<'py, PyAny>,
    out: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
    run("fp8_e5m2_bits_to_f32", bits, out, Input::Bits, convert::fp8_e5m2_bits_to_f32)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(f32_to_bf16_bits, m)?)?;
    m.add_function(wrap_pyfunction!(bf16_bits_to_f32, m)?)?;
    m.add_function(wrap_pyfunction!(bf16_bits_to_f16, m)?)?;
    m.add_function(wrap_pyfunction!(f16_to_bf16_bits, m)?)?;
    m.add_function(wrap_pyfunction!(f32_to_fp8_e4m3fn_bits, m)?)?;
    m.add_function(wrap_pyfunction!(fp8_e4m3fn_bits_to_f32, m)?)?;
    m.add_function(wrap_pyfunction!(f32_to_fp8_e5m2_bits, m)?)?;
    m.add_function(wrap_pyfunction!(fp8_e5m2_bits_to_f32, m)?)?;
    Ok(())
}
