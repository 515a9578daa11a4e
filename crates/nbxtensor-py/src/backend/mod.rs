//! Bindings of `nbxtensor.backend`: one file per Python module.

pub mod device_files;
