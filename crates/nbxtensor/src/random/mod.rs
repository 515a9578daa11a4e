//! Counter-based random streams: the same `(seed, stream, offset)` gives the same bits on
//! every thread count, every chunking and every device.
//!
//! # The algorithm, exactly
//!
//! The source of bits is [`philox4x32_10`]. A [`Generator`] holds a 64-bit `seed`, a 64-bit
//! `stream` number and an `offset` counted in 32-bit words. Word `w` of a stream is word
//! `w % 4` of the Philox block
//!
//! ```text
//! philox4x32_10(counter = [lo32(w / 4), hi32(w / 4), lo32(stream), hi32(stream)],
//!               key     = [lo32(seed), hi32(seed)])
//! ```
//!
//! A draw of `n` elements that needs `k` words per element reads words
//! `offset + k*i … offset + k*i + k - 1` for element `i`, then advances `offset` by `k*n`
//! rounded up to a multiple of 4, so every draw starts on a fresh block. From the words:
//!
//! | draw | words | element |
//! | --- | --- | --- |
//! | uniform float32 | 1 | `(w >> 8) * 2^-24`, then `low + (high - low) * u` in float32 |
//! | uniform float16, bfloat16 | 1 | `(w >> (32 - p)) * 2^-p` with `p` the format's significand bits (mantissa bits + 1, from the dtype table: 11 and 8), the affine map in float32, rounded to the format (nearest even) |
//! | uniform float64 | 2 | `((w0 << 32 \| w1) >> 11) * 2^-53`, then `low + (high - low) * u` in float64 |
//! | normal | 1 | pairs of elements `(2j, 2j+1)` read words `w0, w1`: `u1 = (w0 + 1) * 2^-32` in (0, 1], `u2 = w1 * 2^-32`, `r = sqrt(-2 ln u1)` (float64); element `2j` is `mean + std * r cos(2π u2)` and `2j+1` is `mean + std * r sin(2π u2)`, rounded to the output dtype; an odd last element uses its pair's cosine |
//! | integers in `[low, high)` | 2 | `x = w0 << 32 \| w1`; `low + ((x * (high - low)) >> 64)` in 128-bit arithmetic (bias below `(high - low) / 2^64`) |
//! | permutation of `n` | 2 | the 64-bit key `w0 << 32 \| w1` of each index; indices sorted by `(key, index)` |
//!
//! Uniform draws and integers use integer arithmetic and one correctly rounded float
//! operation pair, so a GPU kernel reproduces them bit for bit (with fused multiply-add
//! disabled for the affine map). Normal draws use `ln`, `cos` and `sin`: bit-equal for every
//! thread count and chunking on one machine; another device's math library may differ in the
//! last bit.

mod draws;
mod generator;
mod philox;

pub use draws::{
    fill_integers, fill_normal_f32, fill_normal_f64, fill_uniform_f32, fill_uniform_f64, permutation, Words,
};
pub use generator::{check_bounds, FloatDraw, Generator, RandomError};
pub use philox::{philox4x32_10, ROUNDS};
