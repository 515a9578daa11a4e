//! `nbxtensor.random`: seeded counter-based streams (Philox4x32-10) and their draws, as
//! tensors. A draw is computed on the host by the core's streams and copied to the device
//! asked for, so a seed gives the same bits on every device.

use crate::dtype::dtype_arg;
use crate::errors::{guard, to_py};
use crate::shape::{dims_of, int_of};
use crate::tensor::Tensor;
use nbxtensor::memory::{host_allocator, Device, HostCharge};
use nbxtensor::random::{self, FloatDraw, Generator as CoreGenerator};
use nbxtensor::settings::memory_limit::check_host_bytes;
use nbxtensor::tensor::{Element, Tensor as CoreTensor};
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyInt;
use std::sync::Mutex;

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
fn float_dtype(dtype: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<DType> {
    dtype.filter(|d| !d.is_none()).map_or(Ok(DType::Float32), |d| dtype_arg(d, what))
}

/// Checks a draw of `n` elements against the host's limit and counts the values it makes
/// before they are copied into the tensor's own (counted) block: `drawn_bytes` an element
/// (half formats are drawn in float32 first). A tensor that alone passes the limit
/// (`element_bytes` an element) is refused as the core refuses it (naming the bytes asked and
/// whose limit: the one set or the host's memory); a draw that passes it with what is already
/// held is refused by the host allocator's count. The charge ends when the values are dropped.
fn charge_draw(n: usize, element_bytes: usize, drawn_bytes: usize) -> PyResult<HostCharge> {
    let bytes = |per: usize| (n as u64).saturating_mul(per as u64);
    check_host_bytes(bytes(element_bytes), "a random draw").map_err(to_py)?;
    host_allocator().charge(bytes(drawn_bytes)).map_err(to_py)
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

/// Bytes of one element of a float draw, and of one drawn value before it is rounded.
fn float_widths(dtype: DType) -> (usize, usize) {
    match dtype {
        DType::Float16 | DType::Bfloat16 => (2, 4),
        DType::Float64 => (8, 8),
        _ => (4, 4),
    }
}

/// A seeded counter-based random stream: `(seed, stream, offset)` → the same bits on every
/// thread count and chunking. Each draw starts on a fresh Philox block and advances the
/// offset (see the crate's `random` module for the exact mapping).
///
/// A generator may be shared between threads: their draws take turns, each reading its own
/// words of the stream (which thread draws first is the threads' order).
#[pyclass(module = "nbxtensor.random", name = "Generator", frozen)]
struct Generator {
    inner: Mutex<CoreGenerator>,
    seed: u64,
    stream: u64,
}

impl Generator {
    fn of(inner: CoreGenerator) -> Generator {
        Generator { seed: inner.seed(), stream: inner.stream(), inner: Mutex::new(inner) }
    }

    /// Runs `draw` on the generator with the interpreter released, waiting for its turn
    /// there (never while holding the interpreter, so no thread holds one and waits for the
    /// other).
    fn draw<T: Send>(&self, py: Python<'_>, draw: impl FnOnce(&mut CoreGenerator) -> T + Send) -> T {
        py.detach(|| draw(&mut self.inner.lock().unwrap_or_else(|e| e.into_inner())))
    }
}

#[pymethods]
impl Generator {
    /// Stream `stream` of `seed`, at offset 0.
    #[new]
    #[pyo3(signature = (seed, stream = 0))]
    fn new(seed: u64, stream: u64) -> Self {
        Generator::of(CoreGenerator::new(seed).spawn(stream))
    }

    /// Another stream of the same seed, at offset 0: independent of this one.
    fn spawn(&self, stream: u64) -> Self {
        Generator::of(CoreGenerator::new(self.seed).spawn(stream))
    }

    /// The seed.
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }

    /// The stream number.
    #[getter]
    fn stream(&self) -> u64 {
        self.stream
    }

    /// Words of the stream consumed so far; setting it moves the stream (to a block boundary).
    #[getter]
    fn get_offset(&self, py: Python<'_>) -> u64 {
        self.draw(py, |g| g.offset())
    }

    #[setter]
    fn set_offset(&self, py: Python<'_>, offset: u64) {
        self.draw(py, |g| g.set_offset(offset))
    }

    /// Uniform values in [low, high) of a float dtype (float32, float64, float16, bfloat16),
    /// a tensor on `device` (default the host).
    #[pyo3(signature = (shape, low = 0.0, high = 1.0, dtype = None, device = None))]
    fn uniform(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        low: f64,
        high: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, dtype, device) = (shape_of(shape)?, float_dtype(dtype, "uniform")?, device_of(device)?);
        let n = dims.iter().product();
        let (width, drawn) = float_widths(dtype);
        let _counted = charge_draw(n, width, drawn)?;
        let values = guard(|| self.draw(py, |g| g.uniform(n, low, high, dtype)).map_err(to_py))?;
        float_tensor(values, &dims, device)
    }

    /// Normal values of a float dtype (float32, float64, float16, bfloat16), a tensor on
    /// `device` (default the host).
    #[pyo3(signature = (shape, mean = 0.0, std = 1.0, dtype = None, device = None))]
    fn normal(
        &self,
        py: Python<'_>,
        shape: &Bound<'_, PyAny>,
        mean: f64,
        std: f64,
        dtype: Option<&Bound<'_, PyAny>>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, dtype, device) = (shape_of(shape)?, float_dtype(dtype, "normal")?, device_of(device)?);
        let n = dims.iter().product();
        let (width, drawn) = float_widths(dtype);
        let _counted = charge_draw(n, width, drawn)?;
        let values = guard(|| self.draw(py, |g| g.normal(n, mean, std, dtype)).map_err(to_py))?;
        float_tensor(values, &dims, device)
    }

    /// int64 values in [low, high), a tensor on `device` (default the host).
    #[pyo3(signature = (low, high, shape, device = None))]
    fn integers(
        &self,
        py: Python<'_>,
        low: i64,
        high: i64,
        shape: &Bound<'_, PyAny>,
        device: Option<&str>,
    ) -> PyResult<Tensor> {
        let (dims, device) = (shape_of(shape)?, device_of(device)?);
        let n = dims.iter().product();
        let _counted = charge_draw(n, 8, 8)?;
        let values = guard(|| self.draw(py, |g| g.integers(n, low, high)).map_err(to_py))?;
        tensor(values, &dims, device)
    }

    /// A random permutation of 0..n (int64), a tensor on `device` (default the host).
    #[pyo3(signature = (n, device = None))]
    fn permutation(&self, py: Python<'_>, n: i64, device: Option<&str>) -> PyResult<Tensor> {
        let n =
            usize::try_from(n).map_err(|_| PyValueError::new_err(format!("permutation: n must be ≥ 0, got {n}")))?;
        let device = device_of(device)?;
        // sorted as (key, index) pairs of 16 bytes, then kept as 8-byte indices
        let _counted = charge_draw(n, 8, 16)?;
        let values = guard(|| self.draw(py, |g| g.permutation(n)).map_err(to_py))?;
        tensor(values, &[n], device)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Generator(seed={}, stream={}, offset={})", self.seed, self.stream, self.get_offset(py))
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
