//! `nbxtensor.backend.runtime`: the GPU backend in force, its devices and its memory. The GPU
//! backends are CUDA and, through wgpu, Metal and Vulkan, preferred in that order where
//! several are present.

use crate::errors::to_py;
use nbxtensor::backend::wgpu::{self as portable, Api};
use nbxtensor::backend::{self, cuda::memory as driver};
use nbxtensor::memory::{Device, DeviceKind};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// The GPU backends, in the order of preference.
const GPU_BACKENDS: [&str; 3] = ["cuda", "metal", "vulkan"];

/// Why `backend` (`"cuda"`, `"metal"`, `"vulkan"`) is not usable here (`None` when it is);
/// ValueError for another name.
fn reason(backend: &str) -> PyResult<Option<String>> {
    Ok(match backend {
        "cuda" => driver::driver().err(),
        "metal" => portable::unavailable_reason(Api::Metal),
        "vulkan" => portable::unavailable_reason(Api::Vulkan),
        other => {
            return Err(PyValueError::new_err(format!(
                "unknown GPU backend '{other}': the GPU backends are {}",
                GPU_BACKENDS.join(", ")
            )))
        }
    })
}

/// The GPU backend in force: `"cuda"` when a CUDA device is usable, else `"metal"` or
/// `"vulkan"` when wgpu finds an adapter through that API, else `None`.
#[pyfunction]
fn gpu_backend() -> PyResult<Option<&'static str>> {
    for backend in GPU_BACKENDS {
        if reason(backend)?.is_none() {
            return Ok(Some(backend));
        }
    }
    Ok(None)
}

/// Why `backend` is not usable (`None` when it is); without a name, why no GPU backend is
/// (`None` when one is), each backend's reason in turn.
#[pyfunction]
#[pyo3(signature = (backend = None))]
fn unavailable_reason(backend: Option<&str>) -> PyResult<Option<String>> {
    if let Some(backend) = backend {
        return reason(backend);
    }
    let mut reasons = Vec::new();
    for backend in GPU_BACKENDS {
        match reason(backend)? {
            None => return Ok(None),
            Some(why) => reasons.push(format!("{backend}: {why}")),
        }
    }
    Ok(Some(reasons.join("; ")))
}

/// The runtime of the GPU backend in force: the CUDA driver's version and where its library
/// was found, or wgpu's API and first adapter; RuntimeError naming why when there is none.
#[pyfunction]
fn gpu_runtime() -> PyResult<String> {
    if let Ok(d) = driver::driver() {
        let from = d.library.as_ref().map(|p| p.display().to_string()).unwrap_or_else(|| "the loader's path".into());
        return Ok(format!("CUDA driver {}.{} (libcuda from {from})", d.version / 1000, d.version % 1000 / 10));
    }
    for api in [Api::Metal, Api::Vulkan] {
        if let Some(first) = portable::adapter_facts(api).first() {
            return Ok(format!("wgpu through {}: {} ({})", api.kind().as_str(), first.name, first.driver.trim()));
        }
    }
    Err(PyRuntimeError::new_err(unavailable_reason(None)?.unwrap_or_default()))
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

/// Every GPU device, each a dict of its facts: `kind` (`"cuda"`, `"metal"`, `"vulkan"`),
/// `index`, `name`, `total_memory` (None where the API does not say), and the kind's own: for
/// CUDA arch, multiprocessors, l2_bytes, max_shared_per_block; for wgpu driver, software (a
/// rasterizer on the host, such as lavapipe), subgroup_sizes, shader_f16, shader_f64,
/// max_binding, denorm_preserve (float32 subnormals kept), spirv_built_here (the kernels go to
/// the driver as SPIR-V built by the library, with its float controls).
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    let mut out = Vec::new();
    if let Ok(d) = driver::driver() {
        for info in &d.devices {
            let dict = PyDict::new(py);
            dict.set_item("kind", "cuda")?;
            dict.set_item("index", info.index)?;
            dict.set_item("name", &info.name)?;
            dict.set_item("arch", info.arch())?;
            dict.set_item("multiprocessors", info.multiprocessors)?;
            dict.set_item("total_memory", info.total_memory)?;
            dict.set_item("l2_bytes", info.l2_bytes)?;
            dict.set_item("max_shared_per_block", info.max_shared_per_block)?;
            out.push(dict);
        }
    }
    for api in [Api::Metal, Api::Vulkan] {
        for (index, facts) in portable::adapter_facts(api).into_iter().enumerate() {
            let dict = PyDict::new(py);
            dict.set_item("kind", api.kind().as_str())?;
            dict.set_item("index", index)?;
            dict.set_item("name", &facts.name)?;
            dict.set_item("total_memory", facts.memory)?;
            dict.set_item("driver", facts.driver.trim())?;
            dict.set_item("software", facts.software)?;
            dict.set_item("subgroup_sizes", facts.subgroup_sizes)?;
            dict.set_item("shader_f16", facts.shader_f16)?;
            dict.set_item("shader_f64", facts.shader_f64)?;
            dict.set_item("max_binding", facts.max_binding)?;
            dict.set_item("denorm_preserve", facts.float_controls.denorm_preserve)?;
            dict.set_item("spirv_built_here", facts.passthrough)?;
            out.push(dict);
        }
    }
    Ok(out)
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
    if device.kind == DeviceKind::Cpu {
        return Err(PyValueError::new_err(format!(
            "{device} is not a GPU: give 'cuda', 'metal' or 'vulkan' (optionally ':N')"
        )));
    }
    Ok(device)
}

/// `(free, total)` bytes of a GPU's memory: on CUDA as the driver reports them now; through
/// wgpu (which reports no free memory) the device's memory less this library's blocks on it.
#[pyfunction]
#[pyo3(signature = (device = "cuda"))]
fn device_memory(device: &str) -> PyResult<(u64, u64)> {
    let device = gpu(device)?;
    if device.kind == DeviceKind::Cuda {
        return driver::context(device.index).and_then(|c| c.memory_info()).map_err(PyRuntimeError::new_err);
    }
    let api = Api::of(device.kind).ok_or_else(|| PyValueError::new_err(format!("{device} is not a GPU")))?;
    let gpu = portable::gpu(api, device.index).map_err(PyRuntimeError::new_err)?;
    let total = gpu.memory().map_err(to_py)?;
    Ok((total.saturating_sub(backend::of(device).in_use()), total))
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
    py.detach(|| backend::of(device).synchronize()).map_err(|e| PyRuntimeError::new_err(e.to_string()))
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
