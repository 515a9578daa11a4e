//! Bindings of `nbxtensor.backend.cpu`: the pool and the BLAS it holds.

pub mod blas;
pub mod pool;
