//! sdpa on the host (`ops::spec::attention` says what it computes), computed in float32.
//!
//! Heads run in parallel in at most [`SLOTS`] slots (a fixed count: a head's result does not
//! depend on its slot or on the thread count), each slot owning a slice of the declared
//! workspace. A head goes in tiles of up to [`TILE_ROWS`] query rows: the scores
//! `q·kᵀ·scale` by a matrix product (the matmul kernels' `float_product`, one thread,
//! operands read through their strides), the mask and the softmax (a vectorized exponential) in place, then the
//! weighted values by a second product straight into the output. float16 and bfloat16 heads
//! are widened into the slot first. Workspace per slot, in float32 values: `tile·sk` scores,
//! plus `sq·d + sk·(d + dv) + tile·dv` for the half formats (their widened q, k, v and output
//! tile). The mask is read through its strides, broadcast dims never copied.

use super::buffers::{with_simd, write, Float};
use super::exp::exp_f32;
use super::matmul::{float_product, Matrix};
use super::widen::floats;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::attention::{AttentionShape, Sdpa};
use crate::settings::{host, threads};
use crate::shape;
use gemm::Parallelism;
use half::{bf16, f16};
use rayon::prelude::*;

/// Query rows scored together: one tile of scores is `TILE_ROWS × sk` float32 values.
pub const TILE_ROWS: usize = 64;

/// The most slots heads are shared among (each slot a contiguous range of heads, run in
/// order, with its own scratch).
pub const SLOTS: usize = 16;

/// Lanes of the row maxima and sums: a fixed order, whatever the thread count.
const LANES: usize = 16;

/// Query rows per tile.
fn tile(z: &AttentionShape) -> usize {
    z.sq.min(TILE_ROWS)
}

/// Slots the heads are shared among.
fn slots(z: &AttentionShape) -> usize {
    z.b.saturating_mul(z.hq).min(SLOTS)
}

/// float32 values of one slot's scratch: a tile of scores, and for a half format the widened
/// q, k, v of a head and an output tile.
///
/// Saturating: declared before the output is allocated, when the extents of broadcast inputs
/// (a call the allocation will refuse) may multiply past 64 bits.
fn slot_floats(z: &AttentionShape, widened: bool) -> usize {
    let (tile, times) = (tile(z), |a: usize, b: usize| a.saturating_mul(b));
    let widened = if widened {
        times(z.sq, z.d).saturating_add(times(z.sk, z.d.saturating_add(z.dv))).saturating_add(times(tile, z.dv))
    } else {
        0
    };
    times(tile, z.sk).saturating_add(widened)
}

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// `dst = beta · a · b` for `a` `m × k` and `b` `k × n`, into the row-major `dst` (row stride
/// `n`), on the calling thread (the matmul kernels' product: a fixed order of operations).
///
/// # Safety
/// `a` and `b` must address readable `m × k` and `k × n` matrices, `dst` `m·n` writable values.
unsafe fn product(m: usize, n: usize, k: usize, dst: *mut f32, a: Matrix<f32>, b: Matrix<f32>, beta: f32) {
    // SAFETY: as the caller guarantees.
    unsafe { float_product((m, n, k), a, b, dst, false, beta, Parallelism::None) }
}

/// Widens `rows × cols` elements of type `T` at `ptr` (strides in elements) into the
/// row-major `out`.
///
/// # Safety
/// Every addressed element must be readable.
unsafe fn widen_matrix<T: Float>(ptr: *const T, rows: usize, cols: usize, strides: (isize, isize), out: &mut [f32]) {
    for (r, row) in out.chunks_exact_mut(cols.max(1)).take(rows).enumerate() {
        for (c, value) in row.iter_mut().enumerate() {
            // SAFETY: (r, c) is inside the matrix the caller vouched for.
            *value = unsafe { *ptr.offset(r as isize * strides.0 + c as isize * strides.1) }.to_f32();
        }
    }
}

/// One mask row: its first element and the stride between keys (0 when broadcast).
struct MaskRow<T> {
    ptr: *const T,
    stride: isize,
}

