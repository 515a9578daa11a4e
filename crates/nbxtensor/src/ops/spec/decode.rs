//! Decoding over a KV cache, on float32, float16 and bfloat16 (computed in float32):
//!
//! - `kv_cache_write(cache, new, position)`: the rows `new [b, h, s, d]` written into the
//!   preallocated `cache [b, h, T, d]` at rows `position .. position + s`, **in place**: the
//!   launch has no output, it updates its input 0 (declared in [`Cost::updates`]). In a
//!   program the cache is state the model holds (a tensor it captured, like a weight), never an
//!   arena buffer: every run and every replay writes into the same bytes.
//! - `decode_attention(q, k_cache, v_cache, length)`: `q [b, hq, sq, d]` with `sq ≤ 8` over the
//!   first `length` rows of `k_cache [b, hk, T, d]` and `v_cache [b, hk, T, dv]` (grouped-query
//!   heads: query head `h` reads cache head `h / (hq / hk)`), attributes `causal` (default
//!   true: the queries are the last `sq` rows of the valid length, query `i` sees keys
//!   `j < length − sq + 1 + i`) and `scale` (default `1/sqrt(d)`). A row with no visible key is
//!   all zeros.
//!
//! `position` and `length` are int32 or int64 tensors of shape `[]`, `[1]` or `[b]` (one per
//! batch row), read by the launch from the device they live on: one captured program, one CUDA
//! graph, serves every decode step whatever the position. The caches are contiguous (row `t` of
//! head `h` of batch `i` at element `((i·h_count + h)·T + t)·d`); there is no paged layout.
//!
//! Past the end: a host launch refuses a position or length outside the cache by name before
//! it writes anything; a GPU launch cannot report it (the value is on the device, read inside a
//! graph), so it never touches memory outside the cache: rows of `new` that would land before
//! row 0 or at row `T` or later are skipped, and a length is clamped to `0..=T`.
//!
//! The declared cost of `decode_attention` is that of a full cache (`length = T`): the length
//! lives on the device, the cost is known before it.

use super::attention::AttentionShape;
use super::{require_dtype, AttrDoc, OpDef, Spec, FLOATS, INDEX_DTYPES};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// The most query rows `decode_attention` takes (more is a prefill: `sdpa`).
pub const MAX_QUERIES: usize = 8;

/// Refuses a position or length tensor that is not an int32 or int64 `[]`, `[1]` or `[b]`.
fn check_index(op: &str, role: &str, meta: &TensorMeta, b: i64) -> Result<()> {
    if !INDEX_DTYPES.contains(&meta.dtype) {
        return Err(KernelError::Invalid(format!("{op}: {role} must be int32 or int64, got {}", meta.dtype)));
    }
    match meta.shape[..] {
        [] | [1] => Ok(()),
        [n] if n == b => Ok(()),
        _ => Err(KernelError::Invalid(format!(
            "{op}: {role} must have shape [], [1] or [b] = [{b}], got {:?}",
            meta.shape
        ))),
    }
}

/// `decode_attention` on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeAttention {
    /// The dtype of q and the caches.
    pub dtype: DType,
    /// Causal masking, aligned to the end of the valid length.
    pub causal: bool,
    /// The scale of the scores (`None`: `1/sqrt(d)`).
    pub scale: Option<f64>,
}

impl DecodeAttention {
    /// The sizes of a call (`sk` is the cache's capacity `T`); refused naming the operands
    /// that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<AttentionShape> {
        let invalid = KernelError::Invalid;
        let [q, k, v, length] = inputs else {
            return Err(invalid(format!(
                "decode_attention: takes 4 inputs (q, k_cache, v_cache, length), got {}",
                inputs.len()
            )));
        };
        if let Some(other) = [q, k, v].into_iter().find(|m| m.dtype != self.dtype) {
            return Err(invalid(format!(
                "decode_attention: q and the caches must share one dtype, got {} and {}",
                self.dtype, other.dtype
            )));
        }
        let (qs, ks, vs) = (&q.shape, &k.shape, &v.shape);
        if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
            return Err(invalid(format!(
                "decode_attention: q, k_cache, v_cache must be 4-d [b, h, s, d], got {qs:?}, {ks:?}, {vs:?}"
            )));
        }
        let agree = qs[0] == ks[0] && ks[0] == vs[0] && ks[1] == vs[1] && ks[2] == vs[2] && qs[3] == ks[3];
        if !agree || ks[1] == 0 && qs[1] != 0 || ks[1] != 0 && qs[1] % ks[1] != 0 {
            return Err(invalid(format!(
                "decode_attention: q {qs:?}, k_cache {ks:?}, v_cache {vs:?} do not fit [b, hq, sq, d], [b, hk, T, d], [b, hk, T, dv] with hq a multiple of hk"
            )));
        }
        if qs[2] as usize > MAX_QUERIES {
            return Err(invalid(format!(
                "decode_attention: takes at most {MAX_QUERIES} query rows, got {} (a prefill is sdpa)",
                qs[2]
            )));
        }
        check_index("decode_attention", "length", length, qs[0])?;
        let u = |x: i64| x as usize;
        Ok(AttentionShape {
            b: u(qs[0]),
            hq: u(qs[1]),
            hk: u(ks[1]),
            sq: u(qs[2]),
            sk: u(ks[2]),
            d: u(qs[3]),
            dv: u(vs[3]),
        })
    }

    /// The scale of the scores for head dim `d`.
    pub fn scale_for(&self, d: usize) -> f32 {
        self.scale.unwrap_or(1.0 / (d as f64).sqrt()) as f32
    }

    /// The keys query row `i` sees when the valid length is `length`: `0..visible`.
    pub fn visible(&self, sq: usize, length: usize, i: usize) -> usize {
        if self.causal {
            (length + 1 + i).saturating_sub(sq).min(length)
        } else {
            length
        }
    }
}

