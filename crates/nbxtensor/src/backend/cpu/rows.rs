//! Parallel loops over whole rows of an output (softmax slabs, normalized rows): each task
//! takes a run of rows of about the tiling table's `host_chunk_elements`, never part of a row.

use crate::settings::{threads, tiling};
use rayon::prelude::*;

/// Runs `body(first_row, rows)` over runs of whole rows of `row_len` elements of `out`, on the
/// pool (inline when one run holds everything). Nothing runs for an empty output.
pub fn par_rows<T: Send>(out: &mut [T], row_len: usize, body: impl Fn(usize, &mut [T]) + Sync) {
    if out.is_empty() || row_len == 0 {
        return;
    }
    let rows_per_task = (tiling::tiling_table().host_chunk_elements / row_len).max(1);
    let chunk = rows_per_task * row_len;
    if out.len() <= chunk {
        body(0, out);
        return;
    }
    threads::install(|| out.par_chunks_mut(chunk).enumerate().for_each(|(i, rows)| body(i * rows_per_task, rows)));
}

/// [`par_rows`] over two outputs of one shape at once: `body(first_row, a_rows, b_rows)` gets
/// the same run of rows of each.
pub fn par_row_pairs<T: Send>(
    a: &mut [T],
    b: &mut [T],
    row_len: usize,
    body: impl Fn(usize, &mut [T], &mut [T]) + Sync,
) {
    if a.is_empty() || row_len == 0 {
        return;
    }
    let rows_per_task = (tiling::tiling_table().host_chunk_elements / row_len).max(1);
    let chunk = rows_per_task * row_len;
    if a.len() <= chunk {
        body(0, a, b);
        return;
    }
    threads::install(|| {
        a.par_chunks_mut(chunk)
            .zip(b.par_chunks_mut(chunk))
            .enumerate()
            .for_each(|(i, (a_rows, b_rows))| body(i * rows_per_task, a_rows, b_rows))
    });
}
