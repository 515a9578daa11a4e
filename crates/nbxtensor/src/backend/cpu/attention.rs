//! Scaled dot-product attention, `sdpa(q, k, v[, mask])`, on the float dtypes (computed in
//! float32): `softmax(q·kᵀ·scale + mask) · v` per (batch, head).
//!
//! - `q [b, hq, sq, d]`, `k [b, hk, sk, d]`, `v [b, hk, sk, dv]`; `hq` a multiple of `hk`
//!   (grouped-query heads: query head `h` reads key/value head `h / (hq / hk)`);
//! - an optional 4th input, an additive mask of the same dtype broadcastable to
//!   `[b, hq, sq, sk]` (read through its strides, broadcast dims never copied);
//! - attributes `causal` (bool, default false: query `i` sees keys `j ≤ i + sk − sq`, the
//!   bottom-right alignment of a KV cache) and `scale` (float, default `1/sqrt(d)`).
//!
//! The softmax subtracts each row's maximum; a row with no visible key (causal with
//! `sq > sk`, or a mask of −∞ everywhere) is all zeros. Work runs in parallel over
//! (batch, head); each of them owns a slice of the declared workspace, `sk + dv` float32
//! values (one score row and one output accumulator), `4·b·hq·(sk + dv)` bytes in all.

use super::buffers::{read, write, Float, FLOATS};
use super::widen::floats;
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::settings::threads;
use crate::shape;
use half::{bf16, f16};
use rayon::prelude::*;

/// Sizes of a call.
#[derive(Clone, Copy)]
struct Sizes {
    b: usize,
    hq: usize,
    hk: usize,
    sq: usize,
    sk: usize,
    d: usize,
    dv: usize,
}

impl Sizes {
    /// Keys query `i` sees: `0..visible(i)`.
    fn visible(&self, causal: bool, i: usize) -> usize {
        if causal {
            (i + 1 + self.sk).saturating_sub(self.sq).min(self.sk)
        } else {
            self.sk
        }
    }
}

struct Sdpa {
    dtype: DType,
    causal: bool,
    scale: Option<f64>,
}

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// A float32 dot product in eight fixed lanes (vectorizes; the order depends on the length
/// only).
#[inline]
fn dot<T: Float>(a: &[T], b: &[T]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..8 {
            lanes[l] += x[l].to_f32() * y[l].to_f32();
        }
    }
    let tail: f32 = ra.iter().zip(rb).map(|(x, y)| x.to_f32() * y.to_f32()).sum();
    lanes.iter().sum::<f32>() + tail
}

