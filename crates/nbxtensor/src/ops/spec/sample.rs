//! Sampling a token from logits, on the device the logits live on:
//! `sample(logits, position)` with attributes `temperature`, `top_k`, `top_p` and `seed`.
//!
//! `logits [..., vocab]` (float32, float16 or bfloat16) gives one int64 token per row (the
//! output has the leading dims). Row `r` draws one Philox4x32-10 word of the library's random
//! streams (`random::Words { seed, stream: r }`), word number `position` (an int32 or int64
//! `[]` or `[1]` tensor on the device): a captured decode step replays with the position it is
//! fed, and the same seed gives the same tokens on every backend.
//!
//! Every step is defined exactly, in integers where it can be, so that every backend computes
//! the same token from the same logits bit for bit:
//!
//! 1. `z = logit · (1 / temperature)` in float32 (the factor rounded once, [`Sample::inverse_temperature`]);
//!    a NaN logit counts as −inf. The largest `z` is `m`. A row whose `m` is +inf gives the
//!    first +inf; a row with no finite logit has no token (the CPU refuses it by name, a GPU
//!    writes −1: the value is on the device).
//! 2. `top_k > 0`: the rows keep the logits `z ≥ τ`, `τ` the k-th largest (ties at `τ` all kept,
//!    as Hugging Face's top-k filter keeps them).
//! 3. Each kept logit's weight is `e^(z − m)` in fixed point, [`weight`]: an integer of at most
//!    2⁴⁰ (the largest logit weighs exactly 2⁴⁰), from a polynomial of fused multiply-adds whose
//!    constants are [`EXP`]; a weight below 1 (a probability under about 1e-12 of the largest) is 0.
//! 4. `top_p < 1`: of total weight `M`, the rows keep the logits whose strictly heavier logits
//!    weigh less than `limit = max(1, ⌊p₃₂ · M / 2³²⌋)` ([`Sample::top_p_fraction`] gives
//!    `p₃₂ = round(top_p · 2³²)`): the smallest set of the heaviest tokens whose mass reaches
//!    `top_p`, ties at its edge kept together.
//! 5. With `M` now the kept weight and `w` the drawn word, the target is `t = ⌊w · M / 2³²⌋`
//!    ([`scaled`]), and the token is the first index (in vocabulary order) whose running sum of
//!    kept weights passes `t`.
//!
//! Temperature must be positive and finite (greedy decoding is `argmax`), `top_k ≥ 0` (0:
//! off), `0 < top_p ≤ 1` (1: off), `seed ≥ 0`. The workspace is 8 bytes a logit (the weights).

use super::{require_dtype, AttrDoc, OpDef, Spec, FLOATS, INDEX_DTYPES};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// The most logits a row may have (the running sums of 2⁴⁰-sized weights stay below 2⁶³).
pub const MAX_VOCAB: i64 = 1 << 23;

/// The fixed point of the weights: the largest logit weighs `2^WEIGHT_BITS`.
pub const WEIGHT_BITS: i32 = 40;

/// The constants of [`weight`]'s exponential, in the order the kernels take them: log₂e, ln 2
/// in two parts (Cody and Waite's), the cut below which a weight is 0, then the Taylor
/// coefficients of eʳ from r⁷ down to r⁰ (Horner's order).
pub const EXP: [f32; 12] = [
    std::f32::consts::LOG2_E,
    0.693_359_375,   // ln 2, high part (exact in 9 bits)
    -2.121_944_4e-4, // ln 2 − the high part
    -28.0,           // e^-28 · 2^40 < 1
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
    1.0,
    1.0,
];

/// The fixed-point weight of a logit `x = z − m ≤ 0` below the row's largest: `e^x · 2^40`
/// rounded down, 0 below `EXP[3]` (and for NaN), computed with float32 products and fused
/// multiply-adds only, so every device gets the same integer.
///
/// ```
/// use nbxtensor::ops::spec::sample::weight;
/// assert_eq!(weight(0.0), 1 << 40);
/// assert!((weight(-1.0) as f64 / (1u64 << 40) as f64 - (-1f64).exp()).abs() < 1e-7);
/// assert_eq!(weight(-30.0), 0);
/// ```
pub fn weight(x: f32) -> u64 {
    let [log2e, ln2_hi, ln2_lo, cut, poly @ ..] = EXP;
    if !(x >= cut) {
        return 0;
    }
    let n = (x * log2e).round_ties_even();
    let r = (-n).mul_add(ln2_lo, (-n).mul_add(ln2_hi, x));
    let p = poly[1..].iter().fold(poly[0], |p, &c| p.mul_add(r, c));
    // n is in -40..=0: the scale 2^(n + 40) is a normal float, the product exact
    let scale = f32::from_bits(((n as i32 + WEIGHT_BITS + 127) as u32) << 23);
    (p * scale) as u64
}

