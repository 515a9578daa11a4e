//! The error of the shape layer.

/// Why a shape operation was refused. Each message names the shape, dim or value at fault;
/// shapes are written as Python tuples (`(3, -2)`, `(4,)`, `()`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A dim below zero (in a view's new shape, below -1).
    #[error("negative dim {dim} at axis {axis} of {shape}")]
    NegativeDim {
        /// The dim as given.
        dim: i64,
        /// Its axis.
        axis: usize,
        /// The whole shape, as a tuple.
        shape: String,
    },
    /// A product (element count, stride) that does not fit in an `i64`.
    #[error("{what} overflows a 64-bit signed integer")]
    Overflow {
        /// What was being computed, naming the shape.
        what: String,
    },
    /// A byte count past the address space ([`super::bytes::MAX_BYTES`]).
    #[error("{what} takes {bytes} bytes, more than an address space holds")]
    TooManyBytes {
        /// What was being sized, naming the shape.
        what: String,
        /// The exact byte count, in decimal.
        bytes: String,
    },
    /// Strides whose length differs from the shape's.
    #[error("strides {strides} have {strides_len} entries but shape {shape} has {shape_len}")]
    StridesLength {
        /// The strides, as a tuple.
        strides: String,
        /// Their count.
        strides_len: usize,
        /// The shape, as a tuple.
        shape: String,
        /// Its count of dims.
        shape_len: usize,
    },
    /// Shapes that do not broadcast together, or a layout that does not broadcast to a target.
    #[error("{0}")]
    NotBroadcastable(String),
    /// A new shape for a view that cannot hold the tensor's elements (a wrong count, two -1,
    /// an impossible or ambiguous inference).
    #[error("{0}")]
    BadNewShape(String),
    /// A negative size for slice bounds.
    #[error("negative size {0} for slice bounds")]
    NegativeSize(i64),
    /// A slice step of zero.
    #[error("slice step cannot be zero")]
    ZeroStep,
}

/// Writes dims as a Python tuple: `(3, -2)`, `(4,)`, `()`.
pub(crate) fn tuple_text(dims: &[i64]) -> String {
    match dims {
        [one] => format!("({one},)"),
        _ => format!("({})", dims.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::tuple_text;

    #[test]
    fn tuples_read_as_python_writes_them() {
        assert_eq!(tuple_text(&[]), "()");
        assert_eq!(tuple_text(&[4]), "(4,)");
        assert_eq!(tuple_text(&[3, -2]), "(3, -2)");
    }
}
