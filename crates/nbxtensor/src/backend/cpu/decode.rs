//! `decode_attention` and `kv_cache_write` on the host (`ops::spec::decode` says what they
//! compute), in float32.
//!
//! Attention goes split-K, as on a GPU: the cache is cut into splits of [`SPLIT`] keys, and
//! each (batch, cache head, split) is one item on the pool, computing for every query row of
//! its head group a partial state (running max, sum, weighted values) into the workspace; a
//! second pass combines each row's splits in order. The splits are fixed by the shapes, so the
//! result does not depend on the thread count. The host reads the length and the position
//! itself: a value outside the cache is refused by name before anything is written.

use super::buffers::{read, write, Float};
use super::widen::floats;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::attention::AttentionShape;
use crate::ops::spec::decode::{DecodeAttention, KvCacheWrite};
use crate::ops::spec::FLOATS;
use crate::settings::threads;
use crate::tensor::{Element, Tensor};
use half::{bf16, f16};
use rayon::prelude::*;

/// Keys of one split.
pub const SPLIT: usize = 512;

/// Keys scored together inside a split (a tile of scores on the stack).
const TILE: usize = 64;

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The splits of a cache of `t` rows.
fn splits(t: usize) -> usize {
    t.div_ceil(SPLIT).max(1)
}

/// The values of a position or length tensor, one per batch row (a single value broadcast).
fn per_batch(t: &Tensor, b: usize) -> Result<Vec<i64>> {
    let values: Vec<i64> = match t.dtype() {
        DType::Int32 => read::<i32>(t)?.iter().map(|&v| i64::from(v)).collect(),
        DType::Int64 => read::<i64>(t)?.to_vec(),
        other => return Err(invalid(format!("a position or length of {other}"))),
    };
    Ok(if values.len() == 1 { vec![values[0]; b] } else { values })
}

/// Float32 values of the workspace: the partials, then the widened queries.
fn workspace_floats(z: &AttentionShape) -> usize {
    z.b * z.hq * z.sq * (splits(z.sk) * (2 + z.dv) + z.d)
}

fn workspace(spec: &DecodeAttention, inputs: &[TensorMeta]) -> Result<u64> {
    Ok(4 * workspace_floats(&spec.sizes(inputs)?) as u64)
}

/// A cache operand: its first element and its strides (batch, head, row, column).
#[derive(Clone, Copy)]
struct Cache<T> {
    ptr: *const T,
    strides: [isize; 4],
}

// SAFETY: the caches are only read, by every item of one launch, while the launch holds them.
unsafe impl<T> Sync for Cache<T> {}
unsafe impl<T> Send for Cache<T> {}

impl<T: Float> Cache<T> {
    fn of(t: &Tensor) -> Cache<T> {
        let s = t.strides();
        Cache {
            ptr: t.data_ptr().cast::<T>() as *const T,
            strides: [s[0] as isize, s[1] as isize, s[2] as isize, s[3] as isize],
        }
    }

    /// Row `j` of head `h` of batch `b`.
    fn row(&self, b: usize, h: usize, j: usize) -> *const T {
        let [s0, s1, s2, _] = self.strides;
        self.ptr.wrapping_offset(b as isize * s0 + h as isize * s1 + j as isize * s2)
    }

    /// Element `e` of the row at `row`.
    ///
    /// # Safety
    /// `row` must be a row of this cache and `e` below its width.
    #[inline(always)]
    unsafe fn at(&self, row: *const T, e: usize) -> f32 {
        // SAFETY: the caller's guarantee.
        unsafe { *row.offset(e as isize * self.strides[3]) }.to_f32()
    }
}

/// `q · row` over `q.len()` columns.
///
/// # Safety
/// `row` must be a row of `cache` at least `q.len()` wide.
#[inline(always)]
unsafe fn dot<T: Float>(cache: &Cache<T>, row: *const T, q: &[f32]) -> f32 {
    if cache.strides[3] == 1 {
        // SAFETY: a unit-stride row of q.len() elements.
        let k = unsafe { std::slice::from_raw_parts(row, q.len()) };
        let mut lanes = [0.0f32; 8];
        let body = q.len() / 8 * 8;
        for (qc, kc) in q[..body].chunks_exact(8).zip(k[..body].chunks_exact(8)) {
            for l in 0..8 {
                lanes[l] += qc[l] * kc[l].to_f32();
            }
        }
        let tail: f32 = q[body..].iter().zip(&k[body..]).map(|(a, b)| a * b.to_f32()).sum();
        return lanes.iter().sum::<f32>() + tail;
    }
    // SAFETY: the caller's guarantee.
    q.iter().enumerate().map(|(e, &qe)| qe * unsafe { cache.at(row, e) }).sum()
}

