//! `nbxtensor.Tensor`: the Python class over `nbxtensor::tensor::Tensor`.
//!
//! Views never copy; a view the layout refuses is a ValueError that says to copy first.
//! Exchange with numpy and other libraries goes through DLPack (`dlpack.rs`).

pub mod dlpack;
pub mod habits;
pub mod indexing;

use crate::dtype::dtype_arg;
use crate::errors::{guard, to_py};
use crate::ops::call::{binary_of, computed, PyOperand};
use crate::shape::dims_of;
use nbxtensor::facts::Kind;
use nbxtensor::memory::host_allocator;
use nbxtensor::memory::Device;
use nbxtensor::ops::spec::reduce::ReduceOp;
use nbxtensor::tensor::dlpack as core_dlpack;
use nbxtensor::tensor::Tensor as CoreTensor;
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyComplex, PyInt, PyTuple, PyType};

/// A tensor: a dtype, a shape, strides in elements, an offset, a device, and storage shared
/// by its views.
#[pyclass(module = "nbxtensor", name = "Tensor", frozen)]
pub struct Tensor {
    /// The core tensor.
    pub inner: CoreTensor,
}

impl Tensor {
    /// Wraps a core tensor.
    pub fn wrap(inner: CoreTensor) -> Tensor {
        Tensor { inner }
    }

    /// A fresh contiguous copy made by the `copy` op (so a traced program records it).
    fn copied(&self, py: Python<'_>) -> PyResult<Tensor> {
        let inner = self.inner.clone();
        let on_gpu = !nbxtensor::backend::of(self.inner.device()).host_addressable();
        let copied =
            computed(py, on_gpu, move || nbxtensor::ops::call("copy", &nbxtensor::kernel::Attrs::new(), &[&inner]))?;
        copied.into_iter().next().map(Tensor::wrap).ok_or_else(|| PyValueError::new_err("copy gave no output"))
    }
}

/// The DLPack type codes numpy imports: integers, IEEE floats, complex and bool (numpy has
/// no bfloat16 or float8).
const NUMPY_READS: [u8; 5] = [
    core_dlpack::KDL_INT,
    core_dlpack::KDL_UINT,
    core_dlpack::KDL_FLOAT,
    core_dlpack::KDL_COMPLEX,
    core_dlpack::KDL_BOOL,
];

fn dims_arg(args: &Bound<'_, PyTuple>, what: &str) -> PyResult<Vec<i64>> {
    // f(2, 3) and f((2, 3)) both name the dims (2, 3)
    if args.len() == 1 && !args.get_item(0)?.is_instance_of::<PyInt>() {
        return dims_of(&args.get_item(0)?, what);
    }
    dims_of(args.as_any(), what)
}

