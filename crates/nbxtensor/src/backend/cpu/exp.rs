//! A float32 exponential that vectorizes: range reduction by ln 2 (Cody–Waite, two-part
//! constant), a degree-7 polynomial on [−ln2/2, ln2/2], and the power of two built in the
//! exponent bits. Relative error below 2 ulp for results above float32's smallest normal;
//! below it the result is scaled into the subnormals in two steps (one rounding), and inputs
//! below −104 give 0 (e^−104 is under half the smallest subnormal), −inf included. NaN stays
//! NaN, +inf overflows to +inf.

pub(super) const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split so that `k * LN2_HIGH` is exact for the k that occur.
pub(super) const LN2_HIGH: f32 = 0.693_359_4;
pub(super) const LN2_LOW: f32 = -2.121_944_4e-4;
/// 1.5 · 2^23: adding and subtracting it rounds a float32 to the nearest integer (ties to even),
/// which then sits in the low bits of the sum.
pub(super) const ROUNDER: f32 = 12_582_912.0;
/// Inputs below this give results that round to 0; above [`HIGHEST`], to +inf.
const LOWEST: f32 = -104.0;
/// The smallest power of two the first scaling step builds (2^(k−1) stays normal above it).
const LEAST_K: i32 = -125;
const HIGHEST: f32 = 88.722_83;

/// e^x in float32, written so that loops over slices vectorize.
#[inline(always)]
pub fn exp_f32(input: f32) -> f32 {
    // branch-free (selects, no early return), so loops over slices vectorize. An input below
    // LOWEST (a masked attention score: −1e4, −inf) computes e^0 and is replaced by 0 at the
    // end: carried through the scaling, its product underflows, which Intel cores finish in
    // microcode, about 4× the time of a normal result.
    let dead = input < LOWEST;
    let x = if dead { 0.0 } else { input.clamp(LOWEST, HIGHEST) };
    let t = x * LOG2_E + ROUNDER;
    let k = t - ROUNDER;
    let r = (x - k * LN2_HIGH) - k * LN2_LOW;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0 + r * (1.0 / 5040.0)))))));
    // 2^(k-1), doubled after the product, so that k = 128 (results near float32's max) fits;
    // k sits in the low bits of t (two's complement), read there instead of by a float-to-int
    // conversion, which would not vectorize (Rust's `as` saturates). Below 2^LEAST_K the rest
    // of the power, 2^(k − LEAST_K) ≥ 2^−25, multiplies last: one rounding into the subnormals.
    let power = t.to_bits().wrapping_sub(ROUNDER.to_bits()) as i32;
    let high = power.max(LEAST_K);
    let scale = f32::from_bits(((high + 126) as u32) << 23);
    let rest = f32::from_bits(((power - high + 127) as u32) << 23);
    let value = p * scale * 2.0 * rest;
    let value = if input > HIGHEST { f32::INFINITY } else { value };
    let value = if dead { 0.0 } else { value };
    if input.is_nan() {
        input
    } else {
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_two_ulp_of_the_float64_exponential_over_the_normal_range() {
        let mut worst = 0.0f64;
        let mut x = -86.5f32;
        while x < 88.7 {
            let exact = (x as f64).exp();
            let got = exp_f32(x) as f64;
            let ulp = (f32::from_bits((exact as f32).to_bits() + 1) as f64 - exact as f32 as f64).abs();
            worst = worst.max((got - exact).abs() / ulp);
            x += 0.0137;
        }
        assert!(worst < 2.0, "worst error {worst} ulp");
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(exp_f32(-1000.0), 0.0);
        assert_eq!(exp_f32(-104.5), 0.0);
        assert_eq!(exp_f32(-f32::MAX), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        // below the normal range: the float64 exponential rounded into the subnormals
        for x in [-87.5f32, -90.0, -100.0, -103.0] {
            assert_eq!(exp_f32(x), (x as f64).exp() as f32, "e^{x}");
        }
    }
}
