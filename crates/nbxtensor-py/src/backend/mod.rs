//! Bindings of `nbxtensor.backend`.

pub mod cpu;
