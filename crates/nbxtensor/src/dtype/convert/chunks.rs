//! The one loop driver of the slice conversions: length check, then chunks over the
//! library's CPU pool (the chunk length is the tiling table's `host_chunk_elements`).

use crate::dtype::{DTypeError, Result};
use crate::settings::{threads, tiling};
use rayon::prelude::*;

/// Runs `kernel` over `src` and `dst` in matching chunks, in parallel when there is more than
/// one chunk. `kernel` is elementwise, so the result does not depend on how the work is split.
/// `name` names the conversion in the error for a length mismatch.
pub(super) fn convert_chunks<S: Sync, D: Send>(
    name: &str,
    src: &[S],
    dst: &mut [D],
    kernel: impl Fn(&[S], &mut [D]) + Sync,
) -> Result<()> {
    if src.len() != dst.len() {
        return Err(DTypeError::Invalid(format!(
            "{name}: the source has {} elements but the destination has {}",
            src.len(),
            dst.len()
        )));
    }
    let chunk = tiling::tiling_table().host_chunk_elements;
    if src.len() <= chunk {
        kernel(src, dst);
    } else {
        threads::install(|| src.par_chunks(chunk).zip(dst.par_chunks_mut(chunk)).for_each(|(s, d)| kernel(s, d)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_runs_cover_every_element_once() {
        let chunk = tiling::tiling_table().host_chunk_elements as u32;
        let src: Vec<u32> = (0..(3 * chunk + 17)).collect();
        let mut dst = vec![0u64; src.len()];
        convert_chunks("double", &src, &mut dst, |s, d| {
            for (o, i) in d.iter_mut().zip(s) {
                *o += 2 * u64::from(*i);
            }
        })
        .unwrap();
        assert!(dst.iter().enumerate().all(|(i, v)| *v == 2 * i as u64));
    }

    #[test]
    fn mismatched_lengths_are_refused_by_name() {
        let err = convert_chunks("widen", &[1u8, 2], &mut [0u8; 3], |_, _| {}).unwrap_err().to_string();
        assert_eq!(err, "widen: the source has 2 elements but the destination has 3");
    }
}
