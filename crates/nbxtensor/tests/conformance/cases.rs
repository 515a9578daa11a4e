//! Inputs: a deterministic generator, random values of each dtype (floats drawn at float32
//! precision, then rounded to the dtype, so every input is exactly known), the special values
//! of each dtype, and the edge shapes every family runs.

use crate::reference::{format, int_range, is_complex, is_int, is_real, Elem};
use nbxtensor::DType;

/// A small deterministic generator (xorshift64*): every run draws the same inputs.
pub struct Draw(u64);

impl Draw {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Draw {
        Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next 64 random bits.
    pub fn bits(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The next value in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.bits() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A value in [low, high).
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }

    /// An integer in [low, high] (inclusive).
    pub fn int(&mut self, low: i128, high: i128) -> i128 {
        let span = (high - low) as u128 + 1;
        let r = (u128::from(self.bits()) << 64 | u128::from(self.bits())) % span.max(1);
        low + r as i128
    }
}

/// `v` as an input of float dtype `dtype`: rounded to float32 precision first, then to the dtype.
pub fn float_input(dtype: DType, v: f64) -> f64 {
    format(dtype).unwrap().round(v as f32 as f64)
}

/// `n` floats of `dtype` uniform in [low, high).
pub fn floats(draw: &mut Draw, dtype: DType, n: usize, low: f64, high: f64) -> Vec<Elem> {
    (0..n).map(|_| Elem::F(float_input(dtype, draw.uniform(low, high)))).collect()
}

/// `n` integers of `dtype`: half of them small (|v| ≤ 20), half over the whole range.
pub fn ints(draw: &mut Draw, dtype: DType, n: usize) -> Vec<Elem> {
    let (low, high) = int_range(dtype).unwrap();
    (0..n)
        .map(|i| if i % 2 == 0 { Elem::I(draw.int(low.max(-20), high.min(20))) } else { Elem::I(draw.int(low, high)) })
        .collect()
}

/// `n` random elements of any dtype: floats in [low, high), integers as [`ints`], bools.
pub fn elems(draw: &mut Draw, dtype: DType, n: usize, low: f64, high: f64) -> Vec<Elem> {
    if dtype == DType::Bool {
        (0..n).map(|_| Elem::B(draw.bits() & 1 == 1)).collect()
    } else if is_int(dtype) {
        ints(draw, dtype, n)
    } else if is_complex(dtype) {
        (0..n)
            .map(|_| Elem::C(float_input(dtype, draw.uniform(low, high)), float_input(dtype, draw.uniform(low, high))))
            .collect()
    } else {
        floats(draw, dtype, n, low, high)
    }
}

/// The special values of `dtype`: for floats ±0, ±1, ±½, ±1.5, ±2.5, ±inf (where the format
/// has them), NaN, ±the largest finite value, ±the smallest normal and subnormal; for the
/// integers 0, ±1, ±2, the extremes and their neighbours; for bool both values.
pub fn specials(dtype: DType) -> Vec<Elem> {
    if dtype == DType::Bool {
        return vec![Elem::B(false), Elem::B(true)];
    }
    if let Some((low, high)) = int_range(dtype) {
        let mut v = vec![0, 1, 2, 3, 7, high, high - 1, high / 2];
        if low < 0 {
            v.extend([-1, -2, -3, -7, low, low + 1, low / 2]);
        }
        return v.into_iter().map(Elem::I).collect();
    }
    assert!(is_real(dtype), "no special values for {dtype}");
    let f = format(dtype).unwrap();
    let normal = crate::reference::pow2(f.emin());
    let subnormal = crate::reference::pow2(f.emin() - f.mantissa);
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        1.5,
        -1.5,
        2.5,
        -2.5,
        f.max,
        -f.max,
        normal,
        -normal,
        subnormal,
        -subnormal,
        f64::NAN,
    ];
    if f.inf {
        v.extend([f64::INFINITY, f64::NEG_INFINITY]);
    }
    v.into_iter().map(Elem::F).collect()
}

/// The edge shapes every elementwise family runs: empty (a 0 extent in several places),
/// 0-d, one element, and a few small ones.
pub const EDGE_SHAPES: [&[i64]; 7] = [&[0], &[3, 0], &[0, 4, 2], &[], &[1], &[1, 1, 1], &[2, 3]];

/// The number of elements of `shape`.
pub fn numel(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

/// A value `poison` for padding of `dtype` that a view must never read (a recognisable value).
pub fn poison(dtype: DType) -> Elem {
    if dtype == DType::Bool {
        Elem::B(true)
    } else if is_int(dtype) {
        Elem::I(int_range(dtype).unwrap().1 - 5)
    } else if is_complex(dtype) {
        Elem::C(-77.0, 77.0)
    } else {
        Elem::F(-77.0)
    }
}