impl Spec for DecodeAttention {
    fn op(&self) -> &'static str {
        "decode_attention"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let scale = self.scale.map(|s| format!(":scale{s}")).unwrap_or_default();
        let causal = if self.causal { "" } else { ":full" };
        format!("decode_attention:{}{causal}{scale}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let out = TensorMeta::new(self.dtype, &[z.b as i64, z.hq as i64, z.sq as i64, z.dv as i64]);
        // a full cache: the length is on the device
        let pairs: u64 = (0..z.sq).map(|i| self.visible(z.sq, z.sk, i) as u64).sum();
        // per visible score: the dot (2d), the scale, exp, the sum, the weighted row of v
        // (2dv); per query row, dv divisions
        let per_head = pairs * (2 * z.d as u64 + 3 + 2 * z.dv as u64) + (z.sq * z.dv) as u64;
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        Cost::simple(vec![out], read, z.heads() as u64 * per_head)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// The sizes of one cache write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheWriteShape {
    /// Batch.
    pub b: usize,
    /// Heads.
    pub h: usize,
    /// The cache's rows (its capacity).
    pub t: usize,
    /// The new rows.
    pub s: usize,
    /// The row's width.
    pub d: usize,
}

/// `kv_cache_write` on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct KvCacheWrite {
    /// The dtype of the cache and the new rows.
    pub dtype: DType,
}

impl KvCacheWrite {
    /// The sizes of a call; refused naming the operands that do not fit.
    pub fn sizes(&self, inputs: &[TensorMeta]) -> Result<CacheWriteShape> {
        let invalid = KernelError::Invalid;
        let [cache, new, position] = inputs else {
            return Err(invalid(format!(
                "kv_cache_write: takes 3 inputs (cache, new, position), got {}",
                inputs.len()
            )));
        };
        if cache.dtype != self.dtype || new.dtype != self.dtype {
            return Err(invalid(format!(
                "kv_cache_write: the cache and the new rows must share one dtype, got {} and {}",
                cache.dtype, new.dtype
            )));
        }
        let (c, n) = (&cache.shape, &new.shape);
        if c.len() != 4 || n.len() != 4 || c[0] != n[0] || c[1] != n[1] || c[3] != n[3] {
            return Err(invalid(format!(
                "kv_cache_write: cache {c:?} and new {n:?} do not fit [b, h, T, d] and [b, h, s, d]"
            )));
        }
        if n[2] > c[2] {
            return Err(invalid(format!("kv_cache_write: {} new rows do not fit a cache of {} rows", n[2], c[2])));
        }
        check_index("kv_cache_write", "position", position, c[0])?;
        let u = |x: i64| x as usize;
        Ok(CacheWriteShape { b: u(c[0]), h: u(c[1]), t: u(c[2]), s: u(n[2]), d: u(c[3]) })
    }
}