/// The unnormalized softmax of one row of scores in place: the mask added to the `visible`
/// keys, the maximum subtracted, the exponentials taken; hidden keys (and a row whose keys are
/// all −∞) get weight 0. Returns what the weighted values are divided by: the weights' sum (1
/// for a row of zero weights, whose output is zero).
#[inline(always)]
fn softmax_row<T: Float>(row: &mut [f32], visible: usize, mask: Option<MaskRow<T>>) -> f32 {
    let (seen, hidden) = row.split_at_mut(visible);
    hidden.fill(0.0);
    match mask {
        // SAFETY (all three): the mask row addresses `visible` elements with its stride.
        Some(MaskRow { ptr, stride: 1 }) => {
            let values = unsafe { std::slice::from_raw_parts(ptr, seen.len()) };
            seen.iter_mut().zip(values).for_each(|(s, m)| *s += m.to_f32());
        }
        Some(MaskRow { ptr, stride: 0 }) => {
            let value = unsafe { *ptr }.to_f32();
            seen.iter_mut().for_each(|s| *s += value);
        }
        Some(MaskRow { ptr, stride }) => {
            for (j, s) in seen.iter_mut().enumerate() {
                *s += unsafe { *ptr.offset(j as isize * stride) }.to_f32();
            }
        }
        None => {}
    }
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let body = seen.len() / LANES * LANES;
    for chunk in seen[..body].chunks_exact(LANES) {
        for l in 0..LANES {
            lanes[l] = if chunk[l] > lanes[l] { chunk[l] } else { lanes[l] };
        }
    }
    let top = seen[body..].iter().chain(&lanes).fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
    if top == f32::NEG_INFINITY {
        seen.fill(0.0);
        return 1.0;
    }
    let weight = |s: f32| if s == f32::NEG_INFINITY { 0.0 } else { exp_f32(s - top) };
    let mut sums = [0.0f32; LANES];
    for chunk in seen[..body].chunks_exact_mut(LANES) {
        for l in 0..LANES {
            chunk[l] = weight(chunk[l]);
            sums[l] += chunk[l];
        }
    }
    let mut total = sums.iter().sum::<f32>();
    for s in &mut seen[body..] {
        *s = weight(*s);
        total += *s;
    }
    total
}

/// The inputs of a launch as raw parts, shared by the slots.
struct Parts<T> {
    q: *const T,
    k: *const T,
    v: *const T,
    strides: [[isize; 4]; 3],
    mask: Option<(*const T, Vec<i64>)>,
    /// Round the softmax weights to `T` before the second product (`settings::host`).
    round_weights: bool,
}

// SAFETY: the inputs are only read, by every slot of one launch, while the launch holds them.
unsafe impl<T> Sync for Parts<T> {}

