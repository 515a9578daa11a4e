//! The shape layer: element counts, strides, the view rule, broadcasting and slice bounds.
//!
//! Dims and strides are `i64`, strides counted in elements (never bytes). Every function
//! validates its input (no negative dim, one stride per dim, counts that fit an `i64`) and
//! returns a [`ShapeError`] naming the fault instead of panicking.
//!
//! ```
//! use nbxtensor::shape;
//! let strides = shape::contiguous_strides(&[2, 3, 4])?;
//! assert!(shape::is_contiguous(&[2, 3, 4], &strides)?);
//! assert_eq!(shape::view_strides(&[2, 3, 4], &strides, &[6, 4])?, Some(vec![4, 1]));
//! # Ok::<(), nbxtensor::shape::ShapeError>(())
//! ```

mod broadcast;
pub mod bytes;
mod check;
mod error;
mod merge;
mod slice;
mod strides;
mod view;

pub use broadcast::{broadcast_shapes, broadcast_strides};
pub use error::ShapeError;
pub use merge::{walk, Walk};
pub use slice::{slice_bounds, slice_steps};
pub use strides::{contiguous_strides, is_contiguous, numel};
pub use view::{infer_shape, view_strides};
