//! The draws: words of a stream turned into uniform, normal and integer values, and
//! permutations. Each element depends only on its index, so the work is split across the
//! CPU pool in chunks and the result never depends on the thread count.

use super::philox::philox4x32_10;
use crate::settings::{threads, tiling};
use rayon::prelude::*;

/// The words of one stream: word `w` is word `w % 4` of the Philox block `w / 4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Words {
    /// The generator's seed (the Philox key).
    pub seed: u64,
    /// The stream number (the upper half of the Philox counter).
    pub stream: u64,
}

impl Words {
    /// Fills `out` with the words `start, start + 1, …` of the stream.
    ///
    /// ```
    /// use nbxtensor::random::{philox4x32_10, Words};
    /// let words = Words { seed: 7, stream: 2 };
    /// let mut out = [0u32; 6];
    /// words.fill(3, &mut out);
    /// let block0 = philox4x32_10([0, 0, 2, 0], [7, 0]);
    /// let block1 = philox4x32_10([1, 0, 2, 0], [7, 0]);
    /// assert_eq!(out, [block0[3], block1[0], block1[1], block1[2], block1[3], philox4x32_10([2, 0, 2, 0], [7, 0])[0]]);
    /// ```
    pub fn fill(&self, start: u64, out: &mut [u32]) {
        let key = [self.seed as u32, (self.seed >> 32) as u32];
        let mut word = start;
        let mut filled = 0;
        while filled < out.len() {
            let block = word / 4;
            let bits = philox4x32_10(
                [block as u32, (block >> 32) as u32, self.stream as u32, (self.stream >> 32) as u32],
                key,
            );
            let first = (word % 4) as usize;
            let take = (4 - first).min(out.len() - filled);
            out[filled..filled + take].copy_from_slice(&bits[first..first + take]);
            filled += take;
            word += take as u64;
        }
    }
}

/// Runs `element(words_of_i, &mut out[i])` for every element, where element `i` reads the
/// `per_element` words starting at `offset + per_element * i`; chunked across the pool.
fn fill_by_words<T: Send>(
    words: Words,
    offset: u64,
    per_element: usize,
    out: &mut [T],
    element: impl Fn(&[u32], &mut T) + Sync,
) {
    let chunk_len = tiling::tiling_table().host_chunk_elements;
    threads::install(|| {
        out.par_chunks_mut(chunk_len).enumerate().for_each(|(chunk, values)| {
            let first = (chunk * chunk_len * per_element) as u64;
            let mut buffer = vec![0u32; values.len() * per_element];
            words.fill(offset + first, &mut buffer);
            for (value, w) in values.iter_mut().zip(buffer.chunks_exact(per_element)) {
                element(w, value);
            }
        })
    })
}

/// Uniform values in `[low, high)` with `precision` significant bits (24 for float32; 11 and
/// 8 for values to be rounded to float16 and bfloat16), computed in float32.
pub fn fill_uniform_f32(words: Words, offset: u64, low: f32, high: f32, precision: u32, out: &mut [f32]) {
    let scale = (-(precision as f32)).exp2();
    let span = high - low;
    fill_by_words(words, offset, 1, out, |w, v| *v = low + span * ((w[0] >> (32 - precision)) as f32 * scale));
}

/// Uniform float64 values in `[low, high)` from 53 bits of two words.
pub fn fill_uniform_f64(words: Words, offset: u64, low: f64, high: f64, out: &mut [f64]) {
    let span = high - low;
    fill_by_words(words, offset, 2, out, |w, v| {
        let bits = (u64::from(w[0]) << 32 | u64::from(w[1])) >> 11;
        *v = low + span * (bits as f64 * (-53f64).exp2());
    });
}

/// The Box–Muller pair of two words, in float64.
#[inline]
fn box_muller(w0: u32, w1: u32) -> (f64, f64) {
    let u1 = (f64::from(w0) + 1.0) * (-32f64).exp2();
    let u2 = f64::from(w1) * (-32f64).exp2();
    let r = (-2.0 * u1.ln()).sqrt();
    let (sin, cos) = (std::f64::consts::TAU * u2).sin_cos();
    (r * cos, r * sin)
}

/// Normal values (float64), pairs of elements from pairs of words.
pub fn fill_normal_f64(words: Words, offset: u64, mean: f64, std: f64, out: &mut [f64]) {
    fill_normal_pairs(words, offset, out, |z| mean + std * z);
}

/// Normal values rounded to float32 (computed in float64).
pub fn fill_normal_f32(words: Words, offset: u64, mean: f64, std: f64, out: &mut [f32]) {
    fill_normal_pairs(words, offset, out, |z| (mean + std * z) as f32);
}

