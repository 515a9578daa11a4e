//! Scaled dot-product attention, `sdpa(q, k, v[, mask])`, on float32, float16 and bfloat16
//! (computed in float32): `softmax(q·kᵀ·scale + mask) · v` per (batch, head).
//!
//! - `q [b, hq, sq, d]`, `k [b, hk, sk, d]`, `v [b, hk, sk, dv]`; `hq` a multiple of `hk`
//!   (grouped-query heads: query head `h` reads key/value head `h / (hq / hk)`);
//! - an optional 4th input, an additive mask of the same dtype broadcastable to
//!   `[b, hq, sq, sk]`;
//! - attributes `causal` (bool, default false: query `i` sees keys `j ≤ i + sk − sq`, the
//!   bottom-right alignment of a KV cache) and `scale` (float, default `1/sqrt(d)`).
//!
//! A row with no visible key (causal with `sq > sk`, or a mask of −∞ everywhere) is all
//! zeros. The spec declares no workspace; each backend declares its own through its hook.

use super::{require_dtype, AttrDoc, OpDef, Spec, FLOATS};
use crate::dtype::DType;
use crate::kernel::{saturating_product, Attrs, Cost, KernelError, Result, TensorMeta};
use crate::shape;
use std::sync::Arc;

/// The sizes of one attention call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AttentionShape {
    /// Batch.
    pub b: usize,
    /// Query heads.
    pub hq: usize,
    /// Key/value heads.
    pub hk: usize,
    /// Query rows.
    pub sq: usize,
    /// Keys.
    pub sk: usize,
    /// The query/key head dim.
    pub d: usize,
    /// The value head dim.
    pub dv: usize,
}

impl AttentionShape {
    /// The keys query row `i` sees: `0..visible(causal, i)`.
    pub fn visible(&self, causal: bool, i: usize) -> usize {
        if causal {
            (i + 1 + self.sk).saturating_sub(self.sq).min(self.sk)
        } else {
            self.sk
        }
    }

    /// The (query row, key) pairs the scores cover, over all query rows: `sq·sk`, or under
    /// the causal mask the sum of [`visible`](Self::visible) over the rows, in closed form (a
    /// broadcast query may have 2^40 rows: no loop over them), saturating at `u64::MAX`.
    pub fn pairs(&self, causal: bool) -> u64 {
        let (sq, sk) = (self.sq as u128, self.sk as u128);
        let pairs = if !causal {
            sq * sk
        } else if sq >= sk {
            // the last sk rows see 1, 2, … sk keys; the rows before them none
            sk * (sk + 1) / 2
        } else {
            // row i sees i + 1 + (sk − sq) keys
            sq * (sq + 1) / 2 + (sk - sq) * sq
        };
        u64::try_from(pairs).unwrap_or(u64::MAX)
    }

    /// The (batch, query head) pairs.
    pub fn heads(&self) -> usize {
        // saturating: the heads of an empty output may multiply past 64 bits
        self.b.saturating_mul(self.hq)
    }
}

/// `sdpa` on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Sdpa {
    /// The dtype of q, k, v (and the mask).
    pub dtype: DType,
    /// Causal masking, aligned bottom-right.
    pub causal: bool,
    /// The scale of the scores (`None`: `1/sqrt(d)`).
    pub scale: Option<f64>,
}

impl Sdpa {
    /// The sizes of a call on `inputs`; refused naming the operands that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<AttentionShape> {
        let invalid = KernelError::Invalid;
        if !(3..=4).contains(&inputs.len()) {
            return Err(invalid(format!("sdpa: takes 3 or 4 inputs (q, k, v[, mask]), got {}", inputs.len())));
        }
        if let Some(other) = inputs.iter().find(|m| m.dtype != self.dtype) {
            return Err(invalid(format!("sdpa: inputs must share one dtype, got {} and {}", self.dtype, other.dtype)));
        }
        let (q, k, v) = (&inputs[0].shape, &inputs[1].shape, &inputs[2].shape);
        if q.len() != 4 || k.len() != 4 || v.len() != 4 {
            return Err(invalid(format!("sdpa: q, k, v must be 4-d [b, h, s, d], got {q:?}, {k:?}, {v:?}")));
        }
        let agree = q[0] == k[0] && k[0] == v[0] && k[1] == v[1] && k[2] == v[2] && q[3] == k[3];
        if !agree || k[1] == 0 && q[1] != 0 || k[1] != 0 && q[1] % k[1] != 0 {
            return Err(invalid(format!(
                "sdpa: q {q:?}, k {k:?}, v {v:?} do not fit [b, hq, sq, d], [b, hk, sk, d], [b, hk, sk, dv] with hq a multiple of hk"
            )));
        }
        let u = |x: i64| x as usize;
        let sizes =
            AttentionShape { b: u(q[0]), hq: u(q[1]), hk: u(k[1]), sq: u(q[2]), sk: u(k[2]), d: u(q[3]), dv: u(v[3]) };
        if let Some(mask) = inputs.get(3) {
            let target = [q[0], q[1], q[2], k[2]];
            if mask.shape.len() > 4
                || shape::broadcast_shapes(&[&mask.shape[..], &target[..]]).ok().as_deref() != Some(&target[..])
            {
                return Err(invalid(format!("sdpa: mask {:?} does not broadcast to {target:?}", mask.shape)));
            }
        }
        Ok(sizes)
    }

    /// The scale of the scores for head dim `d`.
    pub fn scale_for(&self, d: usize) -> f32 {
        self.scale.unwrap_or(1.0 / (d as f64).sqrt()) as f32
    }
}