/// One head (`index` over batch × query heads) into `dst` (`sq × dv`), with `scratch`
/// (inlined into `with_simd`'s AVX2 function, so the softmax loops use it).
#[inline(always)]
fn head<T: Float>(spec: &Sdpa, z: &AttentionShape, parts: &Parts<T>, index: usize, dst: &mut [T], scratch: &mut [f32]) {
    let (batch, h) = (index / z.hq, index % z.hq);
    let kv = h / (z.hq / z.hk.max(1));
    let [qs, ks, vs] = parts.strides;
    let tile = tile(z);
    let (scores, rest) = scratch.split_at_mut(tile * z.sk);
    let at =
        |ptr: *const T, s: [isize; 4], head: usize| ptr.wrapping_offset(batch as isize * s[0] + head as isize * s[1]);
    let (q, k, v) = (at(parts.q, qs, h), at(parts.k, ks, kv), at(parts.v, vs, kv));
    let widened = T::DTYPE != DType::Float32;
    let (qm, km, vm, mut out_tile) = if widened {
        let (qw, rest) = rest.split_at_mut(z.sq * z.d);
        let (kw, rest) = rest.split_at_mut(z.sk * z.d);
        let (vw, out_tile) = rest.split_at_mut(z.sk * z.dv);
        // SAFETY: the head's elements lie inside q, k, v (shapes checked by `sizes`).
        unsafe {
            widen_matrix(q, z.sq, z.d, (qs[2], qs[3]), qw);
            widen_matrix(k, z.sk, z.d, (ks[2], ks[3]), kw);
            widen_matrix(v, z.sk, z.dv, (vs[2], vs[3]), vw);
        }
        let dense = |m: &[f32], cols: usize| Matrix { ptr: m.as_ptr(), row_stride: cols as isize, col_stride: 1 };
        (dense(qw, z.d), dense(kw, z.d), dense(vw, z.dv), Some(out_tile))
    } else {
        let view = |ptr: *const T, s: [isize; 4]| Matrix { ptr: ptr.cast::<f32>(), row_stride: s[2], col_stride: s[3] };
        (view(q, qs), view(k, ks), view(v, vs), None)
    };
    let scale = spec.scale_for(z.d);
    for first in (0..z.sq).step_by(tile.max(1)) {
        let rows = tile.min(z.sq - first);
        let block = &mut scores[..rows * z.sk];
        let mut totals = [1.0f32; TILE_ROWS];
        // SAFETY: the matrices address the head's elements; block holds rows × sk values.
        unsafe { product(rows, z.sk, z.d, block.as_mut_ptr(), qm.rows_from(first), km.transposed(), scale) };
        for (r, row) in block.chunks_exact_mut(z.sk.max(1)).enumerate() {
            let i = first + r;
            let mask = parts.mask.as_ref().map(|(ptr, s)| MaskRow {
                ptr: ptr.wrapping_offset((batch as i64 * s[0] + h as i64 * s[1] + i as i64 * s[2]) as isize),
                stride: s[3] as isize,
            });
            totals[r] = softmax_row(row, z.visible(spec.causal, i), mask);
            if parts.round_weights {
                // the weights rounded to the inputs' dtype before they weigh the values
                row.iter_mut().for_each(|w| *w = T::from_f32(*w).to_f32());
            }
        }
        let weights = Matrix { ptr: block.as_ptr(), row_stride: z.sk as isize, col_stride: 1 };
        let rows_out = &mut dst[first * z.dv..(first + rows) * z.dv];
        match out_tile.as_deref_mut() {
            Some(out_tile) => {
                let out_tile = &mut out_tile[..rows * z.dv];
                // SAFETY: as above; out_tile holds rows × dv values.
                unsafe { product(rows, z.dv, z.sk, out_tile.as_mut_ptr(), weights, vm, 1.0) };
                for ((o, x), total) in rows_out.chunks_mut(z.dv).zip(out_tile.chunks(z.dv)).zip(totals) {
                    o.iter_mut().zip(x).for_each(|(o, &x)| *o = T::from_f32(x / total));
                }
            }
            None => {
                let rows_out = rows_out.as_mut_ptr().cast::<f32>();
                // SAFETY: T is float32 on this path; rows_out holds rows × dv values.
                unsafe { product(rows, z.dv, z.sk, rows_out, weights, vm, 1.0) };
                let rows_out = unsafe { std::slice::from_raw_parts_mut(rows_out, rows * z.dv) };
                for (o, total) in rows_out.chunks_mut(z.dv).zip(totals) {
                    o.iter_mut().for_each(|o| *o /= total);
                }
            }
        }
    }
}

