//! # nbxtensor
//!
//! An inference-first tensor library. The graph and the shapes of an inference are known
//! before the first run, so memory is planned, every kernel declares its cost, and a repeated
//! run is captured once, verified byte-equal and replayed.
//!
//! The crate is built in layers, each depending only on those above it:
//!
//! | layer | module | holds |
//! | --- | --- | --- |
//! | facts | [`facts`] | the tables compiled into the crate (`data/*.yml`), parsed once |
//! | settings | [`settings`] | what the library measures and an application may set: the CPU pool … |
//! | dtype | [`dtype`] | [`DType`], conversions, promotion, precision policies, output rules |
//! | shape | [`shape`] | element counts, strides, the view rule, broadcasting, slice bounds |
//! | random | [`random`] | counter-based streams (Philox4x32-10): the same bits on every thread count |
//! | memory | [`memory`] | devices, one allocator per device, the arena, the memory limit enforced |
//! | tensor | [`tensor`] | storage + layout + dtype; views without copies; DLPack |
//! | kernel | [`kernel`] | the `Kernel` trait and its declared [`kernel::Cost`] |
//! | backend | [`backend`] | the `Backend` trait, capability tables, the CPU kernels |
//! | ops | [`ops`] | eager op calls dispatched to a backend |
//! | program | [`program`] | trace → plan → execute → capture → verified replay; pricing |
//!
//! Later layers (kernels, backends, programs, io) follow the
//! plan in the repository's `DESIGN.md`.
//!
//! Every fallible call returns the [`Result`] of its layer; the crate-wide [`Error`] gathers
//! them. Nothing here panics on bad input.
//!
//! ```
//! use nbxtensor::{DType, shape};
//!
//! assert_eq!(DType::parse("torch.half")?, DType::Float16);
//! assert_eq!(DType::Bfloat16.itemsize()?, 2);
//! assert_eq!(shape::contiguous_strides(&[2, 3, 4])?, vec![12, 4, 1]);
//! # Ok::<(), nbxtensor::Error>(())
//! ```

pub mod backend;
pub mod dtype;
mod error;
pub mod facts;
pub mod io;
pub mod kernel;
pub mod memory;
pub mod ops;
pub mod program;
pub mod random;
pub mod settings;
pub mod shape;
pub mod tensor;

pub use dtype::DType;
pub use error::{Error, Result};
pub use tensor::Tensor;

/// The Rust examples of the repository's README, compiled and run as doc tests.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