impl Sdpa {
    fn sizes(&self, inputs: &[TensorMeta]) -> Result<Sizes> {
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
        let sizes = Sizes { b: u(q[0]), hq: u(q[1]), hk: u(k[1]), sq: u(q[2]), sk: u(k[2]), d: u(q[3]), dv: u(v[3]) };
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

    fn scale(&self, d: usize) -> f32 {
        self.scale.unwrap_or(1.0 / (d as f64).sqrt()) as f32
    }

    fn run<T: Float>(&self, launch: Launch<'_>) -> Result<()> {
        let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
        let z = self.sizes(&metas)?;
        let (q, k, v) = (read::<T>(&launch.inputs[0])?, read::<T>(&launch.inputs[1])?, read::<T>(&launch.inputs[2])?);
        let mask = match launch.inputs.get(3) {
            Some(m) => {
                let target = [z.b as i64, z.hq as i64, z.sq as i64, z.sk as i64];
                let strides =
                    shape::broadcast_strides(m.shape(), m.strides(), &target).map_err(|e| invalid(e.to_string()))?;
                Some((m.data_ptr() as usize, strides))
            }
            None => None,
        };
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        let work = floats("sdpa", launch.workspace, z.b * z.hq * (z.sk + z.dv))?;
        if out.is_empty() {
            return Ok(());
        }
        let (scale, causal, group) = (self.scale(z.d), self.causal, z.hq / z.hk.max(1));
        let head = |index: usize, dst: &mut [T], scratch: &mut [f32]| {
            let (batch, h) = (index / z.hq, index % z.hq);
            let kv = (batch * z.hk + h / group) * z.sk;
            let (scores, acc) = scratch.split_at_mut(z.sk);
            for i in 0..z.sq {
                let query = &q[(index * z.sq + i) * z.d..][..z.d];
                let visible = z.visible(causal, i);
                let mut top = f32::NEG_INFINITY;
                for (j, score) in scores[..visible].iter_mut().enumerate() {
                    let key = &k[(kv + j) * z.d..][..z.d];
                    let mut s = dot(query, key) * scale;
                    if let Some((ptr, strides)) = &mask {
                        let at = batch as i64 * strides[0]
                            + h as i64 * strides[1]
                            + i as i64 * strides[2]
                            + j as i64 * strides[3];
                        // SAFETY: broadcast strides address elements of the mask tensor.
                        s += unsafe { *(*ptr as *const T).offset(at as isize) }.to_f32();
                    }
                    *score = s;
                    top = top.max(s);
                }
                acc.fill(0.0);
                let row = &mut dst[i * z.dv..][..z.dv];
                if top == f32::NEG_INFINITY {
                    row.iter_mut().for_each(|o| *o = T::from_f32(0.0));
                    continue;
                }
                let mut total = 0.0f32;
                for (j, score) in scores[..visible].iter().enumerate() {
                    let p = (score - top).exp();
                    total += p;
                    let value = &v[(kv + j) * z.dv..][..z.dv];
                    acc.iter_mut().zip(value).for_each(|(a, x)| *a += p * x.to_f32());
                }
                row.iter_mut().zip(acc.iter()).for_each(|(o, a)| *o = T::from_f32(a / total));
            }
        };
        threads::install(|| {
            out.par_chunks_mut(z.sq * z.dv)
                .zip(work.par_chunks_mut(z.sk + z.dv))
                .enumerate()
                .for_each(|(index, (dst, scratch))| head(index, dst, scratch))
        });
        Ok(())
    }
}

impl Kernel for Sdpa {
    fn key(&self) -> String {
        let scale = self.scale.map(|s| format!(":scale{s}")).unwrap_or_default();
        format!("sdpa:{}{}{}", self.dtype.launch_key(), if self.causal { ":causal" } else { "" }, scale)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let z = self.sizes(inputs)?;
        let out = TensorMeta::new(self.dtype, &[z.b as i64, z.hq as i64, z.sq as i64, z.dv as i64]);
        let pairs: u64 = (0..z.sq).map(|i| z.visible(self.causal, i) as u64).sum();
        let masked = u64::from(inputs.len() == 4);
        // Per visible score: the dot (2d), the scale, the mask, exp, the sum, the weighted row
        // of v (2dv); per query row, dv divisions.
        let per_head = pairs * (2 * z.d as u64 + 3 + masked + 2 * z.dv as u64) + (z.sq * z.dv) as u64;
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        let mut cost = Cost::simple(vec![out], read, (z.b * z.hq) as u64 * per_head)?;
        cost.workspace = 4 * (z.b * z.hq * (z.sk + z.dv)) as u64;
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(launch),
            DType::Float16 => self.run::<f16>(launch),
            DType::Bfloat16 => self.run::<bf16>(launch),
            other => Err(invalid(format!("sdpa: no loop for {other}"))),
        }
    }
}

/// Registers `sdpa` on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("sdpa", &FLOATS, |dtype, attrs: &Attrs| {
        attrs.only("sdpa", &["causal", "scale"])?;
        let scale = match attrs.iter().any(|(name, _)| name == "scale") {
            true => Some(attrs.float("sdpa", "scale", None)?),
            false => None,
        };
        Ok(Box::new(Sdpa { dtype, causal: attrs.bool("sdpa", "causal", Some(false))?, scale }))
    });
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