impl Spec for KvCacheWrite {
    fn op(&self) -> &'static str {
        "kv_cache_write"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("kv_cache_write:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        self.sizes(inputs)?;
        let new = inputs[1].bytes()?;
        let mut cost = Cost::simple(Vec::new(), new + inputs[2].bytes()?, 0)?;
        cost.bytes_written = new;
        cost.updates = vec![0];
        Ok(cost)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_attention(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("decode_attention", &["causal", "scale"])?;
    require_dtype("decode_attention", dtype, &FLOATS)?;
    let scale = match attrs.iter().any(|(name, _)| name == "scale") {
        true => Some(attrs.float("decode_attention", "scale", None)?),
        false => None,
    };
    let causal = attrs.bool("decode_attention", "causal", Some(true))?;
    Ok(Arc::new(DecodeAttention { dtype, causal, scale }))
}

fn bind_write(_: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only("kv_cache_write", &[])?;
    require_dtype("kv_cache_write", dtype, &FLOATS)?;
    Ok(Arc::new(KvCacheWrite { dtype }))
}

/// The decode entries in the catalogue. Neither follows a precision policy: a cast would copy
/// the whole cache (and the write would land in the copy).
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "causal", meaning: "query i sees keys below length - sq + 1 + i", default: Some("true") },
        AttrDoc { name: "scale", meaning: "the scale of the scores", default: Some("1/sqrt(d)") },
    ];
    ops.push(OpDef {
        name: "decode_attention",
        family: "decode",
        summary: "attention of up to 8 queries over the first `length` rows of a KV cache",
        inputs: &["q", "k_cache", "v_cache", "length"],
        attrs: ATTRS,
        dtypes: |_| &FLOATS,
        bind: bind_attention,
        follows_policy: false,
    });
    ops.push(OpDef {
        name: "kv_cache_write",
        family: "decode",
        summary: "new rows written into a KV cache at a position, in place",
        inputs: &["cache", "new", "position"],
        attrs: &[],
        dtypes: |_| &FLOATS,
        bind: bind_write,
        follows_policy: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(dtype: DType, shape: &[i64]) -> TensorMeta {
        TensorMeta::new(dtype, shape)
    }

    #[test]
    fn a_write_updates_its_cache_in_place_and_declares_the_rows_it_moves() {
        let f = DType::Bfloat16;
        let spec = KvCacheWrite { dtype: f };
        let cost = spec.declare(&[meta(f, &[2, 4, 64, 8]), meta(f, &[2, 4, 3, 8]), meta(DType::Int32, &[2])]).unwrap();
        assert!(cost.outputs.is_empty());
        assert_eq!(cost.updates, vec![0]);
        assert_eq!((cost.bytes_written, cost.bytes_read), (2 * 4 * 3 * 8 * 2, 2 * 4 * 3 * 8 * 2 + 8));
        let refused = |inputs: &[TensorMeta], word: &str| {
            let e = spec.declare(inputs).unwrap_err().to_string();
            assert!(e.contains("kv_cache_write") && e.contains(word), "{e}");
        };
        refused(&[meta(f, &[1, 4, 2, 8]), meta(f, &[1, 4, 3, 8]), meta(DType::Int64, &[])], "3 new rows");
        refused(&[meta(f, &[1, 4, 9, 8]), meta(f, &[1, 4, 3, 8]), meta(DType::Float32, &[])], "position");
        refused(&[meta(f, &[2, 4, 9, 8]), meta(f, &[2, 4, 3, 8]), meta(DType::Int32, &[3])], "position");
        refused(&[meta(f, &[1, 4, 9, 8]), meta(f, &[1, 2, 3, 8]), meta(DType::Int32, &[])], "do not fit");
    }

    #[test]
    fn decode_attention_declares_a_full_cache_and_refuses_a_prefill() {
        let f = DType::Float16;
        let spec = DecodeAttention { dtype: f, causal: true, scale: None };
        let inputs =
            [meta(f, &[1, 8, 2, 64]), meta(f, &[1, 2, 100, 64]), meta(f, &[1, 2, 100, 64]), meta(DType::Int64, &[1])];
        let cost = spec.declare(&inputs).unwrap();
        assert_eq!(cost.outputs, vec![meta(f, &[1, 8, 2, 64])]);
        // query 0 sees 99 keys of a full cache, query 1 all 100
        assert_eq!(cost.flops, 8 * (199 * (128 + 3 + 128) + 2 * 64));
        assert_eq!(cost.bytes_read, 2 * (8 * 2 * 64 + 2 * 2 * 100 * 64) + 8);
        let mut prefill = inputs.clone();
        prefill[0] = meta(f, &[1, 8, 9, 64]);
        assert!(spec.declare(&prefill).unwrap_err().to_string().contains("at most 8 query rows"));
        let mut grouped = inputs.clone();
        grouped[0] = meta(f, &[1, 3, 1, 64]);
        assert!(spec.declare(&grouped).unwrap_err().to_string().contains("hq a multiple of hk"));
        assert_eq!(spec.visible(2, 0, 0), 0);
        assert_eq!(DecodeAttention { causal: false, ..spec.clone() }.visible(2, 5, 0), 5);
    }
}
