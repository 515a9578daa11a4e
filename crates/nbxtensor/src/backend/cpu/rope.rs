//! Rotary position embedding, `rope(x, cos, sin)` with the attribute `interleaved` (bool,
//! default false), on the float dtypes (computed in float32).
//!
//! Layout (Hugging Face Llama): `x` is `[..., heads, seq, head_dim]` (typically
//! `[batch, heads, seq, head_dim]`); `cos` and `sin` are `[seq, head_dim / 2]` of x's dtype,
//! row `p` holding the angles of position `p`. Each pair `(x1, x2)` of a row at position `p`
//! becomes `(x1·c − x2·s, x2·c + x1·s)` with `c, s` the pair's entries of row `p`:
//!
//! - `interleaved = false` (GPT-NeoX, HF Llama): pairs `(i, i + head_dim/2)`;
//! - `interleaved = true` (GPT-J, Meta Llama): pairs `(2i, 2i + 1)`.
//!
//! Declared flops: 6 per pair (3 per element); the output may take over x's memory.

use super::buffers::{read, write, Float, FLOATS};
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::settings::threads;
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows (of head_dim values) one task rotates at least.
const ROWS_PER_TASK: usize = 64;

struct Rope {
    dtype: DType,
    interleaved: bool,
}

impl Rope {
    /// `(seq, head_dim)` of a valid call.
    fn check(&self, inputs: &[TensorMeta]) -> Result<(usize, usize)> {
        let [x, cos, sin] = inputs else {
            return Err(KernelError::Invalid(format!("rope: takes 3 inputs (x, cos, sin), got {}", inputs.len())));
        };
        if let Some(other) = [cos, sin].into_iter().find(|m| m.dtype != x.dtype) {
            return Err(KernelError::Invalid(format!(
                "rope: cos and sin must be {} like x, got {}",
                x.dtype, other.dtype
            )));
        }
        let nd = x.shape.len();
        if nd < 3 {
            return Err(KernelError::Invalid(format!(
                "rope: x must be [..., heads, seq, head_dim], got {:?}",
                x.shape
            )));
        }
        let (seq, dim) = (x.shape[nd - 2], x.shape[nd - 1]);
        if dim % 2 != 0 {
            return Err(KernelError::Invalid(format!("rope: head_dim {dim} of x {:?} is odd", x.shape)));
        }
        for (name, table) in [("cos", cos), ("sin", sin)] {
            if table.shape != [seq, dim / 2] {
                return Err(KernelError::Invalid(format!(
                    "rope: {name} must be [seq, head_dim/2] = [{seq}, {}] for x {:?}, got {:?}",
                    dim / 2,
                    x.shape,
                    table.shape
                )));
            }
        }
        Ok((seq as usize, dim as usize))
    }

    fn run<T: Float>(&self, launch: &Launch<'_>) -> Result<()> {
        let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
        let (seq, dim) = self.check(&metas)?;
        let x = read::<T>(&launch.inputs[0])?;
        let cos = read::<T>(&launch.inputs[1])?;
        let sin = read::<T>(&launch.inputs[2])?;
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        if dim == 0 || out.is_empty() {
            return Ok(());
        }
        let half = dim / 2;
        let (cos, sin): (Vec<f32>, Vec<f32>) =
            (cos.iter().map(|v| v.to_f32()).collect(), sin.iter().map(|v| v.to_f32()).collect());
        let interleaved = self.interleaved;
        let rotate = |row: usize, dst: &mut [T]| {
            let src = &x[row * dim..(row + 1) * dim];
            let position = row % seq;
            let (c, s) = (&cos[position * half..][..half], &sin[position * half..][..half]);
            for i in 0..half {
                let (a, b) = if interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                let (x1, x2) = (src[a].to_f32(), src[b].to_f32());
                dst[a] = T::from_f32(x1 * c[i] - x2 * s[i]);
                dst[b] = T::from_f32(x2 * c[i] + x1 * s[i]);
            }
        };
        threads::install(|| {
            out.par_chunks_mut(dim).with_min_len(ROWS_PER_TASK).enumerate().for_each(|(row, dst)| rotate(row, dst))
        });
        Ok(())
    }
}

impl Kernel for Rope {
    fn key(&self) -> String {
        format!("rope:{}{}", self.dtype.launch_key(), if self.interleaved { ":interleaved" } else { "" })
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        self.check(inputs)?;
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        let mut cost = Cost::simple(vec![inputs[0].clone()], read, 3 * inputs[0].numel()?)?;
        cost.in_place = vec![(0, 0)];
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(&launch),
            DType::Float16 => self.run::<f16>(&launch),
            DType::Bfloat16 => self.run::<bf16>(&launch),
            other => Err(KernelError::Invalid(format!("rope: no loop for {other}"))),
        }
    }
}

/// Registers `rope` on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("rope", &FLOATS, |dtype, attrs: &Attrs| {
        attrs.only("rope", &["interleaved"])?;
        Ok(Box::new(Rope { dtype, interleaved: attrs.bool("rope", "interleaved", Some(false))? }))
    });
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;

    #[test]
    fn a_quarter_turn_maps_each_pair_as_the_complex_unit_does() {
        // x = [1, 2, 3, 4] at one position; cos 0, sin 1 rotates (x1, x2) to (-x2, x1).
        let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[1, 1, 4]).unwrap();
        let cos = Tensor::from_vec(vec![0.0f32, 0.0], &[1, 2]).unwrap();
        let sin = Tensor::from_vec(vec![1.0f32, 1.0], &[1, 2]).unwrap();
        let half = call("rope", &Attrs::new(), &[&x, &cos, &sin]).unwrap().remove(0);
        assert_eq!(half.to_vec::<f32>().unwrap(), vec![-3.0, -4.0, 1.0, 2.0]);
        let attrs = Attrs::new().with("interleaved", AttrValue::Bool(true));
        let pairs = call("rope", &attrs, &[&x, &cos, &sin]).unwrap().remove(0);
        assert_eq!(pairs.to_vec::<f32>().unwrap(), vec![-2.0, 1.0, -4.0, 3.0]);
    }

    #[test]
    fn refuses_tables_of_the_wrong_shape() {
        let x = Tensor::from_vec(vec![0.0f32; 8], &[1, 2, 4]).unwrap();
        let cos = Tensor::from_vec(vec![0.0f32; 2], &[1, 2]).unwrap();
        let err = call("rope", &Attrs::new(), &[&x, &cos, &cos]).unwrap_err().to_string();
        assert!(err.contains("rope: cos must be [seq, head_dim/2] = [2, 2]"), "{err}");
    }
}
