//! `nbxtensor.random`: seeded counter-based streams (Philox4x32-10) and their draws, as
//! tensors. A draw is computed on the host by the core's streams and copied to the device
//! asked for, so a seed gives the same bits on every device.

use crate::dtype::dtype_arg;
use crate::errors::to_py;
use crate::shape::{dims_of, int_of};
use crate::tensor::Tensor;
use nbxtensor::memory::Device;
use nbxtensor::random::{self, FloatDraw, Generator as CoreGenerator};
use nbxtensor::tensor::{Element, Tensor as CoreTensor};
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

/// A draw's dtype argument: float32 when absent.
fn float_dtype(dtype: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<nbxtensor::DType> {
    dtype.filter(|d| !d.is_none()).map_or(Ok(nbxtensor::DType::Float32), |d| dtype_arg(d, what))
}

/// The device a draw goes to: `None` for the host, else its text (`"cuda:0"`).
fn device_of(device: Option<&str>) -> PyResult<Device> {
    device.map_or(Ok(Device::CPU), |d| Device::parse(d).map_err(to_py))
}

/// `values` (of `product(dims)` elements) as a tensor of shape `dims` on `device`.
fn tensor<T: Element>(values: Vec<T>, dims: &[usize], device: Device) -> PyResult<Tensor> {
    let dims: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let host = CoreTensor::from_vec(values, &dims).map_err(to_py)?;
    host.to(device).map(Tensor::wrap).map_err(to_py)
}

/// A float draw as a tensor of its dtype, of shape `dims`, on `device`.
fn float_tensor(values: FloatDraw, dims: &[usize], device: Device) -> PyResult<Tensor> {
    match values {
        FloatDraw::Float32(v) => tensor(v, dims, device),
        FloatDraw::Float64(v) => tensor(v, dims, device),
        FloatDraw::Float16(v) => tensor(v, dims, device),
        FloatDraw::Bfloat16(v) => tensor(v, dims, device),
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

    /// Uniform values in [low, high) of a float dtype (float32, float64, float16, bfloat16),
    /// a tensor on `device` (default the host).
    #[pyo3(signature = (shape, low = 0.0, high = 1.0, dtype = None, device = None))]
    fn uniform(
        &mut self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        low: f64,
        high: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, dtype, device) = (shape_of(shape)?, float_dtype(dtype, "uniform")?, device_of(device)?);
        let g = &mut self.inner;
        let values = py.detach(|| g.uniform(dims.iter().product(), low, high, dtype)).map_err(to_py)?;
        float_tensor(values, &dims, device)
    }

    /// Normal values of a float dtype (float32, float64, float16, bfloat16), a tensor on
    /// `device` (default the host).
    #[pyo3(signature = (shape, mean = 0.0, std = 1.0, dtype = None, device = None))]
    fn normal(
        &mut self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        mean: f64,
        std: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, dtype, device) = (shape_of(shape)?, float_dtype(dtype, "normal")?, device_of(device)?);
        let g = &mut self.inner;
        let values = py.detach(|| g.normal(dims.iter().product(), mean, std, dtype)).map_err(to_py)?;
        float_tensor(values, &dims, device)
    }

    /// int64 values in [low, high), a tensor on `device` (default the host).
    #[pyo3(signature = (low, high, shape, device = None))]
    fn integers(
        &mut self,
        py: Python<'_>,
        low: i64,
        high: i64,
        shape: &Bound<'_, PyAny>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, device) = (shape_of(shape)?, device_of(device)?);
        let n = dims.iter().product();
        let g = &mut self.inner;
        tensor(py.detach(|| g.integers(n, low, high)).map_err(to_py)?, &dims, device)
    }

    /// A random permutation of 0..n (int64), a tensor on `device` (default the host).
    #[pyo3(signature = (n, device = None))]
    fn permutation(&mut self, py: Python<'_>, n: i64, device: Option<&str>) -> PyResult<Tensor> {
        let n =
            usize::try_from(n).map_err(|_| PyValueError::new_err(format!("permutation: n must be ≥ 0, got {n}")))?;
        let device = device_of(device)?;
        let g = &mut self.inner;
        tensor(py.detach(|| g.permutation(n)).map_err(to_py)?, &[n], device)
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
