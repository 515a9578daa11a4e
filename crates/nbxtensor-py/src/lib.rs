//! `nbxtensor._core`: the Python extension over the `nbxtensor` crate.
//!
//! One Rust module per Python module of the spec; the Python files under
//! `python/nbxtensor/` re-export these functions under the spec's paths. No logic lives here
//! beyond adapting arguments: every rule is in the core crate.

mod backend;
mod cli;
mod dtype;
mod errors;
mod host;
mod io;
mod memory;
mod ops;
mod program;
mod random;
mod shape;
mod tensor;

use pyo3::prelude::*;

/// Adds `module` as the attribute `name` of `parent`, and to `sys.modules` as
/// `nbxtensor._core.<name>` so that it imports by that name too (as its stub,
/// `python/nbxtensor/_core/<name>.pyi`, and mypy's stubtest name it).
fn add_submodule<'py>(
    parent: &Bound<'py, PyModule>,
    name: &str,
    fill: impl FnOnce(&Bound<'py, PyModule>) -> PyResult<()>,
) -> PyResult<()> {
    let module = PyModule::new(parent.py(), name)?;
    fill(&module)?;
    parent.add_submodule(&module)?;
    let qualified = format!("nbxtensor._core.{name}");
    module.setattr("__name__", &qualified)?;
    parent.py().import("sys")?.getattr("modules")?.set_item(qualified, &module)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_submodule(m, "errors", errors::register)?;
    add_submodule(m, "itemsize", dtype::itemsize::register)?;
    add_submodule(m, "nbx_dtype", dtype::nbx_dtype::register)?;
    add_submodule(m, "convert", dtype::convert::register)?;
    add_submodule(m, "promotion", dtype::promotion::register)?;
    add_submodule(m, "policy", dtype::policy::register)?;
    add_submodule(m, "outputs", dtype::outputs::register)?;
    add_submodule(m, "shape", shape::register)?;
    add_submodule(m, "tensor", tensor::register)?;
    add_submodule(m, "pool", backend::cpu::pool::register)?;
    add_submodule(m, "random", random::register)?;
    add_submodule(m, "host_memory", backend::host_memory::register)?;
    add_submodule(m, "runtime", backend::runtime::register)?;
    add_submodule(m, "memory", memory::register)?;
    add_submodule(m, "safetensors", io::safetensors::register)?;
    add_submodule(m, "tiling_policy", ops::tiling_policy::register)?;
    add_submodule(m, "autotune_settings", ops::autotune_settings::register)?;
    add_submodule(m, "launch_observer", ops::launch_observer::register)?;
    add_submodule(m, "ops", ops::call::register)?;
    add_submodule(m, "program", program::register)?;
    add_submodule(m, "blas", backend::cpu::blas::register)?;
    add_submodule(m, "device_files", backend::device_files::register)?;
    add_submodule(m, "host", host::register)?;
    add_submodule(m, "cli", cli::register)?;
    Ok(())
}