impl Spec for Sdpa {
    fn op(&self) -> &'static str {
        "sdpa"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let scale = self.scale.map(|s| format!(":scale{s}")).unwrap_or_default();
        format!("sdpa:{}{}{}", self.dtype.launch_key(), if self.causal { ":causal" } else { "" }, scale)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let out = TensorMeta::new(self.dtype, &[z.b as i64, z.hq as i64, z.sq as i64, z.dv as i64]);
        let pairs = z.pairs(self.causal);
        let masked = u64::from(inputs.len() == 4);
        // Per visible score: the dot (2d), the scale, the mask, exp, the sum, the weighted row
        // of v (2dv); per query row, dv divisions.
        let per_pair = (2 * z.d as u64).saturating_add(3 + masked).saturating_add(2 * z.dv as u64);
        let per_head =
            saturating_product(&[pairs, per_pair]).saturating_add(saturating_product(&[z.sq as u64, z.dv as u64]));
        let read = crate::kernel::total_bytes(inputs)?;
        Cost::simple(vec![out], read, saturating_product(&[z.b as u64, z.hq as u64, per_head]))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("sdpa", &["causal", "scale"])?;
    require_dtype("sdpa", dtype, &FLOATS)?;
    let scale = match attrs.iter().any(|(name, _)| name == "scale") {
        true => Some(attrs.float("sdpa", "scale", None)?),
        false => None,
    };
    Ok(Arc::new(Sdpa { dtype, causal: attrs.bool("sdpa", "causal", Some(false))?, scale }))
}

/// The attention entry in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "causal", meaning: "query i sees keys up to i + sk - sq", default: Some("false") },
        AttrDoc { name: "scale", meaning: "the scale of the scores", default: Some("1/sqrt(d)") },
    ];
    ops.push(OpDef {
        name: "sdpa",
        family: "attention",
        summary: "softmax(q·kᵀ·scale + mask)·v, grouped-query heads",
        inputs: &["q", "k", "v", "mask?"],
        attrs: ATTRS,
        dtypes: |_| &FLOATS,
        bind,
        follows_policy: true,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_in_closed_form_are_the_sum_over_rows() {
        for sq in 0..9 {
            for sk in 0..9 {
                let z = AttentionShape { b: 1, hq: 1, hk: 1, sq, sk, d: 4, dv: 4 };
                for causal in [false, true] {
                    let summed: u64 = (0..sq).map(|i| z.visible(causal, i) as u64).sum();
                    assert_eq!(z.pairs(causal), summed, "sq {sq}, sk {sk}, causal {causal}");
                }
            }
        }
        // a broadcast query of 2^40 rows: counted at once, not row by row
        let z = AttentionShape { b: 1, hq: 1, hk: 1, sq: 1 << 40, sk: 3, d: 4, dv: 4 };
        assert_eq!(z.pairs(true), 6);
        assert_eq!(z.pairs(false), 3 << 40);
        let huge = AttentionShape { b: 1, hq: 1, hk: 1, sq: 1 << 40, sk: 1 << 40, d: 4, dv: 4 };
        assert_eq!(huge.pairs(false), u64::MAX);
    }

    #[test]
    fn a_causal_sdpa_of_a_broadcast_query_of_2_40_rows_is_declared_at_once() {
        let sdpa = Sdpa { dtype: DType::Float32, causal: true, scale: None };
        let q = TensorMeta::new(DType::Float32, &[1, 1, 1 << 40, 4]);
        let k = TensorMeta::new(DType::Float32, &[1, 1, 3, 4]);
        let cost = sdpa.declare(&[q, k.clone(), k]).unwrap();
        assert_eq!(cost.outputs[0].shape, [1, 1, 1 << 40, 4]);
        assert_eq!(cost.flops, 6 * (2 * 4 + 3 + 2 * 4) + (4 << 40));
    }
}
