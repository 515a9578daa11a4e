//! Property tests of the host conversions against references computed independently: f64
//! arithmetic over the two neighbouring bfloat16 values, and brute force over every fp8 value
//! decoded by the layouts of arXiv:2209.05433 (table 1).

use nbxtensor::dtype::convert::{self, bf16, Fp8Format};
use nbxtensor::DType;
use proptest::prelude::*;

/// bfloat16 by f64 arithmetic: the neighbours below and above `x` in magnitude, the nearer
/// one, a tie to the even pattern. The pattern past the largest finite one is infinity, taken
/// as 2^128 (the value the next pattern would have without an exponent limit).
fn bf16_reference(x: f32) -> u16 {
    if x.is_nan() {
        return 0x7FC0;
    }
    if x.is_infinite() {
        return if x > 0.0 { 0x7F80 } else { 0xFF80 };
    }
    let sign = if x.is_sign_negative() { 0x8000u16 } else { 0 };
    let magnitude = f64::from(x.abs());
    let value = |pattern: u16| match pattern {
        0x7F80 => 2f64.powi(128),
        p => f64::from(f32::from_bits(u32::from(p) << 16)),
    };
    // the largest pattern whose value is not above the magnitude: search, not bit slicing
    let (mut low, mut high) = (0u16, 0x7F80u16);
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if value(mid) <= magnitude {
            low = mid;
        } else {
            high = mid;
        }
    }
    let below = magnitude - value(low);
    let above = value(high) - magnitude;
    let pick = if below < above || (below == above && low % 2 == 0) { low } else { high };
    sign | pick
}

/// An fp8 layout as the paper gives it: exponent bias, mantissa bits, whether the top
/// exponent holds infinities (E5M2) or only NaN at S.1111.111 (E4M3).
struct PaperLayout {
    dtype: DType,
    bias: i32,
    mantissa_bits: u32,
    ieee_specials: bool,
}

const E4M3: PaperLayout = PaperLayout { dtype: DType::Float8E4m3fn, bias: 7, mantissa_bits: 3, ieee_specials: false };
const E5M2: PaperLayout = PaperLayout { dtype: DType::Float8E5m2, bias: 15, mantissa_bits: 2, ieee_specials: true };

impl PaperLayout {
    /// The value of a pattern by the paper's formula, in f64.
    fn value(&self, pattern: u8) -> f64 {
        let sign = if pattern & 0x80 != 0 { -1.0 } else { 1.0 };
        let exponent_bits = 7 - self.mantissa_bits;
        let field = i32::from(pattern & 0x7F) >> self.mantissa_bits;
        let fraction = f64::from(pattern & ((1 << self.mantissa_bits) - 1));
        let scale = 2f64.powi(self.mantissa_bits as i32);
        let top = (1 << exponent_bits) - 1;
        if self.ieee_specials && field == top {
            return if fraction == 0.0 { sign * f64::INFINITY } else { f64::NAN };
        }
        if !self.ieee_specials && pattern & 0x7F == 0x7F {
            return f64::NAN;
        }
        if field == 0 {
            sign * fraction / scale * 2f64.powi(1 - self.bias)
        } else {
            sign * (1.0 + fraction / scale) * 2f64.powi(field - self.bias)
        }
    }

    /// The pattern of `x` by brute force: the nearest finite value, ties to the even pattern;
    /// beyond the largest finite value, a pseudo-value one step further (the next pattern)
    /// stands for overflow. Returns `None` for overflow.
    fn nearest(&self, x: f32) -> Option<u8> {
        let magnitude = f64::from(x.abs());
        let finite: Vec<(u8, f64)> = (0u8..0x80).map(|p| (p, self.value(p))).filter(|(_, v)| v.is_finite()).collect();
        let (max_pattern, max) = *finite.last().unwrap();
        let step = max - finite[finite.len() - 2].1;
        if magnitude > max + step {
            return None;
        }
        let mut best: (Option<u8>, f64) = (None, (max + step - magnitude).abs());
        let mut best_even = (max_pattern + 1) % 2 == 0;
        for (p, v) in finite.iter().rev() {
            let distance = (v - magnitude).abs();
            if distance < best.1 || (distance == best.1 && p % 2 == 0 && !best_even) {
                best = (Some(*p), distance);
                best_even = p % 2 == 0;
            }
        }
        let sign = if x.is_sign_negative() { 0x80 } else { 0 };
        best.0.map(|p| p | sign)
    }
}

/// Checks `encode(x)` of a non-NaN `x` against the brute-force reference.
fn check_fp8_encode(layout: &PaperLayout, x: f32) -> Result<(), TestCaseError> {
    let format = Fp8Format::of(layout.dtype).unwrap();
    let got = format.encode(x);
    match layout.nearest(x) {
        Some(expected) if x.is_finite() => prop_assert_eq!(got, expected, "{} of {:e}", layout.dtype, x),
        _ => {
            // overflow and infinities: infinity of the same sign where the format has one, else NaN
            let decoded = layout.value(got);
            if layout.ieee_specials {
                prop_assert_eq!(decoded, if x > 0.0 { f64::INFINITY } else { f64::NEG_INFINITY }, "{:e}", x);
            } else {
                prop_assert!(decoded.is_nan(), "{} of {:e} gave {:#x}", layout.dtype, x, got);
            }
            prop_assert_eq!(got & 0x80 != 0, x.is_sign_negative());
        }
    }
    Ok(())
}

#[test]
fn every_bf16_pattern_round_trips_through_f32() {
    for pattern in 0..=u16::MAX {
        let wide = bf16::to_f32(pattern);
        assert_eq!(wide.to_bits(), u32::from(pattern) << 16);
        let expected = if wide.is_nan() { 0x7FC0 } else { pattern };
        assert_eq!(bf16::from_f32(wide), expected, "{pattern:#06x}");
    }
}

