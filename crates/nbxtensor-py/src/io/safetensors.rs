//! `nbxtensor.io.safetensors`: safetensors files read by memory map (zero-copy when aligned)
//! and written, every header field checked by the core; load-time conversions of weights,
//! split across the CPU pool.

use crate::dtype::convert::{run, Input};
use crate::errors::to_py;
use crate::tensor::Tensor;
use half::f16;
use nbxtensor::dtype::convert;
use nbxtensor::io::safetensors::{self as core, SafetensorsIndex, TensorEntry};
use numpy::{PyArrayDyn, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::collections::HashMap;
use std::path::PathBuf;

/// Every tensor of the file at `path` (str or os.PathLike), in file order, as a dict of
/// read-only views into the file's map where aligned, else copies.
#[pyfunction]
fn load<'py>(py: Python<'py>, path: PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let loaded = py.detach(|| core::load(&path)).map_err(to_py)?;
    let out = PyDict::new(py);
    for t in loaded {
        out.set_item(t.name, Tensor::wrap(t.tensor))?;
    }
    Ok(out)
}

/// Writes a dict of name → Tensor (and string metadata) to `path` as safetensors.
#[pyfunction]
#[pyo3(signature = (path, tensors, metadata = None))]
fn save(
    py: Python<'_>,
    path: PathBuf,
    tensors: &Bound<'_, PyDict>,
    metadata: Option<HashMap<String, String>>,
) -> PyResult<()> {
    let mut named = Vec::with_capacity(tensors.len());
    for (key, value) in tensors.iter() {
        let name: String = key.extract().map_err(|_| {
            PyTypeError::new_err(format!(
                "save: tensor names must be str, got {}",
                key.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ))
        })?;
        let tensor = value
            .cast::<Tensor>()
            .map_err(|_| PyTypeError::new_err(format!("save: '{name}' is not an nbxtensor.Tensor")))?;
        named.push((name, tensor.get().inner.clone()));
    }
    py.detach(|| {
        let pairs: Vec<(&str, &nbxtensor::tensor::Tensor)> = named.iter().map(|(n, t)| (n.as_str(), t)).collect();
        core::save(&path, &pairs, metadata)
    })
    .map_err(to_py)
}

/// The header of a safetensors file, read and checked without its data; tensors load one at a
/// time.
#[pyclass(module = "nbxtensor.io.safetensors", name = "SafetensorsFile", frozen)]
struct SafetensorsFile {
    index: SafetensorsIndex,
}

impl SafetensorsFile {
    /// The header entry of `name`; an unknown name is a KeyError.
    fn entry(&self, name: &str) -> PyResult<&TensorEntry> {
        self.index.entry(name).map_err(to_py)
    }
}

#[pymethods]
impl SafetensorsFile {
    /// The tensor names, in file order.
    fn keys(&self) -> Vec<&str> {
        self.index.names()
    }

    /// The dtype (table name) of the tensor `name`.
    fn dtype(&self, name: &str) -> PyResult<&'static str> {
        Ok(self.entry(name)?.dtype.name())
    }

    /// The shape of the tensor `name`, a tuple.
    fn shape<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.entry(name)?.shape)
    }

    /// The header's byte range `(begin, end)` of the tensor `name`, from the start of the data
    /// section.
    fn data_offsets(&self, name: &str) -> PyResult<(u64, u64)> {
        let entry = self.entry(name)?;
        Ok((entry.begin, entry.end))
    }

    /// The header's `__metadata__` strings, or None when the file has none.
    fn metadata(&self) -> Option<HashMap<String, String>> {
        self.index.header().metadata.clone()
    }

    /// The tensor `name`, read by memory map.
    fn load(&self, py: Python<'_>, name: &str) -> PyResult<Tensor> {
        py.detach(|| self.index.load(name)).map(|t| Tensor::wrap(t.tensor)).map_err(to_py)
    }

    /// Whether `load(name)` (and the module's `load`) gives the tensor as a read-only view of
    /// the file's map (its bytes aligned to the dtype's width) rather than a copy.
    fn zero_copy(&self, name: &str) -> PyResult<bool> {
        self.index.is_zero_copy(name).map_err(to_py)
    }

    /// Whether the file holds a tensor `name`.
    fn __contains__(&self, name: &str) -> bool {
        self.index.header().get(name).is_some()
    }

    /// The number of tensors.
    fn __len__(&self) -> usize {
        self.index.header().tensors.len()
    }

    /// The names, in file order.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys().into_pyobject(py)?.try_iter().map(Bound::into_any)
    }

    /// The path and the number of tensors.
    fn __repr__(&self) -> String {
        format!("SafetensorsFile('{}', {} tensors)", self.index.path().display(), self.index.header().tensors.len())
    }
}

/// Reads and checks the header of the file at `path` without reading its data.
#[pyfunction]
fn open(py: Python<'_>, path: PathBuf) -> PyResult<SafetensorsFile> {
    py.detach(|| core::open(&path)).map(|index| SafetensorsFile { index }).map_err(to_py)
}

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
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(save, m)?)?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_class::<SafetensorsFile>()?;
    Ok(())
}