/// `⌊word · total / 2³²⌋`: a 32-bit fraction of a 64-bit total, exactly.
///
/// ```
/// use nbxtensor::ops::spec::sample::scaled;
/// assert_eq!(scaled(1 << 31, 10), 5);
/// assert_eq!(scaled(u32::MAX, 1 << 40), (1 << 40) - 256);
/// ```
pub fn scaled(word: u32, total: u64) -> u64 {
    ((u128::from(word) * u128::from(total)) >> 32) as u64
}

/// The order-preserving key of a float32 (`a < b` ⇔ `key(a) < key(b)`, −0 below +0).
pub fn key(z: f32) -> u32 {
    let bits = z.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// `sample` on one logits dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The logits' dtype.
    pub dtype: DType,
    /// Positive and finite.
    pub temperature: f64,
    /// The tokens kept by count (0: all).
    pub top_k: i64,
    /// The probability mass kept, in `(0, 1]` (1: all).
    pub top_p: f64,
    /// The Philox key.
    pub seed: u64,
}

/// The sizes of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleShape {
    /// Rows (the product of the leading dims).
    pub rows: usize,
    /// Logits a row.
    pub vocab: usize,
}

impl Sample {
    /// The spec of a call, its attributes checked: a positive finite temperature (greedy
    /// decoding is `argmax`), `0 < top_p ≤ 1`, a seed below 2⁶³ (attributes are int64).
    pub fn new(dtype: DType, temperature: f64, top_k: usize, top_p: f64, seed: u64) -> Result<Sample> {
        require_dtype("sample", dtype, &FLOATS)?;
        let invalid = KernelError::Invalid;
        if !(temperature.is_finite() && temperature > 0.0) {
            return Err(invalid(format!(
                "sample: temperature must be positive and finite, got {temperature} (greedy decoding is argmax)"
            )));
        }
        if !(top_p > 0.0 && top_p <= 1.0) {
            return Err(invalid(format!("sample: top_p must be in (0, 1], got {top_p}")));
        }
        let top_k = i64::try_from(top_k).map_err(|_| invalid(format!("sample: top_k {top_k} is too large")))?;
        if seed > i64::MAX as u64 {
            return Err(invalid(format!("sample: seed {seed} is past 2^63 - 1 (attributes are int64)")));
        }
        Ok(Sample { dtype, temperature, top_k, top_p, seed })
    }

    /// `1 / temperature` rounded once to float32 (every backend multiplies by it).
    pub fn inverse_temperature(&self) -> f32 {
        (1.0 / self.temperature) as f32
    }

    /// `top_p` as a 32-bit fraction (`round(top_p · 2³²)`), or `None` when it keeps everything.
    pub fn top_p_fraction(&self) -> Option<u32> {
        (self.top_p < 1.0).then(|| (self.top_p * 4_294_967_296.0).round().min(u32::MAX as f64) as u32)
    }

    /// `top_k` when it keeps fewer than `vocab` logits.
    pub fn top_k_of(&self, vocab: usize) -> Option<usize> {
        (self.top_k > 0 && (self.top_k as usize) < vocab).then_some(self.top_k as usize)
    }

    /// The sizes of a call; refused naming what does not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<SampleShape> {
        let invalid = KernelError::Invalid;
        let [logits, position] = inputs else {
            return Err(invalid(format!("sample: takes 2 inputs (logits, position), got {}", inputs.len())));
        };
        if logits.dtype != self.dtype {
            return Err(invalid(format!("sample: logits of {} given to a {} launch", logits.dtype, self.dtype)));
        }
        let Some((&vocab, leading)) = logits.shape.split_last() else {
            return Err(invalid("sample: logits must have at least one dim (the vocabulary)".into()));
        };
        if !(1..=MAX_VOCAB).contains(&vocab) {
            return Err(invalid(format!("sample: a row of {vocab} logits (the op takes 1 to {MAX_VOCAB})")));
        }
        if !INDEX_DTYPES.contains(&position.dtype) || !matches!(position.shape[..], [] | [1]) {
            return Err(invalid(format!(
                "sample: position must be an int32 or int64 of shape [] or [1], got {} {:?}",
                position.dtype, position.shape
            )));
        }
        let rows = crate::shape::numel(leading).map_err(|e| invalid(format!("sample: {e}")))?;
        Ok(SampleShape { rows: rows as usize, vocab: vocab as usize })
    }
}

