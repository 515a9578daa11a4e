//! `nbxtensor.random`: seeded counter-based streams (Philox4x32-10) and their draws, as
//! numpy arrays. bfloat16 draws come back as their 16-bit patterns (uint16), the host's
//! bfloat16 convention.

use crate::errors::{guard, to_py};
use crate::shape::{dims_of, int_of};
use nbxtensor::memory::{host_allocator, HostCharge};
use nbxtensor::random::{self, FloatDraw, Generator as CoreGenerator};
use nbxtensor::settings::memory_limit::check_host_bytes;
use nbxtensor::DType;
use numpy::ndarray::{ArrayViewMut, IxDyn};
use numpy::PyArrayDyn;
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

/// The memory of a drawn array: the values, counted against the host's memory limit for as
/// long as the array (whose base this is) lives.
#[pyclass(module = "nbxtensor.random", name = "_Draw", frozen)]
struct Draw {
    _values: Box<dyn std::any::Any + Send + Sync>,
    _counted: HostCharge,
}

/// `values` (of `product(dims)` elements) as a numpy array of shape `dims`, read as `U` (a
/// type of the same width: bfloat16 as its uint16 bits), whose memory stays counted.
fn array<'py, T: Send + Sync + 'static, U: numpy::Element>(
    py: Python<'py>,
    mut values: Vec<T>,
    dims: &[usize],
    counted: HostCharge,
) -> PyResult<Bound<'py, PyAny>> {
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<U>());
    let ptr = values.as_mut_ptr().cast::<U>();
    // SAFETY: the vector holds product(dims) elements of U's width at ptr (U a plain type of
    // T's width, every bit pattern valid); the buffer never moves or grows after this.
    let view = unsafe { ArrayViewMut::from_shape_ptr(IxDyn(dims), ptr) };
    let owner = Bound::new(py, Draw { _values: Box::new(values), _counted: counted })?;
    // SAFETY: the owner (the array's base) keeps the vector alive, untouched, until the array
    // is gone.
    Ok(unsafe { PyArrayDyn::<U>::borrow_from_array(&view, owner.into_any()) }.into_any())
}

/// Counts the bytes of a draw of `n` elements of `dtype` against the host's limit while it is
/// made (half formats are drawn in float32 first: 6 bytes an element at the peak). A draw
/// that alone passes the limit is refused as the core refuses it (naming the bytes asked and
/// whose limit: the one set or the host's memory); one that passes it with what is already
/// held is refused by the host allocator's count.
fn charge_draw(n: usize, element_bytes: usize, peak_bytes: usize) -> PyResult<(HostCharge, HostCharge)> {
    let host = host_allocator();
    let bytes = |per: usize| (n as u64).saturating_mul(per as u64);
    check_host_bytes(bytes(peak_bytes), "a random draw").map_err(to_py)?;
    let peak = host.charge(bytes(peak_bytes.saturating_sub(element_bytes))).map_err(to_py)?;
    let kept = host.charge(bytes(element_bytes)).map_err(to_py)?;
    Ok((kept, peak))
}

fn dtype_of(name: &str) -> PyResult<DType> {
    DType::from_name(name).map_err(to_py)
}

/// A float draw as a numpy array of shape `dims` (bfloat16 as its uint16 bit patterns).
fn float_array<'py>(
    py: Python<'py>,
    values: FloatDraw,
    dims: &[usize],
    counted: HostCharge,
) -> PyResult<Bound<'py, PyAny>> {
    match values {
        FloatDraw::Float32(v) => array::<f32, f32>(py, v, dims, counted),
        FloatDraw::Float64(v) => array::<f64, f64>(py, v, dims, counted),
        FloatDraw::Float16(v) => array::<half::f16, half::f16>(py, v, dims, counted),
        FloatDraw::Bfloat16(v) => array::<half::bf16, u16>(py, v, dims, counted),
    }
}

/// Bytes of one element of a float draw, and at the peak of making it.
fn float_widths(dtype: DType) -> (usize, usize) {
    match dtype {
        DType::Float16 | DType::Bfloat16 => (2, 6),
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

    /// Uniform values in [low, high) of a float dtype (float32, float64, float16, bfloat16).
    #[pyo3(signature = (shape, low = 0.0, high = 1.0, dtype = "float32"))]
    fn uniform<'py>(
        &self,
        py: Python<'py>,
        shape: &Bound<'py, PyAny>,
        low: f64,
        high: f64,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (dims, dtype) = (shape_of(shape)?, dtype_of(dtype)?);
        let n = dims.iter().product();
        let (width, peak) = float_widths(dtype);
        let (counted, _peak) = charge_draw(n, width, peak)?;
        let values = guard(|| self.draw(py, |g| g.uniform(n, low, high, dtype)).map_err(to_py))?;
        float_array(py, values, &dims, counted)
    }

    /// Normal values of a float dtype (float32, float64, float16, bfloat16).
    #[pyo3(signature = (shape, mean = 0.0, std = 1.0, dtype = "float32"))]
    fn normal<'py>(
        &self,
        py: Python<'py>,
        shape: &Bound<'py, PyAny>,
        mean: f64,
        std: f64,
        dtype: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (dims, dtype) = (shape_of(shape)?, dtype_of(dtype)?);
        let n = dims.iter().product();
        let (width, peak) = float_widths(dtype);
        let (counted, _peak) = charge_draw(n, width, peak)?;
        let values = guard(|| self.draw(py, |g| g.normal(n, mean, std, dtype)).map_err(to_py))?;
        float_array(py, values, &dims, counted)
    }

    /// int64 values in [low, high).
    #[pyo3(signature = (low, high, shape))]
    fn integers<'py>(
        &self,
        py: Python<'py>,
        low: i64,
        high: i64,
        shape: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let dims = shape_of(shape)?;
        let n = dims.iter().product();
        let (counted, _peak) = charge_draw(n, 8, 8)?;
        let values = guard(|| self.draw(py, |g| g.integers(n, low, high)).map_err(to_py))?;
        array::<i64, i64>(py, values, &dims, counted)
    }

    /// A random permutation of 0..n (int64).
    fn permutation<'py>(&self, py: Python<'py>, n: i64) -> PyResult<Bound<'py, PyAny>> {
        let n =
            usize::try_from(n).map_err(|_| PyValueError::new_err(format!("permutation: n must be ≥ 0, got {n}")))?;
        // sorted as (key, index) pairs of 16 bytes, then kept as 8-byte indices
        let (counted, _peak) = charge_draw(n, 8, 16)?;
        let values = guard(|| self.draw(py, |g| g.permutation(n)).map_err(to_py))?;
        array::<i64, i64>(py, values, &[n], counted)
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