/// One item: the partial states of every query row of cache head `kh` of batch `bi` over split
/// `split`, into `states` (`rows × (2 + dv)`: max, sum, weighted values).
#[allow(clippy::too_many_arguments)]
fn item<T: Float>(
    spec: &DecodeAttention,
    z: &AttentionShape,
    (k, v): (&Cache<T>, &Cache<T>),
    queries: &[f32],
    (bi, kh, split): (usize, usize, usize),
    length: usize,
    states: &mut [f32],
) {
    let group = z.hq / z.hk;
    let scale = spec.scale_for(z.d);
    let (begin, end) = (split * SPLIT, ((split + 1) * SPLIT).min(length));
    for (r, state) in states.chunks_exact_mut(2 + z.dv).enumerate() {
        let (g, i) = (r / z.sq, r % z.sq);
        let h = kh * group + g;
        let (head, acc) = state.split_at_mut(2);
        let (mut m, mut l) = (f32::NEG_INFINITY, 0.0f32);
        acc.fill(0.0);
        let q = &queries[((bi * z.hq + h) * z.sq + i) * z.d..][..z.d];
        let stop = end.min(spec.visible(z.sq, length, i));
        let mut first = begin;
        while first < stop {
            let n = TILE.min(stop - first);
            let mut scores = [0.0f32; TILE];
            for (j, s) in scores[..n].iter_mut().enumerate() {
                // SAFETY: rows below the cache's capacity, d columns wide (checked by the spec).
                *s = unsafe { dot(k, k.row(bi, kh, first + j), q) } * scale;
            }
            let top = scores[..n].iter().fold(m, |a, &b| a.max(b));
            if top > m {
                let alpha = if m == f32::NEG_INFINITY { 0.0 } else { (m - top).exp() };
                l *= alpha;
                acc.iter_mut().for_each(|a| *a *= alpha);
                m = top;
            }
            for (j, &s) in scores[..n].iter().enumerate() {
                let p = (s - m).exp();
                l += p;
                let row = v.row(bi, kh, first + j);
                if v.strides[3] == 1 {
                    // SAFETY: a unit-stride row of dv elements.
                    let vr = unsafe { std::slice::from_raw_parts(row, z.dv) };
                    acc.iter_mut().zip(vr).for_each(|(a, x)| *a += p * x.to_f32());
                } else {
                    for (e, a) in acc.iter_mut().enumerate() {
                        // SAFETY: a row of the cache, dv columns wide.
                        *a += p * unsafe { v.at(row, e) };
                    }
                }
            }
            first += n;
        }
        head[0] = m;
        head[1] = l;
    }
}

fn run<T: Float>(spec: &DecodeAttention, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let lengths = per_batch(&launch.inputs[3], z.b)?;
    if let Some((bi, &bad)) = lengths.iter().enumerate().find(|(_, &l)| l < 0 || l as usize > z.sk) {
        return Err(invalid(format!(
            "decode_attention: length {bad} (batch row {bi}) is outside a cache of {} rows",
            z.sk
        )));
    }
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let work = floats("decode_attention", launch.workspace, workspace_floats(&z))?;
    if out.is_empty() {
        return Ok(());
    }
    let (partials, queries) = work.split_at_mut(z.b * z.hq * z.sq * splits(z.sk) * (2 + z.dv));
    let q = read::<T>(&launch.inputs[0])?;
    queries.iter_mut().zip(q.iter()).for_each(|(w, x)| *w = x.to_f32());
    let (k, v) = (Cache::<T>::of(&launch.inputs[1]), Cache::<T>::of(&launch.inputs[2]));
    let (n, rows) = (splits(z.sk), (z.hq / z.hk) * z.sq);
    let queries: &[f32] = queries;
    threads::install(|| {
        partials.par_chunks_mut(rows * (2 + z.dv)).enumerate().for_each(|(index, states)| {
            let (bi, rest) = (index / (z.hk * n), index % (z.hk * n));
            let at = (bi, rest / n, rest % n);
            item(spec, &z, (&k, &v), queries, at, lengths[bi] as usize, states);
        });
        let partials: &[f32] = partials;
        out.par_chunks_mut(z.dv.max(1)).enumerate().for_each(|(index, row)| {
            let (bi, h, i) = (index / (z.hq * z.sq), index / z.sq % z.hq, index % z.sq);
            let (kh, g) = (h / (z.hq / z.hk), h % (z.hq / z.hk));
            let state =
                |s: usize| &partials[(((bi * z.hk + kh) * n + s) * rows + g * z.sq + i) * (2 + z.dv)..][..2 + z.dv];
            let top = (0..n).map(|s| state(s)[0]).fold(f32::NEG_INFINITY, f32::max);
            if top == f32::NEG_INFINITY {
                row.fill(T::from_f32(0.0));
                return;
            }
            let weights: Vec<f32> = (0..n).map(|s| (state(s)[0] - top).exp()).collect();
            let total: f32 = (0..n).map(|s| state(s)[1] * weights[s]).sum();
            for (e, o) in row.iter_mut().enumerate() {
                let sum: f32 = (0..n).map(|s| state(s)[2 + e] * weights[s]).sum();
                *o = T::from_f32(sum / total);
            }
        });
    });
    Ok(())
}