impl Spec for Sample {
    fn op(&self) -> &'static str {
        "sample"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!(
            "sample:{}:temperature={}:top_k={}:top_p={}:seed={}",
            self.dtype.launch_key(),
            self.temperature,
            self.top_k,
            self.top_p,
            self.seed
        )
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let leading = &inputs[0].shape[..inputs[0].shape.len() - 1];
        let out = TensorMeta::new(DType::Int64, leading);
        let logits = (z.rows * z.vocab) as u64;
        // per logit: the scaled key, the weight's exponential (about 12 operations) and the sums
        let mut cost = Cost::simple(vec![out], inputs[0].bytes()? + inputs[1].bytes()?, logits * 16)?;
        cost.workspace = 8 * logits;
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = "sample";
    attrs.only(op, &["temperature", "top_k", "top_p", "seed"])?;
    let seed = attrs.int(op, "seed", None)?;
    let seed = u64::try_from(seed)
        .map_err(|_| KernelError::Invalid(format!("sample: seed must be 0 or positive, got {seed}")))?;
    let top_k = attrs.int(op, "top_k", Some(0))?;
    let top_k = usize::try_from(top_k)
        .map_err(|_| KernelError::Invalid(format!("sample: top_k must be 0 (off) or positive, got {top_k}")))?;
    let (temperature, top_p) = (attrs.float(op, "temperature", Some(1.0))?, attrs.float(op, "top_p", Some(1.0))?);
    Ok(Arc::new(Sample::new(dtype, temperature, top_k, top_p, seed)?))
}

/// The sampling entry in the catalogue. It follows no precision policy: the logits are read
/// in their own dtype.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "temperature", meaning: "the logits are divided by it (positive)", default: Some("1.0") },
        AttrDoc { name: "top_k", meaning: "keep the k largest logits (0: all)", default: Some("0") },
        AttrDoc { name: "top_p", meaning: "keep the heaviest tokens of this probability mass", default: Some("1.0") },
        AttrDoc { name: "seed", meaning: "the key of the Philox stream drawn from", default: None },
    ];
    ops.push(OpDef {
        name: "sample",
        family: "sample",
        summary: "one token a row drawn from softmax(logits / temperature), top-k and top-p filtered",
        inputs: &["logits", "position"],
        attrs: ATTRS,
        dtypes: |_| &FLOATS,
        bind,
        follows_policy: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_weight_is_the_exponential_in_fixed_point() {
        assert_eq!(weight(0.0), 1 << 40);
        assert_eq!(weight(-0.0), 1 << 40);
        assert_eq!(weight(f32::NEG_INFINITY), 0);
        assert_eq!(weight(f32::NAN), 0);
        let mut x = -27.99f32;
        while x < 0.0 {
            let want = (f64::from(x)).exp() * (1u64 << 40) as f64;
            let got = weight(x) as f64;
            assert!((got - want).abs() <= want * 2e-7 + 1.0, "{x}: {got} against {want}");
            x += 0.0137;
        }
    }

    #[test]
    fn keys_order_the_floats() {
        let values = [f32::NEG_INFINITY, -3.5, -1e-30, -0.0, 0.0, 1e-30, 2.0, f32::INFINITY];
        for pair in values.windows(2) {
            assert!(key(pair[0]) < key(pair[1]), "{pair:?}");
        }
    }

    #[test]
    fn binding_refuses_what_is_out_of_its_domain() {
        let bound = |attrs: Attrs| bind("sample", DType::Float32, &attrs).map(drop).unwrap_err().to_string();
        use crate::kernel::AttrValue::{Float, Int};
        let seeded = Attrs::new().with("seed", Int(1));
        assert!(bound(Attrs::new()).contains("seed"));
        assert!(bound(seeded.clone().with("temperature", Float(0.0))).contains("argmax"));
        assert!(bound(seeded.clone().with("top_p", Float(1.5))).contains("top_p"));
        assert!(bound(seeded.clone().with("top_k", Int(-1))).contains("top_k"));
        assert!(bound(Attrs::new().with("seed", Int(-2))).contains("seed"));
        let spec = Sample { dtype: DType::Float32, temperature: 0.5, top_k: 0, top_p: 0.5, seed: 0 };
        assert_eq!(spec.top_p_fraction(), Some(1 << 31));
        assert_eq!(spec.inverse_temperature(), 2.0);
        let cost =
            spec.declare(&[TensorMeta::new(DType::Float32, &[2, 1, 10]), TensorMeta::new(DType::Int64, &[1])]).unwrap();
        assert_eq!(cost.outputs, vec![TensorMeta::new(DType::Int64, &[2, 1])]);
        assert_eq!(cost.workspace, 8 * 20);
    }
}
