//! Bindings of `nbxtensor.io`.

pub mod safetensors;
