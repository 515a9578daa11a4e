//! The error of the dtype layer.

/// Why a dtype operation was refused. Each message names the dtype or value at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DTypeError {
    /// A name that is neither a table name nor (where aliases are read) an alias.
    #[error("unknown dtype '{name}'{hint}")]
    Unknown {
        /// The name as given.
        name: String,
        /// Extra help (the table name an alias stands for), or empty.
        hint: String,
    },
    /// A code of another format (safetensors, launch key, DLPack) that no entry carries.
    #[error("unknown {format} code '{code}': no dtype of the table has it")]
    UnknownCode {
        /// Which format's codes were searched.
        format: &'static str,
        /// The code as given.
        code: String,
    },
    /// A fact the table does not hold for this dtype (a zero-fallback refusal).
    #[error("dtype '{dtype}' has no {fact} in the dtype table")]
    MissingFact {
        /// The dtype's table name.
        dtype: &'static str,
        /// The fact that was asked for.
        fact: &'static str,
    },
    /// A per-element width asked of a packed representation.
    #[error(
        "dtype '{dtype}' is packed: it has no per-element width; ask representation_bytes for the bytes of n elements"
    )]
    Packed {
        /// The dtype's table name.
        dtype: &'static str,
    },
    /// Two dtypes (or a dtype and a Python scalar) with no common dtype.
    #[error("{0}")]
    Refused(String),
    /// An argument out of its domain (a negative count, a malformed policy …).
    #[error("{0}")]
    Invalid(String),
}
