//! Bindings of the dtype layer: one file per Python module of `nbxtensor.dtype`.

pub mod convert;
pub mod itemsize;
pub mod nbx_dtype;
pub mod outputs;
pub mod policy;
pub mod promotion;
