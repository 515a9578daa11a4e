//! # nbxtensor
//!
//! An inference-first tensor library. The graph and the shapes of an inference are known
//! before the first run, so memory is planned, every kernel declares its cost, and a repeated
//! run is captured once, verified byte-equal and replayed.
//!
//! The crate is built in layers, each depending only on those above it (the folders and how
//! an op flows through them: the repository's `docs/ARCHITECTURE.md`):
//!
//! | layer | module | holds |
//! | --- | --- | --- |
//! | facts | [`facts`] | the tables compiled into the crate (`data/*.yml`), parsed once |
//! | settings | [`settings`] | what the library measures and an application may set |
//! | dtype | [`dtype`] | [`DType`], conversions, promotion, precision policies, output rules |
//! | shape | [`shape`] | element counts, strides, the view rule, broadcasting, slice bounds |
//! | random | [`random`] | counter-based streams (Philox4x32-10): the same bits on every thread count |
//! | memory | [`memory`] | devices, the host allocator, the arena, the planner, the memory limit |
//! | tensor | [`tensor`] | [`Tensor`]: storage + layout + dtype; views without copies; DLPack |
//! | kernel | [`kernel`] | the `Kernel` trait and its declared [`kernel::Cost`] |
//! | ops | [`ops`] | op specs once above every backend ([`ops::spec`]), the typed API, policies, eager calls |
//! | backend | [`backend`] | the one device trait, launch tables, the CPU and CUDA backends |
//! | program | [`program`] | trace → plan → execute → capture → verified replay; pricing |
//! | io | [`io`] | safetensors by memory map |
//!
//! Every fallible call returns the [`Result`] of its layer; the crate-wide [`Error`] gathers
//! them. Nothing here panics on bad input.
//!
//! ```
//! use nbxtensor::{DType, Tensor};
//!
//! let a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3])?;
//! let b = Tensor::from_vec(vec![1i32, 0, 0, 1, 1, 1], &[3, 2])?;
//! let product = a.matmul(&b.cast(DType::Float32)?)?;          // [2, 2]
//! let shifted = product.add(&Tensor::from_vec(vec![1i32, -1], &[2])?)?;   // int32 + float32 → float32
//! assert_eq!(shifted.to_vec::<f32>()?, vec![5.0, 4.0, 11.0, 10.0]);
//! let weights = shifted.softmax(-1)?;
//! let rows = weights.sum(&[-1], false)?;
//! assert!(rows.to_vec::<f32>()?.iter().all(|s| (s - 1.0).abs() < 1e-6));
//! let normed = shifted.rms_norm(&Tensor::from_vec(vec![1.0f32; 2], &[2])?, 1e-6)?;
//! assert_eq!(normed.shape(), &[2, 2]);
//! println!("{weights}");                                       // numpy's layout of the values
//! # Ok::<(), nbxtensor::Error>(())
//! ```

pub mod backend;
pub mod dtype;
mod error;
pub mod facts;
pub mod io;
pub mod kernel;
pub mod linkage;
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