fn launch(spec: &DecodeAttention, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, launch),
        DType::Float16 => run::<f16>(spec, launch),
        DType::Bfloat16 => run::<bf16>(spec, launch),
        other => Err(invalid(format!("decode_attention: no loop for {other}"))),
    }
}

fn write_rows<T: Element + Copy>(spec: &KvCacheWrite, launch: Launch<'_>) -> Result<()> {
    let (cache, new) = (&launch.inputs[0], &launch.inputs[1]);
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    if !cache.is_contiguous() || cache.is_read_only() {
        return Err(invalid(
            "kv_cache_write: the cache must be a contiguous, writable tensor (it is written in place)".into(),
        ));
    }
    if std::sync::Arc::ptr_eq(cache.storage(), new.storage()) {
        return Err(invalid("kv_cache_write: the new rows are a view of the cache itself".into()));
    }
    let positions = per_batch(&launch.inputs[2], z.b)?;
    if let Some((bi, &bad)) = positions.iter().enumerate().find(|(_, &p)| p < 0 || p as usize + z.s > z.t) {
        return Err(invalid(format!(
            "kv_cache_write: position {bad} (batch row {bi}) with {} new rows is outside a cache of {} rows",
            z.s, z.t
        )));
    }
    let rows = read::<T>(new)?;
    // SAFETY: the cache is contiguous and writable (checked above), and this launch is its only
    // writer while it runs; the new rows live in another storage.
    let dst = unsafe { write::<T>(cache)? };
    let width = z.s * z.d;
    for (index, src) in rows.chunks_exact(width.max(1)).enumerate().take(z.b * z.h) {
        let at = (index * z.t + positions[index / z.h] as usize) * z.d;
        dst[at..at + width].copy_from_slice(src);
    }
    Ok(())
}

fn write_launch(spec: &KvCacheWrite, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => write_rows::<f32>(spec, launch),
        DType::Float16 => write_rows::<f16>(spec, launch),
        DType::Bfloat16 => write_rows::<bf16>(spec, launch),
        other => Err(invalid(format!("kv_cache_write: no loop for {other}"))),
    }
}

/// Registers `decode_attention` and `kv_cache_write` on float32, float16 and bfloat16.
pub fn register(table: &mut LaunchTable) {
    table.register_with_workspace("decode_attention", &FLOATS, launch, workspace);
    table.register("kv_cache_write", &FLOATS, write_launch);
}

#[cfg(test)]
mod tests {
    use crate::tensor::Tensor;

    #[test]
    fn a_write_lands_at_its_position_and_attention_sees_only_the_valid_rows() {
        let cache = Tensor::from_vec(vec![0.0f32; 4 * 2], &[1, 1, 4, 2]).unwrap();
        let values = Tensor::from_vec(vec![0.0f32; 4 * 2], &[1, 1, 4, 2]).unwrap();
        let new = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 2, 2]).unwrap();
        let at = Tensor::from_vec(vec![1i32], &[]).unwrap();
        cache.kv_cache_write(&new, &at).unwrap();
        assert_eq!(cache.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
        values.kv_cache_write(&new, &at).unwrap();
        // one query of zeros: every visible key weighs the same, so the mean of rows 0..3
        let q = Tensor::from_vec(vec![0.0f32; 2], &[1, 1, 1, 2]).unwrap();
        let length = Tensor::from_vec(vec![3i64], &[1]).unwrap();
        let out = q.decode_attention(&cache, &values, &length, true, None).unwrap();
        assert_eq!(out.to_vec::<f32>().unwrap(), vec![4.0 / 3.0, 2.0]);
        // past the end: refused by name, and nothing written
        let e = cache.kv_cache_write(&new, &Tensor::from_vec(vec![3i32], &[]).unwrap()).unwrap_err().to_string();
        assert!(e.contains("kv_cache_write") && e.contains("position 3"), "{e}");
        assert_eq!(cache.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
        let e = q.decode_attention(&cache, &values, &Tensor::from_vec(vec![5i64], &[]).unwrap(), true, None);
        assert!(e.unwrap_err().to_string().contains("length 5"));
    }
}
