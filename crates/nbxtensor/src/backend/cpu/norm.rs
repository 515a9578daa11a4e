//! layer_norm, rms_norm and add_rms_norm on the host (`ops::spec::rows` says what they
//! compute). add_rms_norm rounds the sum to the dtype first, as `add` does, and normalizes
//! that rounded row as rms_norm would.
//! Statistics and the normalization are computed in float64, rounded once; the row sums in
//! eight interleaved float64 lanes (vectorized; the order depends on the row's length only).

use super::buffers::{read, with_simd, write};
use super::math::{Real, Stored};
use super::rows::par_rows;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Norm;
use half::{bf16, f16};

/// Lanes of the row sums: a fixed order of additions (it depends on the row's length only).
const LANES: usize = 8;

/// `Σ f(x)` over a row in float64, in [`LANES`] interleaved partial sums added at the end.
#[inline(always)]
fn lanes_sum<T: Stored>(row: &[T], f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; LANES];
    let chunks = row.chunks_exact(LANES);
    let tail: f64 = chunks.remainder().iter().map(|v| f(v.load().wide())).sum();
    for chunk in chunks {
        for l in 0..LANES {
            lanes[l] += f(chunk[l].load().wide());
        }
    }
    lanes.iter().sum::<f64>() + tail
}

/// Each row of `x` (rows of `weight.len()`) normalized into `out`: layer_norm's statistics
/// when `layer`, else rms_norm's; `bias` added when given.
fn normalize<T: Stored>(layer: bool, eps: f64, x: &[T], weight: &[T], bias: Option<&[T]>, out: &mut [T]) {
    let n = weight.len();
    par_rows(out, n, |first, rows| {
        // forced inline into with_simd's AVX2 function, so the row loops vectorize there
        with_simd(
            #[inline(always)]
            || {
                for (k, row) in rows.chunks_mut(n).enumerate() {
                    let input = &x[(first + k) * n..(first + k + 1) * n];
                    let mean = if layer { lanes_sum(input, |v| v) / n as f64 } else { 0.0 };
                    let square = lanes_sum(input, |v| (v - mean) * (v - mean)) / n as f64;
                    let scale = 1.0 / (square + eps).sqrt();
                    // every slice cut to n and the bias decided outside the loop: no bounds check
                    // or branch inside, so the loop vectorizes (it ran in scalar float64)
                    let (row, weight) = (&mut row[..n], &weight[..n]);
                    let scaled = |i: usize| (input[i].load().wide() - mean) * scale * weight[i].load().wide();
                    match bias {
                        Some(bias) => {
                            let bias = &bias[..n];
                            for i in 0..n {
                                row[i] = T::store(<T::Compute as Real>::of(scaled(i) + bias[i].load().wide()));
                            }
                        }
                        None => {
                            for i in 0..n {
                                row[i] = T::store(<T::Compute as Real>::of(scaled(i)));
                            }
                        }
                    }
                }
            },
        )
    });
}

fn run<T: Stored>(spec: &Norm, launch: &Launch<'_>) -> Result<()> {
    let x = read::<T>(&launch.inputs[0])?;
    if spec.residual {
        // add_rms_norm: the sums rounded as `add` rounds them (outputs[0]), then rms_norm of them
        let residual = read::<T>(&launch.inputs[1])?;
        let weight = read::<T>(&launch.inputs[2])?;
        // SAFETY: the outputs are this launch's own buffers.
        let sums = unsafe { write::<T>(&launch.outputs[0])? };
        let normed = unsafe { write::<T>(&launch.outputs[1])? };
        for ((s, a), b) in sums.iter_mut().zip(x.iter()).zip(residual.iter()) {
            *s = T::store(<T::Compute as Real>::of(a.load().wide() + b.load().wide()));
        }
        normalize(false, spec.eps, sums, &weight, None, normed);
        return Ok(());
    }
    let weight = read::<T>(&launch.inputs[1])?;
    let bias = if spec.layer { Some(read::<T>(&launch.inputs[2])?) } else { None };
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    normalize(spec.layer, spec.eps, &x, &weight, bias.as_deref(), out);
    Ok(())
}

fn launch(spec: &Norm, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, &launch),
        DType::Float16 => run::<f16>(spec, &launch),
        DType::Bfloat16 => run::<bf16>(spec, &launch),
        DType::Float64 => run::<f64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.name()))),
    }
}

/// Registers layer_norm and rms_norm on the floats.
pub fn register(table: &mut LaunchTable) {
    table.register("layer_norm", &crate::ops::spec::REALS, launch);
    table.register("rms_norm", &crate::ops::spec::REALS, launch);
    table.register("add_rms_norm", &crate::ops::spec::REALS, launch);
}

#[cfg(test)]
mod tests {
    use crate::kernel::Attrs;
    use crate::ops::call;
    use crate::tensor::Tensor;

    #[test]
    fn layer_norm_and_rms_norm_of_one_row() {
        let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[1, 4]).unwrap();
        let w = Tensor::from_vec(vec![1.0f64, 2.0, 1.0, 1.0], &[4]).unwrap();
        let b = Tensor::from_vec(vec![0.0f64, 0.0, 0.0, 10.0], &[4]).unwrap();
        let y = call("layer_norm", &Attrs::new(), &[&x, &w, &b]).unwrap().remove(0).to_vec::<f64>().unwrap();
        // mean 2.5, variance 1.25
        let s = 1.0 / (1.25f64 + 1e-5).sqrt();
        let want = [-1.5 * s, -1.0 * s, 0.5 * s, 1.5 * s + 10.0];
        assert!(y.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12), "{y:?}");
        let r = call("rms_norm", &Attrs::new(), &[&x, &w]).unwrap().remove(0).to_vec::<f64>().unwrap();
        let s = 1.0 / (7.5f64 + 1e-6).sqrt();
        assert!((r[1] - 4.0 * s).abs() < 1e-12, "{r:?}");
        let err = call("rms_norm", &Attrs::new(), &[&x, &b.narrow(0, 0, 3).unwrap()]).unwrap_err().to_string();
        assert!(err.contains("rms_norm: weight has shape [3]"), "{err}");
    }
}
