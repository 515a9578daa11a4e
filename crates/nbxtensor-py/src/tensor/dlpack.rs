//! DLPack at the Python edge: `Tensor.__dlpack__`, `Tensor.__dlpack_device__` and
//! `from_dlpack(x)` for any producer.
//!
//! Capsules follow the Python array API's protocol: a versioned capsule is named
//! `"dltensor_versioned"` (a legacy one `"dltensor"`); a consumer renames it
//! `"used_dltensor_versioned"` (`"used_dltensor"`) when it takes the tensor, and a capsule
//! destroyed unconsumed calls the managed tensor's deleter itself.

use super::Tensor;
use crate::errors::{guard, to_py};
use nbxtensor::memory::Device;
use nbxtensor::tensor::dlpack::{self, DLManagedTensor, DLManagedTensorVersioned, FLAG_IS_COPIED};
use nbxtensor::tensor::Tensor as CoreTensor;
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};

const VERSIONED: &CStr = c"dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const USED_LEGACY: &CStr = c"used_dltensor";

/// Deletes an unconsumed versioned capsule's tensor (a consumed one was renamed).
unsafe extern "C" fn drop_versioned_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed; the name check makes sure
    // the tensor was not handed to a consumer (who then owns the deleter call).
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
    }
}

/// Deletes an unconsumed legacy capsule's tensor.
unsafe extern "C" fn drop_legacy_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: as above.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
    }
}

/// A capsule owning `pointer`, with the destructor for its name.
fn capsule(
    py: Python<'_>,
    pointer: *mut c_void,
    name: &'static CStr,
    destructor: unsafe extern "C" fn(*mut ffi::PyObject),
) -> PyResult<Py<PyAny>> {
    // SAFETY: the name is 'static; on failure the destructor was not installed, so the
    // tensor is deleted here.
    unsafe {
        let capsule = ffi::PyCapsule_New(pointer, name.as_ptr(), Some(destructor));
        if capsule.is_null() {
            let error = PyErr::fetch(py);
            let raw = ffi::PyCapsule_New(pointer, name.as_ptr(), None);
            if !raw.is_null() {
                destructor(raw);
                ffi::Py_DecRef(raw);
            }
            return Err(error);
        }
        Ok(Bound::from_owned_ptr(py, capsule).unbind())
    }
}

/// Reads `max_version` as (major, minor); None means a consumer that predates versions.
fn requested_version(max_version: Option<&Bound<'_, PyAny>>) -> PyResult<Option<(u32, u32)>> {
    match max_version {
        None => Ok(None),
        Some(v) if v.is_none() => Ok(None),
        Some(v) => v
            .extract::<(u32, u32)>()
            .map(Some)
            .map_err(|_| PyValueError::new_err("__dlpack__: max_version must be a (major, minor) tuple of ints")),
    }
}

/// `Tensor.__dlpack__`: the tensor as a capsule, zero-copy unless `copy=True`.
pub fn export(
    py: Python<'_>,
    tensor: &CoreTensor,
    stream: Option<&Bound<'_, PyAny>>,
    max_version: Option<&Bound<'_, PyAny>>,
    dl_device: Option<&Bound<'_, PyAny>>,
    copy: Option<bool>,
) -> PyResult<Py<PyAny>> {
    let stream = match stream.filter(|s| !s.is_none()) {
        None => None,
        Some(s) => Some(
            s.extract::<i64>().map_err(|_| PyValueError::new_err("__dlpack__: stream must be None or an integer"))?,
        ),
    };
    // the stream rule: the consumer's stream must see every write queued so far
    nbxtensor::backend::of(tensor.device()).dlpack_export_stream(stream).map_err(PyValueError::new_err)?;
    if let Some(device) = dl_device.filter(|d| !d.is_none()) {
        let (kind, index) = device
            .extract::<(i32, i32)>()
            .map_err(|_| PyValueError::new_err("__dlpack__: dl_device must be a (device_type, device_id) tuple"))?;
        if (kind, index) != device_of(tensor) {
            return Err(PyBufferError::new_err(format!(
                "__dlpack__: cannot export to device ({kind}, {index}): the tensor lives on {}",
                tensor.device()
            )));
        }
    }
    let (source, flags) = match copy {
        Some(true) => (deep_copy(tensor).map_err(to_py)?, FLAG_IS_COPIED),
        _ => (tensor.clone(), 0),
    };
    let refused = |e: nbxtensor::tensor::TensorError| PyBufferError::new_err(format!("__dlpack__: {e}"));
    match requested_version(max_version)? {
        Some((major, _)) if major >= 1 => {
            let managed = dlpack::export_versioned(&source, flags).map_err(refused)?;
            capsule(py, managed.cast(), VERSIONED, drop_versioned_capsule)
        }
        _ => {
            let managed = dlpack::export_legacy(&source).map_err(refused)?;
            capsule(py, managed.cast(), LEGACY, drop_legacy_capsule)
        }
    }
}

