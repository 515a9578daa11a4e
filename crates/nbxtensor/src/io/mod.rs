//! The io layer: weights in and out of files. Today: safetensors, read by memory map
//! (zero-copy where the data is aligned) after every header field has been checked.
//!
//! ```
//! use nbxtensor::io::safetensors;
//! use nbxtensor::tensor::Tensor;
//! let path = std::env::temp_dir().join(format!("nbx_io_doc_{}.safetensors", std::process::id()));
//! let w = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3])?;
//! safetensors::save(&path, &[("w", &w)], None)?;
//! let loaded = safetensors::load(&path)?;
//! assert_eq!((loaded[0].name.as_str(), loaded[0].tensor.to_vec::<f32>()?), ("w", vec![1.0, 2.0, 3.0]));
//! # std::fs::remove_file(&path).unwrap();
//! # Ok::<(), nbxtensor::Error>(())
//! ```

mod error;
pub mod safetensors;

pub use error::IoError;

/// A result of the io layer.
pub type Result<T, E = IoError> = std::result::Result<T, E>;
