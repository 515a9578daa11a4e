//! The dtype layer: [`DType`], the readers of the dtype table, host conversions, type
//! promotion, precision policies and output-dtype rules. Pure functions, no state.
//!
//! Every fact of a dtype (width, kind, codes, spellings) is read from `data/dtypes.yml`; the
//! enum itself is generated from that table, so a dtype is added by appending an entry.

pub mod convert;
mod error;
pub mod outputs;
pub mod policy;
pub mod promotion;
mod table;

pub use error::DTypeError;
pub use table::ALIAS_HINT;

include!(concat!(env!("OUT_DIR"), "/dtype_enum.rs"));

/// A result of the dtype layer.
pub type Result<T, E = DTypeError> = std::result::Result<T, E>;