/// A contiguous copy in new storage on the tensor's device.
fn deep_copy(tensor: &CoreTensor) -> nbxtensor::tensor::Result<CoreTensor> {
    tensor.fresh_copy()
}

/// `Tensor.__dlpack_device__`: `(device_type, device_id)`.
pub fn device_of(tensor: &CoreTensor) -> (i32, i32) {
    nbxtensor::backend::of(tensor.device()).dlpack_device()
}

/// Takes the tensor out of a capsule: checks its name, renames it used, imports it.
fn consume(capsule: &Bound<'_, PyAny>) -> PyResult<CoreTensor> {
    let raw = capsule.as_ptr();
    // SAFETY: the capsule API on a live object; names are compared by PyCapsule_IsValid.
    unsafe {
        if ffi::PyCapsule_CheckExact(raw) == 0 {
            return Err(PyValueError::new_err(format!(
                "from_dlpack: __dlpack__ returned a {}, not a capsule",
                capsule.get_type().name()?
            )));
        }
        if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()).cast::<DLManagedTensorVersioned>();
            if ffi::PyCapsule_SetName(raw, USED_VERSIONED.as_ptr()) != 0 {
                return Err(PyErr::fetch(capsule.py()));
            }
            return guard(|| {
                dlpack::import_versioned(managed).map_err(|e| PyBufferError::new_err(format!("from_dlpack: {e}")))
            });
        }
        if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            let managed = ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()).cast::<DLManagedTensor>();
            if ffi::PyCapsule_SetName(raw, USED_LEGACY.as_ptr()) != 0 {
                return Err(PyErr::fetch(capsule.py()));
            }
            return guard(|| {
                dlpack::import_legacy(managed).map_err(|e| PyBufferError::new_err(format!("from_dlpack: {e}")))
            });
        }
        ffi::PyErr_Clear();
    }
    Err(PyValueError::new_err(
        "from_dlpack: the capsule is not an unconsumed DLPack tensor (its name is not 'dltensor' or 'dltensor_versioned'; a consumed capsule is 'used_…')",
    ))
}

/// `nbxtensor.from_dlpack(x, *, device=None, copy=None)` (the Array API's): a tensor sharing
/// the memory of any DLPack producer, or a copy with `copy=True`; on another `device` than the
/// producer's a copy there (refused with `copy=False`). A bare capsule is accepted too; a
/// legacy (unversioned) one is imported read-only, as numpy does.
#[pyfunction]
#[pyo3(signature = (x, *, device = None, copy = None))]
pub fn from_dlpack(py: Python<'_>, x: &Bound<'_, PyAny>, device: Option<&str>, copy: Option<bool>) -> PyResult<Tensor> {
    let target = device.map(Device::parse).transpose().map_err(to_py)?;
    let tensor = if let Ok(tensor) = x.cast::<Tensor>() {
        tensor.get().inner.clone()
    } else if x.hasattr("__dlpack__")? {
        let kwargs = pyo3::types::PyDict::new(py);
        if x.hasattr("__dlpack_device__")? {
            let (kind, index): (i32, i32) = x.call_method0("__dlpack_device__")?.extract()?;
            let device = nbxtensor::backend::device_of_dlpack(kind, index)
                .map_err(|e| PyBufferError::new_err(format!("from_dlpack: {e}")))?;
            // the producer orders its writes before our stream (DLPack's stream rule)
            let backend = nbxtensor::backend::of(device);
            if kind == backend.dlpack_device().0 {
                if let Some(stream) = backend.dlpack_import_stream().map_err(PyBufferError::new_err)? {
                    kwargs.set_item("stream", stream)?;
                }
            }
        }
        kwargs.set_item("max_version", dlpack::VERSION.major_minor())?;
        let capsule = match x.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(capsule) => capsule,
            // a producer that predates versioned capsules takes no max_version
            Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
                kwargs.del_item("max_version")?;
                x.call_method("__dlpack__", (), Some(&kwargs))?
            }
            Err(e) => return Err(e),
        };
        consume(&capsule)?
    } else {
        consume(x)?
    };
    match (target, copy) {
        (Some(target), Some(false)) if target != tensor.device() => Err(PyBufferError::new_err(format!(
            "from_dlpack: the producer's memory is on {}, not {target}, and copy=False forbids the copy there",
            tensor.device()
        ))),
        (Some(target), _) if target != tensor.device() => {
            py.detach(move || guard(|| tensor.to(target).map(Tensor::wrap).map_err(to_py)))
        }
        (_, Some(true)) => deep_copy(&tensor).map(Tensor::wrap).map_err(to_py),
        _ => Ok(Tensor::wrap(tensor)),
    }
}
