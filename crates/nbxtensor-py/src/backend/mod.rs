//! Bindings of `nbxtensor.backend`.

pub mod cpu;
pub mod host_memory;
