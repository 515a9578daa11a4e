//! Bindings of `nbxtensor.ops`: the settings kernels read.

pub mod autotune_settings;
pub mod call;
pub mod launch_observer;
pub mod tiling_policy;