#[test]
fn every_bf16_pattern_with_small_offsets_matches_the_reference() {
    let offsets = [1u32, 2, 0x3FFF, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xC000, 0xFFFF];
    let mut src = Vec::new();
    for pattern in 0..=u16::MAX {
        let wide = u32::from(pattern) << 16;
        for offset in offsets {
            src.push(f32::from_bits(wide.wrapping_add(offset)));
            src.push(f32::from_bits(wide.wrapping_sub(offset)));
        }
    }
    let mut got = vec![0u16; src.len()];
    convert::f32_to_bf16_bits(&src, &mut got).unwrap();
    for (x, g) in src.iter().zip(&got) {
        assert_eq!(*g, bf16_reference(*x), "{:#010x}", x.to_bits());
    }
}

#[test]
fn the_slice_conversion_of_a_split_input_equals_one_pass_per_element() {
    // large enough to be split across the pool
    let src: Vec<f32> = (0..1_000_003u32).map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761))).collect();
    let mut got = vec![0u16; src.len()];
    convert::f32_to_bf16_bits(&src, &mut got).unwrap();
    assert!(src.iter().zip(&got).all(|(x, g)| *g == bf16::from_f32(*x)));
}

#[test]
fn every_fp8_pattern_decodes_to_the_paper_value_and_round_trips() {
    for layout in [&E4M3, &E5M2] {
        let format = Fp8Format::of(layout.dtype).unwrap();
        let mut decoded = [0f32; 256];
        let patterns: Vec<u8> = (0..=u8::MAX).collect();
        match layout.dtype {
            DType::Float8E4m3fn => convert::fp8_e4m3fn_bits_to_f32(&patterns, &mut decoded).unwrap(),
            _ => convert::fp8_e5m2_bits_to_f32(&patterns, &mut decoded).unwrap(),
        }
        let largest = layout.value(0x7F);
        let largest = if largest.is_finite() {
            largest
        } else {
            (0..0x7F).map(|p| layout.value(p)).filter(|v| v.is_finite()).fold(0.0, f64::max)
        };
        assert_eq!(largest, layout.dtype.float_format().unwrap().max, "the table's max of {}", layout.dtype);
        for (pattern, value) in patterns.iter().zip(decoded) {
            let expected = layout.value(*pattern);
            if expected.is_nan() {
                assert!(value.is_nan(), "{} {pattern:#04x}", layout.dtype);
                assert!(format.decode(format.encode(value)).is_nan());
                assert_eq!(value.is_sign_negative(), pattern & 0x80 != 0);
            } else {
                assert_eq!(f64::from(value), expected, "{} {pattern:#04x}", layout.dtype);
                assert_eq!(format.encode(value), *pattern, "{} {pattern:#04x}", layout.dtype);
            }
        }
    }
}

#[test]
fn fp8_encoding_matches_brute_force_between_and_around_every_value() {
    for layout in [&E4M3, &E5M2] {
        for pattern in 0u8..=0xFF {
            let v = layout.value(pattern);
            if !v.is_finite() {
                continue;
            }
            let bits = (v as f32).to_bits();
            for offset in
                [0u32, 1, 2, 0x1000, 0x3FFFF, 0x40000, 0x40001, 0x7FFFF, 0x80000, 0x80001, 0xFFFFF, 0x100000, 0x100001]
            {
                for neighbour in [bits.wrapping_add(offset), bits.wrapping_sub(offset)] {
                    let x = f32::from_bits(neighbour);
                    if !x.is_nan() && x.is_sign_negative() == (bits >> 31 == 1) {
                        check_fp8_encode(layout, x).unwrap();
                    }
                }
            }
        }
    }
}

fn any_f32() -> impl Strategy<Value = f32> {
    prop_oneof![
        any::<u32>().prop_map(f32::from_bits),
        (0u32..0x0080_0000).prop_map(f32::from_bits), // positive subnormals
        (0u32..0x0080_0000).prop_map(|m| -f32::from_bits(m)),
        (0x7F00_0000u32..=0x7F80_0000).prop_map(f32::from_bits), // the max-finite boundary and +inf
        (0x7F80_0001u32..=0x7FFF_FFFF).prop_map(|b| f32::from_bits(b | 0x8000_0000)), // negative NaN payloads
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(f32::MAX),
        Just(f32::MIN_POSITIVE),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 20_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn f32_to_bf16_matches_the_f64_reference(x in any_f32()) {
        let mut got = [0u16; 1];
        convert::f32_to_bf16_bits(&[x], &mut got).unwrap();
        prop_assert_eq!(got[0], bf16_reference(x), "{:#010x}", x.to_bits());
    }

    #[test]
    fn f32_to_fp8_matches_brute_force(x in any_f32(), small in -70_000f32..70_000f32) {
        for layout in [&E4M3, &E5M2] {
            for value in [x, small, small * 1e-4] {
                if value.is_nan() {
                    let format = Fp8Format::of(layout.dtype).unwrap();
                    let got = format.encode(value);
                    prop_assert!(layout.value(got).is_nan());
                    prop_assert_eq!(got & 0x80 != 0, value.is_sign_negative());
                } else {
                    check_fp8_encode(layout, value)?;
                }
            }
        }
    }

    #[test]
    fn f16_round_trips_through_bf16_when_exact(bits in any::<u16>()) {
        let half = half::f16::from_bits(bits);
        let mut bf = [0u16; 1];
        convert::f16_to_bf16_bits(&[half], &mut bf).unwrap();
        prop_assert_eq!(bf[0], bf16_reference(half.to_f32()));
    }
}
