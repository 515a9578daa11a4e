//! The lane sums of a 4 × 4 block of AVX-512 accumulators, as one vector: the few-rows float
//! product (`matmul/rows_dot.rs`) ends a block with 16 accumulators of 16 lanes whose sums it
//! needs. Summed one by one that takes about 128
//! instructions; interleaved in pairs and added, halving their count at each of four levels, 45.
//! The moves are the same for any 32-bit lanes, so they are written once over `__m512i` with the
//! caller's addition (float or integer): the result's bits are what that addition in this order
//! gives.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The lane sums of `acc[r][c]` as one vector, element `4r + c`, each lane added with `add`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
pub fn four_by_four(acc: [[__m512i; 4]; 4], add: impl Fn(__m512i, __m512i) -> __m512i) -> __m512i {
    // per 128-bit lane of row r: the sums of the lane's four values of its columns 0..4
    let rows: [__m512i; 4] = std::array::from_fn(|r| {
        let [a, b, c, d] = acc[r];
        // [a0+a2, b0+b2, a1+a3, b1+b3] and the same of c, d, in every 128-bit lane
        let ab = add(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
        let cd = add(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
        add(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd))
    });
    // the 128-bit lanes of rows r and r + 1 summed in pairs: [r(L0+L1), r(L2+L3), r+1(..), r+1(..)]
    let pair = |p: __m512i, q: __m512i| add(_mm512_shuffle_i32x4::<0x88>(p, q), _mm512_shuffle_i32x4::<0xDD>(p, q));
    let (top, bottom) = (pair(rows[0], rows[1]), pair(rows[2], rows[3]));
    // lane r: row r's whole sums
    add(_mm512_shuffle_i32x4::<0x88>(top, bottom), _mm512_shuffle_i32x4::<0xDD>(top, bottom))
}
