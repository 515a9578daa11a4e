//! Bindings of `nbxtensor.backend`: one file per Python module.

pub mod cpu;
pub mod device_files;
pub mod host_memory;
pub mod runtime;
