//! The Philox4x32-10 block function (Salmon et al., "Parallel random numbers: as easy as
//! 1, 2, 3", SC'11; the Random123 library's `philox4x32` with 10 rounds).
//!
//! One call maps a 128-bit counter and a 64-bit key to 128 random bits. Every round
//! multiplies two counter words by fixed constants, keeps both halves of the 64-bit products,
//! and mixes them with the other words and the key; the key is bumped by two Weyl constants
//! between rounds. Only 32-bit integer multiplication, xor and addition modulo 2^32 are used,
//! so every device computes the same bits.

/// The first round multiplier.
const M0: u32 = 0xD251_1F53;
/// The second round multiplier.
const M1: u32 = 0xCD9E_8D57;
/// The Weyl increment of key word 0 (the golden ratio).
const W0: u32 = 0x9E37_79B9;
/// The Weyl increment of key word 1 (sqrt(3) - 1).
const W1: u32 = 0xBB67_AE85;
/// Rounds of the variant this library uses.
pub const ROUNDS: usize = 10;

/// The high and low 32-bit halves of the 64-bit product `a * b`.
#[inline(always)]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let product = u64::from(a) * u64::from(b);
    ((product >> 32) as u32, product as u32)
}

/// Philox4x32 with 10 rounds: 128 random bits for one `(counter, key)`.
///
/// ```
/// use nbxtensor::random::philox4x32_10;
/// // Random123's known answer for a zero counter and key
/// assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
/// ```
#[inline]
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let mut x = counter;
    let mut k = key;
    for round in 0..ROUNDS {
        if round > 0 {
            k = [k[0].wrapping_add(W0), k[1].wrapping_add(W1)];
        }
        let (hi0, lo0) = mulhilo(M0, x[0]);
        let (hi1, lo1) = mulhilo(M1, x[2]);
        x = [hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `philox4x32 10` lines of Random123's `kat_vectors` file: counter, key, expected.
    const KNOWN_ANSWERS: [([u32; 4], [u32; 2], [u32; 4]); 3] = [
        ([0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
        (
            [0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff],
            [0xffffffff, 0xffffffff],
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd],
        ),
        (
            [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
            [0xa4093822, 0x299f31d0],
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
        ),
    ];

    #[test]
    fn random123_known_answers() {
        for (counter, key, expected) in KNOWN_ANSWERS {
            assert_eq!(philox4x32_10(counter, key), expected, "counter {counter:08x?} key {key:08x?}");
        }
    }
}