#[pymethods]
impl Tensor {
    /// The dtype's table name.
    #[getter]
    fn dtype(&self) -> &'static str {
        self.inner.dtype().name()
    }

    /// The extents, a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.shape())
    }

    /// The strides in elements, a tuple.
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.inner.strides())
    }

    /// The offset of the first element in the storage, in elements.
    #[getter]
    fn offset(&self) -> i64 {
        self.inner.offset()
    }

    /// The device as text (`"cpu"`, `"cuda:0"`).
    #[getter]
    fn device(&self) -> String {
        self.inner.device().to_string()
    }

    /// The number of dims.
    #[getter]
    fn ndim(&self) -> usize {
        self.inner.ndim()
    }

    /// The number of elements.
    fn numel(&self) -> i64 {
        self.inner.numel()
    }

    /// Whether the layout is row-major without gaps.
    fn is_contiguous(&self) -> bool {
        self.inner.is_contiguous()
    }

    /// Whether the producer of the storage forbade writes.
    #[getter]
    fn read_only(&self) -> bool {
        self.inner.is_read_only()
    }

    /// Elements `start..start + length` of `dim`, a view.
    fn narrow(&self, dim: i64, start: i64, length: i64) -> PyResult<Tensor> {
        guard(|| self.inner.narrow(dim, start, length).map(Tensor::wrap).map_err(to_py))
    }

    /// The same elements in a new shape (one -1 inferred), a view; refused where the layout
    /// has none: copy first.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
        guard(|| self.inner.reshape(&dims_arg(shape, "shape")?).map(Tensor::wrap).map_err(to_py))
    }

    /// The same as reshape: a view, or an error that says to copy first.
    #[pyo3(signature = (*shape))]
    fn view(&self, shape: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
        self.reshape(shape)
    }

    /// The dims in a new order.
    #[pyo3(signature = (*dims))]
    fn permute(&self, dims: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
        guard(|| self.inner.permute(&dims_arg(dims, "dims")?).map(Tensor::wrap).map_err(to_py))
    }

    /// Dims a and b swapped.
    fn transpose(&self, a: i64, b: i64) -> PyResult<Tensor> {
        guard(|| self.inner.transpose(a, b).map(Tensor::wrap).map_err(to_py))
    }

    /// The tensor broadcast to a shape, without a copy.
    #[pyo3(signature = (*shape))]
    fn expand(&self, shape: &Bound<'_, PyTuple>) -> PyResult<Tensor> {
        guard(|| self.inner.expand(&dims_arg(shape, "shape")?).map(Tensor::wrap).map_err(to_py))
    }

    /// The tensor broadcast to a shape, without a copy (numpy's name).
    fn broadcast_to(&self, shape: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        guard(|| self.inner.expand(&dims_of(shape, "shape")?).map(Tensor::wrap).map_err(to_py))
    }

    /// Dims of extent 1 removed (one dim, or all).
    #[pyo3(signature = (dim = None))]
    fn squeeze(&self, dim: Option<i64>) -> PyResult<Tensor> {
        guard(|| self.inner.squeeze(dim).map(Tensor::wrap).map_err(to_py))
    }

    /// A dim of extent 1 inserted.
    fn unsqueeze(&self, dim: i64) -> PyResult<Tensor> {
        guard(|| self.inner.unsqueeze(dim).map(Tensor::wrap).map_err(to_py))
    }

    /// The elements in row-major order as bytes (a copy), as numpy's `tobytes`: refused
    /// (MemoryError) when the copy does not fit under the memory limit with what is held.
    fn tobytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyBytes>> {
        guard(|| {
            let len = self.inner.byte_len().map_err(to_py)?;
            // counted while it is made; the bytes object is Python's after
            let _counted = host_allocator().charge(len as u64).map_err(to_py)?;
            pyo3::types::PyBytes::new_with(py, len, |out| self.inner.copy_to(out).map_err(to_py))
        })
    }

    /// The tensor itself when contiguous, else a contiguous copy made by the `copy` op (so a
    /// traced program records it).
    fn contiguous(&self, py: Python<'_>) -> PyResult<Tensor> {
        if self.inner.is_contiguous() {
            return Ok(Tensor::wrap(self.inner.clone()));
        }
        self.copied(py)
    }

    /// A contiguous copy, always (numpy's `copy`).
    fn copy(&self, py: Python<'_>) -> PyResult<Tensor> {
        self.copied(py)
    }

    /// A copy on a device (`"cpu"`, `"cuda"`, `"cuda:1"`); the same tensor on its own device.
    fn to(&self, device: &str) -> PyResult<Tensor> {
        let device = Device::parse(device).map_err(to_py)?;
        guard(|| self.inner.to(device).map(Tensor::wrap).map_err(to_py))
    }

    /// numpy's indexing: ints, slices of any step (views), `...`, `None`, and one integer array
    /// (negatives from the end) or one bool mask, gathered by the core's kernels.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        indexing::index(py, &self.inner, key).map(Tensor::wrap)
    }

    /// `t[key] = value` in place, by the `assign` kernel: through the view a basic key
    /// selects (ints, slices of any step, `...`, `None`), or where a bool mask (the whole
    /// key) is true; the value is broadcast and converted to the tensor's dtype.
    fn __setitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        indexing::assign(py, &self.inner, key, value)
    }

    /// The same bytes read as another dtype of the same width (bfloat16 as uint16 …), a view.
    fn view_dtype(&self, dtype: &Bound<'_, PyAny>) -> PyResult<Tensor> {
        let dtype = dtype_arg(dtype, "view_dtype")?;
        guard(|| self.inner.view_dtype(dtype).map(Tensor::wrap).map_err(to_py))
    }

    /// The values converted to `dtype` (a name, an NBXDtype or a numpy dtype) by the `cast`
    /// op; with `copy=False` the tensor itself when it already holds `dtype`.
    #[pyo3(signature = (dtype, copy = true))]
    fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>, copy: bool) -> PyResult<Tensor> {
        let dtype = dtype_arg(dtype, "astype")?;
        if dtype == self.inner.dtype() {
            return if copy { self.copied(py) } else { Ok(Tensor::wrap(self.inner.clone())) };
        }
        let inner = self.inner.clone();
        let on_gpu = !nbxtensor::backend::of(self.inner.device()).host_addressable();
        computed(py, on_gpu, move || inner.cast(dtype)).map(Tensor::wrap)
    }

    /// The number of elements (the Array API's `size`).
    #[getter]
    fn size(&self) -> i64 {
        self.inner.numel()
    }

    /// The dims in reverse order, a view (numpy's `T`).
    #[getter(T)]
    fn reversed_dims(&self) -> PyResult<Tensor> {
        let order: Vec<i64> = (0..self.inner.ndim() as i64).rev().collect();
        self.inner.permute(&order).map(Tensor::wrap).map_err(to_py)
    }

    /// The last two dims swapped, a view (the Array API's `mT`: a stack of matrices
    /// transposed); a tensor of fewer than two dims is refused.
    #[getter(mT)]
    fn matrix_transpose(&self) -> PyResult<Tensor> {
        if self.inner.ndim() < 2 {
            return Err(PyValueError::new_err(format!(
                "mT: a tensor of {} dims holds no matrices (two dims or more)",
                self.inner.ndim()
            )));
        }
        self.inner.transpose(-2, -1).map(Tensor::wrap).map_err(to_py)
    }

    /// A copy on a device (the Array API's name for `to`). The copy is ordered on
    /// nbxtensor's own stream; another `stream` is refused by name.
    #[pyo3(signature = (device, /, *, stream = None))]
    fn to_device(&self, device: &str, stream: Option<&Bound<'_, PyAny>>) -> PyResult<Tensor> {
        if stream.is_some_and(|s| !s.is_none()) {
            return Err(PyValueError::new_err(
                "to_device: only stream=None is served (the copy is ordered on nbxtensor's own stream)",
            ));
        }
        self.to(device)
    }

    /// The values as nested Python lists (a Python number for a 0-d tensor), as numpy's.
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        habits::tolist(py, &self.inner)
    }

    /// The one element as a Python number; a ValueError for any other count, as numpy.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        habits::item(py, &self.inner)
    }

    /// The truth of the one element; a tensor of another count is ambiguous (a ValueError, as
    /// numpy and torch), never its length.
    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        habits::truth(py, &self.inner)
    }

    /// The one real element as a Python float.
    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        habits::to_float(py, &self.inner)
    }

    /// The one element as a Python int, truncated toward zero.
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        habits::to_int(py, &self.inner)
    }

    /// The one element as a Python complex.
    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyComplex>> {
        habits::to_complex(py, &self.inner)
    }

    /// A 0-d integer tensor as an index (`range(n)[t]`, `operator.index(t)`).
    fn __index__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        habits::to_index(py, &self.inner)
    }

    /// The sum over `axis` (None: every axis; an int or a tuple), numpy's keywords.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn sum(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<Tensor> {
        habits::reduce(py, &self.inner, ReduceOp::Sum, axis, keepdims).map(Tensor::wrap)
    }

    /// The mean over `axis` (None: every axis; an int or a tuple), numpy's keywords.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn mean(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<Tensor> {
        habits::reduce(py, &self.inner, ReduceOp::Mean, axis, keepdims).map(Tensor::wrap)
    }

    /// The maximum over `axis` (None: every axis; an int or a tuple), numpy's keywords.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn max(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<Tensor> {
        habits::reduce(py, &self.inner, ReduceOp::Max, axis, keepdims).map(Tensor::wrap)
    }

    /// The minimum over `axis` (None: every axis; an int or a tuple), numpy's keywords.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn min(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>, keepdims: bool) -> PyResult<Tensor> {
        habits::reduce(py, &self.inner, ReduceOp::Min, axis, keepdims).map(Tensor::wrap)
    }

    /// The int64 index of the first maximum along `axis` (None: of the flattened tensor).
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn argmax(&self, py: Python<'_>, axis: Option<i64>, keepdims: bool) -> PyResult<Tensor> {
        habits::argmax(py, &self.inner, axis, keepdims).map(Tensor::wrap)
    }

    /// numpy defers its operators to a tensor (`np.float32(2) * t` is a tensor, as
    /// `t * np.float32(2)`), as it does to torch's.
    #[classattr]
    fn __array_priority__() -> f64 {
        1000.0
    }

    /// A tensor of `dtype` and `shape` holding a copy of `data` (row-major bytes, exactly
    /// numel × itemsize of them), on `device`; what pickling rebuilds a tensor with.
    #[classmethod]
    #[pyo3(signature = (data, dtype, shape, device = "cpu"))]
    fn from_bytes(
        _cls: &Bound<'_, PyType>,
        data: &[u8],
        dtype: &Bound<'_, PyAny>,
        shape: &Bound<'_, PyAny>,
        device: &str,
    ) -> PyResult<Tensor> {
        let (dtype, shape, device) =
            (dtype_arg(dtype, "from_bytes")?, dims_of(shape, "shape")?, Device::parse(device).map_err(to_py)?);
        let host = CoreTensor::from_bytes(dtype, &shape, data).map_err(to_py)?;
        host.to(device).map(Tensor::wrap).map_err(to_py)
    }

    /// Pickling: the values as bytes, with the dtype, the shape and the device
    /// (`Tensor.from_bytes` rebuilds it; the copy is contiguous and writable).
    #[allow(clippy::type_complexity)]
    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>, &'static str, Bound<'py, PyTuple>, String))> {
        let py = slf.py();
        let tensor = &slf.get().inner;
        let inner = tensor.clone();
        let bytes = py.detach(move || guard(|| inner.to_bytes().map_err(to_py)))?;
        Ok((
            slf.get_type().getattr("from_bytes")?,
            (
                PyBytes::new(py, &bytes),
                tensor.dtype().name(),
                PyTuple::new(py, tensor.shape())?,
                tensor.device().to_string(),
            ),
        ))
    }

    /// The tensor as a DLPack capsule (the Python array API protocol): zero-copy unless
    /// `copy=True`; `max_version` ≥ (1, 0) gives a versioned capsule, else a legacy one.
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<&Bound<'_, PyAny>>,
        dl_device: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Py<PyAny>> {
        guard(|| dlpack::export(py, &self.inner, stream, max_version, dl_device, copy))
    }

    /// `(device_type, device_id)` as DLPack numbers them (`(1, 0)` for the host).
    fn __dlpack_device__(&self) -> (i32, i32) {
        dlpack::device_of(&self.inner)
    }

    /// The Array API namespace of the tensor: the module `nbxtensor.array_api`. Only the
    /// standard's 2024.12 revision is served; another `api_version` is a ValueError naming it.
    #[pyo3(signature = (*, api_version = None))]
    fn __array_namespace__<'py>(&self, py: Python<'py>, api_version: Option<&str>) -> PyResult<Bound<'py, PyModule>> {
        let namespace = py.import("nbxtensor.array_api")?;
        let served: String = namespace.getattr("__array_api_version__")?.extract()?;
        match api_version {
            Some(asked) if asked != served => Err(PyValueError::new_err(format!(
                "__array_namespace__: the Array API {asked} is not served; nbxtensor.array_api implements {served}"
            ))),
            _ => Ok(namespace),
        }
    }

    /// The tensor as a numpy array sharing its memory (through DLPack). numpy has no
    /// bfloat16 or float8: those come back as their bit patterns (uint16, uint8), the host's
    /// convention.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.inner.device() != Device::CPU {
            return Err(PyValueError::new_err(format!(
                "numpy(): the tensor lives on {}; copy it to the host first with .to('cpu')",
                self.inner.device()
            )));
        }
        let dtype = self.inner.dtype();
        let exported = if NUMPY_READS.contains(&dtype.dlpack().map_err(to_py)?.code) {
            self.inner.clone()
        } else {
            let bits = DType::ALL
                .into_iter()
                .find(|d| d.kind() == Kind::Uint && d.itemsize().ok() == dtype.itemsize().ok())
                .ok_or_else(|| {
                    PyValueError::new_err(format!("numpy(): no unsigned dtype of {dtype}'s width holds its bits"))
                })?;
            self.inner.view_dtype(bits).map_err(to_py)?
        };
        let array = py.import("numpy")?.call_method1("from_dlpack", (Tensor::wrap(exported),))?;
        // a broadcast view (a stride of 0 over more than one element) reads one element in
        // several places: read-only, as numpy's own broadcast views are
        let broadcast = self.inner.shape().iter().zip(self.inner.strides()).any(|(&n, &s)| s == 0 && n > 1);
        if broadcast && self.inner.numel() > 0 {
            array.getattr("flags")?.setattr("writeable", false)?;
        }
        Ok(array)
    }

    /// numpy's array protocol: `numpy()`, then numpy's own `dtype` and `copy` handling.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut array = self.numpy(py)?;
        if let Some(dtype) = dtype.filter(|d| !d.is_none()) {
            array = array.call_method1("astype", (dtype,))?;
        } else if copy == Some(true) {
            array = array.call_method0("copy")?;
        }
        Ok(array)
    }

    fn __add__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "add", slf.as_any(), other)
    }

    fn __radd__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "add", other, slf.as_any())
    }

    fn __sub__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "sub", slf.as_any(), other)
    }

    fn __rsub__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "sub", other, slf.as_any())
    }

    fn __mul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "mul", slf.as_any(), other)
    }

    fn __rmul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "mul", other, slf.as_any())
    }

    fn __truediv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "div", slf.as_any(), other)
    }

    fn __rtruediv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "div", other, slf.as_any())
    }

    fn __floordiv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "floor_divide", slf.as_any(), other)
    }

    fn __rfloordiv__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "floor_divide", other, slf.as_any())
    }

    fn __mod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "remainder", slf.as_any(), other)
    }

    fn __rmod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "remainder", other, slf.as_any())
    }

    fn __pow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(pyo3::exceptions::PyTypeError::new_err("pow() with a modulus is not supported for tensors"));
        }
        operator(slf.py(), "pow", slf.as_any(), other)
    }

    fn __rpow__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        modulo: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        if modulo.is_some_and(|m| !m.is_none()) {
            return Err(pyo3::exceptions::PyTypeError::new_err("pow() with a modulus is not supported for tensors"));
        }
        operator(slf.py(), "pow", other, slf.as_any())
    }

    fn __and__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_and", slf.as_any(), other)
    }

    fn __rand__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_and", other, slf.as_any())
    }

    fn __or__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_or", slf.as_any(), other)
    }

    fn __ror__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_or", other, slf.as_any())
    }

    fn __xor__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_xor", slf.as_any(), other)
    }

    fn __rxor__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_xor", other, slf.as_any())
    }

    fn __lshift__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_left_shift", slf.as_any(), other)
    }

    fn __rlshift__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_left_shift", other, slf.as_any())
    }

    fn __rshift__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_right_shift", slf.as_any(), other)
    }

    fn __rrshift__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        operator(slf.py(), "bitwise_right_shift", other, slf.as_any())
    }

    fn __divmod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        quotient_and_remainder(slf.py(), slf.as_any(), other)
    }

    fn __rdivmod__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        quotient_and_remainder(slf.py(), other, slf.as_any())
    }

    fn __matmul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        product(slf.py(), slf.as_any(), other)
    }

    fn __rmatmul__<'py>(slf: &Bound<'py, Self>, other: &Bound<'py, PyAny>) -> PyResult<Py<PyAny>> {
        product(slf.py(), other, slf.as_any())
    }

    fn __neg__(&self) -> PyResult<Tensor> {
        guard(|| self.inner.neg().map(Tensor::wrap).map_err(to_py))
    }

    fn __abs__(&self) -> PyResult<Tensor> {
        guard(|| self.inner.abs().map(Tensor::wrap).map_err(to_py))
    }

    fn __invert__(&self) -> PyResult<Tensor> {
        guard(|| self.inner.bitwise_invert().map(Tensor::wrap).map_err(to_py))
    }

    fn __pos__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __richcmp__<'py>(
        slf: &Bound<'py, Self>,
        other: &Bound<'py, PyAny>,
        op: pyo3::basic::CompareOp,
    ) -> PyResult<Py<PyAny>> {
        use pyo3::basic::CompareOp;
        let name = match op {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        };
        operator(slf.py(), name, slf.as_any(), other)
    }

    fn __len__(&self) -> PyResult<usize> {
        match self.inner.shape().first() {
            Some(&n) => Ok(n as usize),
            None => Err(pyo3::exceptions::PyTypeError::new_err("len() of a 0-d tensor")),
        }
    }

    /// The values as numpy prints an array (a summary past 1000 elements), then the dtype and,
    /// off the host, the device; a GPU tensor's values are copied to the host to be shown.
    fn __str__(&self, py: Python<'_>) -> String {
        let inner = self.inner.clone();
        py.detach(move || inner.to_string())
    }

    /// As `str`: the values (numpy's summary past 1000 elements), the dtype and the device.
    fn __repr__(&self, py: Python<'_>) -> String {
        self.__str__(py)
    }
}

