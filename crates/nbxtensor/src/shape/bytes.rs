//! Checked byte arithmetic: the one place where an element count, a layout's reach or a
//! byte count is computed at the library's edges. Every product and sum is checked; a count
//! that does not fit is an error naming the shape, never a wrapped value.
//!
//! A byte count must also fit [`MAX_BYTES`] (`isize::MAX`): no allocation, slice or memory
//! span of Rust or C can be larger, and no address space holds one.

use super::check::{checked_layout, checked_numel};
use super::error::tuple_text;
use super::ShapeError;

/// The most bytes one buffer, copy or view may span (`isize::MAX`).
pub const MAX_BYTES: u64 = isize::MAX as u64;

/// `numel * itemsize` as a byte count, refused past [`MAX_BYTES`]; `what` names the
/// tensor for the message.
///
/// ```
/// use nbxtensor::shape::bytes::byte_len;
/// assert_eq!(byte_len(6, 4, || "x".into())?, 24);
/// let err = byte_len(1 << 60, 16, || "a complex128 tensor of shape (1152921504606846976,)".into()).unwrap_err();
/// assert!(err.to_string().contains("18446744073709551616 bytes"), "{err}");
/// assert!(byte_len(-1, 4, || "x".into()).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn byte_len(numel: i64, itemsize: usize, what: impl FnOnce() -> String) -> Result<usize, ShapeError> {
    let bytes = i128::from(numel) * itemsize as i128;
    if numel < 0 || bytes > i128::from(MAX_BYTES) {
        return Err(ShapeError::TooManyBytes { what: what(), bytes: bytes.to_string() });
    }
    Ok(bytes as usize)
}

/// The bytes of a contiguous tensor of `shape` with elements of `itemsize` bytes (the shape
/// checked: no negative dim, a count that fits).
///
/// ```
/// use nbxtensor::shape::bytes::shape_bytes;
/// assert_eq!(shape_bytes(&[2, 3], 2)?, 12);
/// assert!(shape_bytes(&[1 << 62], 4).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn shape_bytes(shape: &[i64], itemsize: usize) -> Result<usize, ShapeError> {
    let numel = checked_numel(shape)?;
    byte_len(numel, itemsize, || format!("a tensor of shape {} with elements of {itemsize} bytes", tuple_text(shape)))
}

/// The elements a strided layout reaches, as indices into its storage (the offset included):
/// the lowest and the highest, both inclusive. `None` for a layout with no element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reach {
    /// The lowest element index reached (below 0 when the layout starts before its storage).
    pub low: i128,
    /// The highest element index reached.
    pub high: i128,
}

impl Reach {
    /// The bytes from the lowest element's first byte to the end of the highest one.
    pub fn span_bytes(&self, itemsize: usize) -> i128 {
        (self.high - self.low + 1) * itemsize as i128
    }

    /// Whether every element reached lies in a storage of `storage_bytes` bytes.
    pub fn fits(&self, itemsize: usize, storage_bytes: usize) -> bool {
        self.low >= 0 && (self.high + 1) * itemsize as i128 <= storage_bytes as i128
    }
}

/// The lowest and highest element a layout `(shape, strides, offset)` reaches (the layout
/// checked: one stride per dim, no negative dim, an element count that fits an `i64`).
/// Computed in 128 bits: each term is `(size - 1) * stride`, and the sizes above 1 add up to
/// at most their product (under 2^63), so the sums stay under 2^126.
///
/// ```
/// use nbxtensor::shape::bytes::{reach, Reach};
/// assert_eq!(reach(&[2, 3], &[3, 1], 0)?, Some(Reach { low: 0, high: 5 }));
/// assert_eq!(reach(&[4], &[-2], 6)?, Some(Reach { low: 0, high: 6 }));
/// assert_eq!(reach(&[0, 5], &[5, 1], 0)?, None);
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn reach(shape: &[i64], strides: &[i64], offset: i64) -> Result<Option<Reach>, ShapeError> {
    if checked_layout(shape, strides)? == 0 {
        return Ok(None);
    }
    let (mut low, mut high) = (i128::from(offset), i128::from(offset));
    for (&size, &stride) in shape.iter().zip(strides) {
        let extent = i128::from(size - 1) * i128::from(stride);
        if extent < 0 {
            low += extent
        } else {
            high += extent
        }
    }
    Ok(Some(Reach { low, high }))
}

/// `a * b` for sizes, or an error naming `what`.
///
/// ```
/// use nbxtensor::shape::bytes::mul;
/// assert_eq!(mul(3, 4, || "x".into())?, 12);
/// assert!(mul(usize::MAX, 2, || "x".into()).is_err());
/// # Ok::<(), nbxtensor::shape::ShapeError>(())
/// ```
pub fn mul(a: usize, b: usize, what: impl FnOnce() -> String) -> Result<usize, ShapeError> {
    match a.checked_mul(b) {
        Some(n) if n as u64 <= MAX_BYTES => Ok(n),
        _ => Err(ShapeError::TooManyBytes { what: what(), bytes: (a as u128 * b as u128).to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_past_the_address_space_are_refused_by_name() {
        let err = shape_bytes(&[i64::MAX], 2).unwrap_err().to_string();
        assert!(err.contains("(9223372036854775807,)") && err.contains("18446744073709551614 bytes"), "{err}");
        assert_eq!(shape_bytes(&[(MAX_BYTES / 8) as i64], 8).unwrap() as u64, MAX_BYTES / 8 * 8);
        assert!(shape_bytes(&[(MAX_BYTES / 8) as i64 + 1], 8).is_err());
        assert_eq!(shape_bytes(&[], 16).unwrap(), 16);
        assert_eq!(shape_bytes(&[0, i64::MAX], 16).unwrap(), 0);
    }

    #[test]
    fn reach_takes_negative_and_extreme_strides_without_overflow() {
        let r = reach(&[i64::MAX, i64::MAX], &[i64::MIN, i64::MAX], i64::MAX);
        // the element count overflows before any stride is looked at
        assert!(r.is_err());
        let r = reach(&[2, 2], &[i64::MIN, i64::MAX], 0).unwrap().unwrap();
        assert_eq!((r.low, r.high), (i128::from(i64::MIN), i128::from(i64::MAX)));
        assert!(!r.fits(1, usize::MAX));
        // many dims of extreme strides: the sizes above 1 multiply to under 2^63
        let shape = [2i64; 62];
        let r = reach(&shape, &[i64::MAX; 62], i64::MAX).unwrap().unwrap();
        assert_eq!(r.high, i128::from(i64::MAX) * 63);
    }
}
