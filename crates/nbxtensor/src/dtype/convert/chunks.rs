//! The one loop driver of the slice conversions: length check, then chunks over rayon.

use crate::dtype::{DTypeError, Result};
use rayon::prelude::*;

/// Elements per task: large enough that a task outweighs its scheduling, small enough that
/// both cores get work on mid-sized inputs.
const CHUNK: usize = 1 << 16;

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
    if src.len() <= CHUNK {
        kernel(src, dst);
    } else {
        src.par_chunks(CHUNK).zip(dst.par_chunks_mut(CHUNK)).for_each(|(s, d)| kernel(s, d));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_runs_cover_every_element_once() {
        let src: Vec<u32> = (0..(3 * CHUNK as u32 + 17)).collect();
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
