//! The size classes of a GPU backend's pooled blocks: a freed block waits in its class for the
//! next request of that class, so eager op calls reuse device memory instead of asking the
//! driver for it each time.

/// The bytes a pooled request of `bytes` takes: a power of two up to 1 MiB (at least 256),
/// then a multiple of 2 MiB; 0 for 0.
///
/// ```
/// use nbxtensor::memory::size_class;
/// assert_eq!(size_class(0), 0);
/// assert_eq!(size_class(1), 256);
/// assert_eq!(size_class(4097), 8192);
/// assert_eq!(size_class((1 << 20) + 1), 2 << 20);
/// ```
pub fn size_class(bytes: usize) -> usize {
    match bytes {
        0 => 0,
        1..=1_048_576 => bytes.next_power_of_two().max(256),
        _ => bytes.div_ceil(2 << 20).saturating_mul(2 << 20), // past 64 bits: refused by every limit
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_cover_the_request() {
        for bytes in [1usize, 255, 256, 257, 4096, 1 << 20, (1 << 20) + 1, 5 << 20] {
            let class = size_class(bytes);
            assert!(class >= bytes && class % 256 == 0, "{bytes} -> {class}");
        }
        assert_eq!(size_class(0), 0);
        assert_eq!(size_class((1 << 20) + 1), 2 << 20);
    }
}
