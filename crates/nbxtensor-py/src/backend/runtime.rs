//! `nbxtensor.backend.runtime`: the GPU backend in force, its devices and its memory.

use crate::errors::to_py;
use nbxtensor::backend::{self, cuda::memory as driver};
use nbxtensor::memory::{Device, DeviceKind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `"cuda"` when a CUDA device is usable, else `None`.
#[pyfunction]
fn gpu_backend() -> Option<&'static str> {
    driver::is_available().then_some("cuda")
}

/// Why no GPU backend is usable (`None` when one is).
#[pyfunction]
fn unavailable_reason() -> Option<String> {
    driver::driver().err()
}

/// The GPU runtime: the CUDA driver's version and where its library was found; RuntimeError
/// naming why when there is none.
#[pyfunction]
fn gpu_runtime() -> PyResult<String> {
    let d = driver::driver().map_err(PyRuntimeError::new_err)?;
    let from = d.library.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the loader's path".into());
    Ok(format!("CUDA driver {}.{} (libcuda from {from})", d.version / 1000, d.version % 1000 / 10))
}

/// The CUDA architectures whose machine code this build carries (`sm_90`, ...): a device of
/// one of them compiles no kernel at run time; empty for a build made without `NBX_SHIP_CUDA`.
#[pyfunction]
fn shipped_kernels() -> Vec<&'static str> {
    backend::cuda::SHIPPED_ARCHITECTURES.to_vec()
}

/// Sets whether a CUDA kernel may start while the one before it ends, on compute capability
/// 9.0 and later (programmatic dependent launch; on by default): graphs captured later follow.
#[pyfunction]
fn set_overlapped_launches(on: bool) {
    backend::cuda::set_overlapped_launches(on);
}

/// Whether CUDA kernels launch overlapped where the device allows it.
#[pyfunction]
fn overlapped_launches() -> bool {
    backend::cuda::overlapped_launches()
}

/// The GPUs the driver sees, each a dict of its facts (index, name, arch, multiprocessors,
/// total_memory, l2_bytes, max_shared_per_block); empty without CUDA.
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let Ok(d) = driver::driver() else { return Ok(Vec::new()) };
    d.devices
        .iter()
        .map(|info| {
            let dict = PyDict::new(py);
            dict.set_item("index", info.index)?;
            dict.set_item("name", &info.name)?;
            dict.set_item("arch", info.arch())?;
            dict.set_item("multiprocessors", info.multiprocessors)?;
            dict.set_item("total_memory", info.total_memory)?;
            dict.set_item("l2_bytes", info.l2_bytes)?;
            dict.set_item("max_shared_per_block", info.max_shared_per_block)?;
            Ok(dict)
        })
        .collect()
}

/// The launch table of a backend (`"cpu"`, `"cuda"`): one line per op with its dtypes.
#[pyfunction]
#[pyo3(signature = (backend = "cpu"))]
fn backend_table(backend: &str) -> PyResult<String> {
    let tables = backend::tables();
    match tables.iter().find(|t| t.backend() == backend) {
        Some(table) => Ok(table.to_string()),
        None => {
            let names: Vec<&str> = tables.iter().map(|t| t.backend()).collect();
            Err(PyValueError::new_err(format!(
                "backend_table: unknown backend '{backend}': the backends are {}",
                names.join(", ")
            )))
        }
    }
}

fn gpu(device: &str) -> PyResult<Device> {
    let device = Device::parse(device).map_err(to_py)?;
    if device.kind != DeviceKind::Cuda {
        return Err(PyValueError::new_err(format!("{device} is not a GPU: give 'cuda' or 'cuda:N'")));
    }
    Ok(device)
}

/// `(free, total)` bytes of a GPU's memory, as the driver reports them now.
#[pyfunction]
#[pyo3(signature = (device = "cuda"))]
fn device_memory(device: &str) -> PyResult<(u64, u64)> {
    let device = gpu(device)?;
    driver::context(device.index).and_then(|c| c.memory_info()).map_err(PyRuntimeError::new_err)
}

/// Binds the driver to the device a tensor lives on, for this thread (a no-op for the host).
#[pyfunction]
fn set_device(tensor: &Bound<'_, crate::tensor::Tensor>) -> PyResult<()> {
    let device = tensor.get().inner.device();
    if device.kind == DeviceKind::Cuda {
        driver::context(device.index).map_err(PyRuntimeError::new_err)?;
    }
    Ok(())
}

/// Waits until everything queued on a GPU (kernels, copies, graph replays) has run.
#[pyfunction]
#[pyo3(signature = (device = "cuda"))]
fn synchronize(py: Python<'_>, device: &str) -> PyResult<()> {
    let device = gpu(device)?;
    py.detach(|| driver::context(device.index).and_then(|c| c.synchronize())).map_err(PyRuntimeError::new_err)
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(gpu_backend, m)?)?;
    m.add_function(wrap_pyfunction!(unavailable_reason, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_runtime, m)?)?;
    m.add_function(wrap_pyfunction!(shipped_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(set_overlapped_launches, m)?)?;
    m.add_function(wrap_pyfunction!(overlapped_launches, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_function(wrap_pyfunction!(backend_table, m)?)?;
    m.add_function(wrap_pyfunction!(device_memory, m)?)?;
    m.add_function(wrap_pyfunction!(set_device, m)?)?;
    m.add_function(wrap_pyfunction!(synchronize, m)?)?;
    Ok(())
}