/// A binary operator: the core's op of that name on the two operands (promoted there);
/// `NotImplemented` for an operand that is neither a tensor, a number nor an array, so that
/// Python tries the other operand's method.
fn operator(py: Python<'_>, op: &str, left: &Bound<'_, PyAny>, right: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (Some(a), Some(b)) = (PyOperand::of(left)?, PyOperand::of(right)?) else {
        return Ok(py.NotImplemented());
    };
    Ok(binary_of(py, op, &a, &b)?.into_pyobject(py)?.into_any().unbind())
}

/// `divmod(left, right)`: the floor quotient and the remainder (Python's signs), both by
/// the core's ops.
fn quotient_and_remainder(py: Python<'_>, left: &Bound<'_, PyAny>, right: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (Some(a), Some(b)) = (PyOperand::of(left)?, PyOperand::of(right)?) else {
        return Ok(py.NotImplemented());
    };
    let quotient = binary_of(py, "floor_divide", &a, &b)?;
    let remainder = binary_of(py, "remainder", &a, &b)?;
    Ok((quotient, remainder).into_pyobject(py)?.into_any().unbind())
}

/// `left @ right`: the core's matmul of the two (an array operand made a tensor first).
fn product(py: Python<'_>, left: &Bound<'_, PyAny>, right: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (Some(PyOperand::Tensor(a)), Some(PyOperand::Tensor(b))) = (PyOperand::of(left)?, PyOperand::of(right)?) else {
        return Ok(py.NotImplemented());
    };
    let on_gpu = !nbxtensor::backend::of(a.device()).host_addressable();
    let result = computed(py, on_gpu, || a.matmul(&b))?;
    Ok(Tensor::wrap(result).into_pyobject(py)?.into_any().unbind())
}

/// Registers the class and `from_dlpack`.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Tensor>()?;
    m.add_function(wrap_pyfunction!(dlpack::from_dlpack, m)?)?;
    Ok(())
}
