//! rope on the host (`ops::spec::rows` says what it computes), computed in float32, rows in
//! parallel on the pool.

use super::buffers::{read, write, Float};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::rows::Rope;
use crate::settings::threads;
use half::{bf16, f16};
use rayon::prelude::*;

/// Rows (of head_dim values) one task rotates at least.
const ROWS_PER_TASK: usize = 64;

fn run<T: Float>(spec: &Rope, launch: &Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let (seq, dim) = spec.check(&metas)?;
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
    let interleaved = spec.interleaved;
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

fn launch(spec: &Rope, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, &launch),
        DType::Float16 => run::<f16>(spec, &launch),
        DType::Bfloat16 => run::<bf16>(spec, &launch),
        other => Err(KernelError::Invalid(format!("rope: no loop for {other}"))),
    }
}

/// Registers `rope` on float32, float16 and bfloat16.
pub fn register(table: &mut LaunchTable) {
    table.register("rope", &crate::ops::spec::FLOATS, launch);
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