fn fill_normal_pairs<T: Send>(words: Words, offset: u64, out: &mut [T], map: impl Fn(f64) -> T + Sync) {
    // chunks hold an even number of elements, so a pair never straddles two chunks
    let chunk_len = tiling::tiling_table().host_chunk_elements.next_multiple_of(2);
    threads::install(|| {
        out.par_chunks_mut(chunk_len).enumerate().for_each(|(chunk, values)| {
            let mut buffer = vec![0u32; values.len() + values.len() % 2];
            words.fill(offset + (chunk * chunk_len) as u64, &mut buffer);
            for (pair, w) in values.chunks_mut(2).zip(buffer.chunks_exact(2)) {
                let (z0, z1) = box_muller(w[0], w[1]);
                pair[0] = map(z0);
                if let Some(second) = pair.get_mut(1) {
                    *second = map(z1);
                }
            }
        })
    })
}

/// Integers in `[low, high)` (the caller checks `low < high`), by 64-bit multiply-shift.
pub fn fill_integers(words: Words, offset: u64, low: i64, high: i64, out: &mut [i64]) {
    let range = (i128::from(high) - i128::from(low)) as u128;
    fill_by_words(words, offset, 2, out, |w, v| {
        let x = u128::from(u64::from(w[0]) << 32 | u64::from(w[1]));
        *v = (i128::from(low) + ((x * range) >> 64) as i128) as i64;
    });
}

/// A permutation of `0..keyed.len()`: indices sorted by their 64-bit keys (ties by index);
/// `keyed` is the caller's workspace, one pair per index.
pub fn permutation(words: Words, offset: u64, mut keyed: Vec<(u64, i64)>) -> Vec<i64> {
    fill_by_words(words, offset, 2, &mut keyed, |w, v| v.0 = u64::from(w[0]) << 32 | u64::from(w[1]));
    for (i, entry) in keyed.iter_mut().enumerate() {
        entry.1 = i as i64;
    }
    threads::install(|| keyed.par_sort_unstable());
    keyed.into_iter().map(|(_, index)| index).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORDS: Words = Words { seed: 0x0123_4567_89ab_cdef, stream: 5 };

    #[test]
    fn words_agree_with_the_block_function_at_any_start() {
        let mut all = vec![0u32; 64];
        WORDS.fill(0, &mut all);
        for start in 0..20 {
            let mut part = vec![0u32; 17];
            WORDS.fill(start, &mut part);
            assert_eq!(part[..], all[start as usize..start as usize + 17]);
        }
    }

    #[test]
    fn uniform_values_lie_in_range_and_use_their_words() {
        let mut out = vec![0f32; 100_000];
        fill_uniform_f32(WORDS, 8, -2.0, 3.0, 24, &mut out);
        assert!(out.iter().all(|v| (-2.0..3.0).contains(v)));
        let mut w = [0u32; 1];
        WORDS.fill(8 + 777, &mut w);
        assert_eq!(out[777], -2.0 + 5.0 * ((w[0] >> 8) as f32 / 16_777_216.0));
    }

    #[test]
    fn integers_cover_the_range_without_leaving_it() {
        let mut out = vec![0i64; 50_000];
        fill_integers(WORDS, 0, -3, 4, &mut out);
        for value in -3..4 {
            assert!(out.contains(&value));
        }
        assert!(out.iter().all(|v| (-3..4).contains(v)));
        let mut extreme = vec![0i64; 1000];
        fill_integers(WORDS, 0, i64::MIN, i64::MAX, &mut extreme);
        assert!(extreme.iter().any(|v| *v < 0) && extreme.iter().any(|v| *v > 0));
    }

    #[test]
    fn a_permutation_holds_every_index_once() {
        let mut p = permutation(WORDS, 0, vec![(0, 0); 10_000]);
        assert_ne!(p[..10], (0..10).collect::<Vec<i64>>()[..]);
        p.sort_unstable();
        assert_eq!(p, (0..10_000).collect::<Vec<i64>>());
    }

    const CHUNK: usize = 1 << 12;

    #[test]
    fn results_do_not_depend_on_the_thread_count_or_the_chunking() {
        let _settings = crate::settings::test_lock();
        let draw = || {
            let mut u = vec![0f32; 3 * CHUNK + 5];
            fill_uniform_f32(WORDS, 4, 0.0, 1.0, 24, &mut u);
            let mut n = vec![0f64; 3 * CHUNK + 3];
            fill_normal_f64(WORDS, 4, 0.0, 1.0, &mut n);
            let mut i = vec![0i64; 2 * CHUNK + 1];
            fill_integers(WORDS, 4, 0, 1000, &mut i);
            (u, n, i, permutation(WORDS, 4, vec![(0, 0); 5 * CHUNK]))
        };
        threads::set_threads(Some(1)).unwrap();
        let one = draw();
        for count in [2, 8] {
            threads::set_threads(Some(count)).unwrap();
            assert!(one == draw(), "draws differ with {count} threads");
        }
        for chunk in [1, 3, 1000, CHUNK] {
            tiling::set_tiling(Some(tiling::TilingTable { host_chunk_elements: chunk, ..tiling::tiling_table() }))
                .unwrap();
            assert!(one == draw(), "draws differ with chunks of {chunk}");
        }
        tiling::set_tiling(None).unwrap();
        threads::set_threads(None).unwrap();
    }
}
