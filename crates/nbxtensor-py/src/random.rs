//! `nbxtensor.random`: seeded counter-based streams (Philox4x32-10) and their draws, as
//! numpy arrays. bfloat16 draws come back as their 16-bit patterns (uint16), the host's
//! bfloat16 convention.

use crate::errors::to_py;
use crate::shape::{dims_of, int_of};
use nbxtensor::random::{self, FloatDraw, Generator as CoreGenerator};
use nbxtensor::DType;
use numpy::{IntoPyArray, PyArrayDyn, PyArrayMethods};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyInt;

/// A shape argument: an int (a 1-d draw) or a sequence of ints; its dims as `usize`.
fn shape_of(shape: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
    let dims = if shape.is_instance_of::<PyInt>() {
        vec![int_of(shape, &|| "shape".to_string())?]
    } else {
        dims_of(shape, "shape")?
    };
    nbxtensor::shape::numel(&dims).map_err(to_py)?;
    Ok(dims.into_iter().map(|d| d as usize).collect())
}

/// `values` (of `product(dims)` elements) as a numpy array of shape `dims`.
fn array<'py, T: numpy::Element>(py: Python<'py>, values: Vec<T>, dims: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    let flat: Bound<'py, PyArrayDyn<T>> = values.into_pyarray(py).to_dyn().clone();
    Ok(flat.reshape(dims)?.into_any())
}

fn dtype_of(name: &str) -> PyResult<DType> {
    DType::from_name(name).map_err(to_py)
}

/// A float draw as a numpy array of shape `dims` (bfloat16 as its uint16 bit patterns).
fn float_array<'py>(py: Python<'py>, values: FloatDraw, dims: &[usize]) -> PyResult<Bound<'py, PyAny>> {
    match values {
        FloatDraw::Float32(v) => array(py, v, dims),
        FloatDraw::Float64(v) => array(py, v, dims),
        FloatDraw::Float16(v) => array(py, v, dims),
        FloatDraw::Bfloat16(v) => array(py, v.into_iter().map(|x| x.to_bits()).collect::<Vec<u16>>(), dims),
    }
}

/// A seeded counter-based random stream: `(seed, stream, offset)` → the same bits on every
/// thread count and chunking. Each draw starts on a fresh Philox block and advances the
/// offset (see the crate's `random` module for the exact mapping).
#[pyclass(module = "nbxtensor.random", name = "Generator")]
struct Generator {
    inner: CoreGenerator,
}

#[pymethods]
impl Generator {
    /// Stream `stream` of `seed`, at offset 0.
    #[new]
    #[pyo3(signature = (seed, stream = 0))]
    fn new(seed: u64, stream: u64) -> Self {
        Generator { inner: CoreGenerator::new(seed).spawn(stream) }
    }

    /// Another stream of the same seed, at offset 0: independent of this one.
    fn spawn(&self, stream: u64) -> Self {
        Generator { inner: self.inner.spawn(stream) }
    }

    /// The seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.inner.seed()
    }

    /// The stream number.
    #[getter]
    fn stream(&self) -> u64 {
        self.inner.stream()
    }

    /// Words of the stream consumed so far; setting it moves the stream (to a block boundary).
    #[getter]
    fn get_offset(&self) -> u64 {
        self.inner.offset()
    }

    #[setter]
    fn set_offset(&mut self, offset: u64) {
        self.inner.set_offset(offset);
    }

    /// Uniform values in [low, high) of a float dtype (float32, float64, float16, bfloat16).
    #[pyo3(signature = (shape, low = 0.0, high = 1.0, dtype = "float32"))]
    fn uniform<'py>(
        &mut self,
        py: Python<'py>,
        shape: &Bound<'py, PyAny>,
        low: f64,
        high: f64,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (dims, dtype) = (shape_of(shape)?, dtype_of(dtype)?);
        let g = &mut self.inner;
        let values = py.detach(|| g.uniform(dims.iter().product(), low, high, dtype)).map_err(to_py)?;
        float_array(py, values, &dims)
    }

    /// Normal values of a float dtype (float32, float64, float16, bfloat16).
    #[pyo3(signature = (shape, mean = 0.0, std = 1.0, dtype = "float32"))]
    fn normal<'py>(
        &mut self,
        py: Python<'py>,
        shape: &Bound<'py, PyAny>,
        mean: f64,
        std: f64,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (dims, dtype) = (shape_of(shape)?, dtype_of(dtype)?);
        let g = &mut self.inner;
        let values = py.detach(|| g.normal(dims.iter().product(), mean, std, dtype)).map_err(to_py)?;
        float_array(py, values, &dims)
    }

    /// int64 values in [low, high).
    #[pyo3(signature = (low, high, shape))]
    fn integers<'py>(
        &mut self,
        py: Python<'py>,
        low: i64,
        high: i64,
        shape: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dims = shape_of(shape)?;
        let n = dims.iter().product();
        let g = &mut self.inner;
        array(py, py.detach(|| g.integers(n, low, high)).map_err(to_py)?, &dims)
    }

    /// A random permutation of 0..n (int64).
    fn permutation<'py>(&mut self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyAny>> {
        let n =
            usize::try_from(n).map_err(|_| PyValueError::new_err(format!("permutation: n must be ≥ 0, got {n}")))?;
        let g = &mut self.inner;
        array(py, py.detach(|| g.permutation(n)).map_err(to_py)?, &[n])
    }

    fn __repr__(&self) -> String {
        format!("Generator(seed={}, stream={}, offset={})", self.inner.seed(), self.inner.stream(), self.inner.offset())
    }
}

/// The Philox4x32-10 block function: four 32-bit words from a counter of four and a key of two.
#[pyfunction]
fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    random::philox4x32_10(counter, key)
}

/// Registers the module's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Generator>()?;
    m.add_function(wrap_pyfunction!(philox4x32_10, m)?)?;
    Ok(())
}