fn run<T: Float>(spec: &Sdpa, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let strides = |i: usize| {
        let s = launch.inputs[i].strides();
        [s[0] as isize, s[1] as isize, s[2] as isize, s[3] as isize]
    };
    let mask = match launch.inputs.get(3) {
        Some(m) => {
            let target = [z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64];
            let strides =
                shape::broadcast_strides(m.shape(), m.strides(), &target).map_err(|e| invalid(e.to_string()))?;
            Some((m.data_ptr().cast::<T>() as *const T, strides))
        }
        None => None,
    };
    let input = |i: usize| launch.inputs[i].data_ptr().cast::<T>() as *const T;
    let round_weights = T::DTYPE != DType::Float32 && host::attention_operands() == host::AttentionOperands::Input;
    let parts = Parts {
        q: input(0),
        k: input(1),
        v: input(2),
        strides: [strides(0), strides(1), strides(2)],
        mask,
        round_weights,
    };
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let per_slot = slot_floats(&z, T::DTYPE != DType::Float32);
    let work = floats("sdpa", launch.workspace, slots(&z) * per_slot)?;
    if out.is_empty() {
        return Ok(());
    }
    // each slot: a contiguous range of heads, their output rows, and its scratch
    let mut parts_of_slots = Vec::with_capacity(slots(&z));
    let (mut out, mut work) = (out, work);
    for heads in threads::split(z.heads(), slots(&z)) {
        let (dst, rest) = std::mem::take(&mut out).split_at_mut(heads.len() * z.sq * z.dv);
        let (scratch, more) = std::mem::take(&mut work).split_at_mut(per_slot);
        parts_of_slots.push((heads, dst, scratch));
        (out, work) = (rest, more);
    }
    let per_head = z.sq * z.dv;
    threads::install(|| {
        parts_of_slots.into_par_iter().for_each(|(heads, dst, scratch)| {
            with_simd(
                #[inline(always)]
                || {
                    for (index, dst) in heads.zip(dst.chunks_exact_mut(per_head.max(1))) {
                        head(spec, &z, &parts, index, dst, scratch);
                    }
                },
            )
        })
    });
    Ok(())
}

/// The workspace of one launch: every slot's scratch.
fn workspace(spec: &Sdpa, inputs: &[TensorMeta]) -> Result<u64> {
    let z = spec.sizes(inputs)?;
    Ok((slots(&z).saturating_mul(slot_floats(&z, spec.dtype != DType::Float32)) as u64).saturating_mul(4))
}

fn launch(spec: &Sdpa, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, launch),
        DType::Float16 => run::<f16>(spec, launch),
        DType::Bfloat16 => run::<bf16>(spec, launch),
        other => Err(invalid(format!("sdpa: no loop for {other}"))),
    }
}

/// Registers `sdpa` on float32, float16 and bfloat16.
pub fn register(table: &mut LaunchTable) {
    table.register_with_workspace("sdpa", &crate::ops::spec::FLOATS, launch, workspace);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;

    #[test]
    fn equal_scores_average_the_visible_values() {
        // q and k zero: every score equal, so each row is the mean of the values it sees.
        let q = Tensor::from_vec(vec![0.0f32; 2 * 2], &[1, 1, 2, 2]).unwrap();
        let k = Tensor::from_vec(vec![0.0f32; 3 * 2], &[1, 1, 3, 2]).unwrap();
        let v = Tensor::from_vec(vec![1.0f32, 2.0, 4.0], &[1, 1, 3, 1]).unwrap();
        let full = call("sdpa", &Attrs::new(), &[&q, &k, &v]).unwrap().remove(0);
        assert_eq!(full.to_vec::<f32>().unwrap(), vec![7.0 / 3.0; 2]);
        let attrs = Attrs::new().with("causal", AttrValue::Bool(true));
        let causal = call("sdpa", &attrs, &[&q, &k, &v]).unwrap().remove(0);
        assert_eq!(causal.to_vec::<f32>().unwrap(), vec![1.5, 7.0 / 3.0]);
    }

    #[test]
    fn refuses_heads_that_do_not_group() {
        let q = Tensor::from_vec(vec![0.0f32; 3 * 2], &[1, 3, 1, 2]).unwrap();
        let k = Tensor::from_vec(vec![0.0f32; 2 * 2], &[1, 2, 1, 2]).unwrap();
        let err = call("sdpa", &Attrs::new(), &[&q, &k, &k]).unwrap_err().to_string();
        assert!(err.contains("sdpa") && err.contains("multiple of hk"), "{err}");
    }
}
