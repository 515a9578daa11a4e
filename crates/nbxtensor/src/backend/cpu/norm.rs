//! layer_norm, rms_norm, add_rms_norm and add_layer_norm on the host (`ops::spec::rows` says
//! what they compute). add_rms_norm and add_layer_norm round each row's sum to the dtype first,
//! as `add` does, and normalize that rounded row as rms_norm or layer_norm would, in one pass.
//! Statistics and the normalization are computed in float64, rounded once; the row sums in
//! eight interleaved float64 lanes (vectorized; the order depends on the row's length only).

use super::buffers::{read, with_simd, write};
use super::math::{Real, Stored};
use super::rows::{par_row_pairs, par_rows};
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

/// One row of `input` normalized into `row` (both of `weight.len()`): layer_norm's statistics
/// when `layer`, else rms_norm's; `bias` added when given. Inlined into the callers' SIMD
/// functions, so its loops vectorize there.
#[inline(always)]
fn normalize_row<T: Stored>(layer: bool, eps: f64, input: &[T], weight: &[T], bias: Option<&[T]>, row: &mut [T]) {
    let n = weight.len();
    let mean = if layer { lanes_sum(input, |v| v) / n as f64 } else { 0.0 };
    let square = lanes_sum(input, |v| (v - mean) * (v - mean)) / n as f64;
    let scale = 1.0 / (square + eps).sqrt();
    // every slice cut to n and the bias decided outside the loop: no bounds check or branch
    // inside, so the loop vectorizes (it ran in scalar float64)
    let (input, row) = (&input[..n], &mut row[..n]);
    let scaled = |i: usize| (input[i].load().wide() - mean) * scale * weight[i].load().wide();
    match bias {
        Some(bias) => {
            let bias = &bias[..n];
            for i in 0..n {
                row[i] = T::store(<T::Compute as Real>::of(scaled(i) + bias[i].load().wide()));
            }
        }
        None => {
            for (i, out) in row.iter_mut().enumerate() {
                *out = T::store(<T::Compute as Real>::of(scaled(i)));
            }
        }
    }
}

/// Each row of `x` (rows of `weight.len()`) normalized into `out` (see [`normalize_row`]).
fn normalize<T: Stored>(layer: bool, eps: f64, x: &[T], weight: &[T], bias: Option<&[T]>, out: &mut [T]) {
    let n = weight.len();
    par_rows(out, n, |first, rows| {
        with_simd(
            #[inline(always)]
            || {
                for (k, row) in rows.chunks_mut(n).enumerate() {
                    normalize_row(layer, eps, &x[(first + k) * n..(first + k + 1) * n], weight, bias, row);
                }
            },
        )
    });
}

/// add_rms_norm and add_layer_norm: each row of `x + residual` rounded as `add` rounds it
/// into `sums`, then normalized from there into `out` while the row is in cache (one pass
/// over memory; the same values as [`normalize`] of the finished sums).
fn add_normalize<T: Stored>(
    layer: bool,
    eps: f64,
    (x, residual): (&[T], &[T]),
    weight: &[T],
    bias: Option<&[T]>,
    sums: &mut [T],
    out: &mut [T],
) {
    let n = weight.len();
    par_row_pairs(sums, out, n, |first, sums, rows| {
        with_simd(
            #[inline(always)]
            || {
                for (k, (sum, row)) in sums.chunks_mut(n).zip(rows.chunks_mut(n)).enumerate() {
                    let at = (first + k) * n;
                    let (a, b, sum) = (&x[at..at + n], &residual[at..at + n], &mut sum[..n]);
                    for i in 0..n {
                        sum[i] = T::store(<T::Compute as Real>::of(a[i].load().wide() + b[i].load().wide()));
                    }
                    normalize_row(layer, eps, sum, weight, bias, row);
                }
            },
        )
    });
}

fn run<T: Stored>(spec: &Norm, launch: &Launch<'_>) -> Result<()> {
    let x = read::<T>(&launch.inputs[0])?;
    if spec.residual {
        // (x, residual, weight[, bias]) → (the sums rounded as `add` rounds them, their norm)
        let residual = read::<T>(&launch.inputs[1])?;
        let weight = read::<T>(&launch.inputs[2])?;
        let bias = if spec.layer { Some(read::<T>(&launch.inputs[3])?) } else { None };
        // SAFETY: the outputs are this launch's own buffers.
        let sums = unsafe { write::<T>(&launch.outputs[0])? };
        let normed = unsafe { write::<T>(&launch.outputs[1])? };
        add_normalize(spec.layer, spec.eps, (&x, &residual), &weight, bias.as_deref(), sums, normed);
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

/// Registers layer_norm, rms_norm, add_rms_norm and add_layer_norm on the floats.
pub fn register(table: &mut LaunchTable) {
    for op in ["layer_norm", "rms_norm", "add_rms_norm", "add_layer_norm"] {
        table.register(op, &crate::ops::spec::REALS, launch);
    }
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
        let want = [-1.5 * s, -s, 0.5 * s, 1.5 * s + 10.0];
        assert!(y.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-12), "{y:?}");
        let r = call("rms_norm", &Attrs::new(), &[&x, &w]).unwrap().remove(0).to_vec::<f64>().unwrap();
        let s = 1.0 / (7.5f64 + 1e-6).sqrt();
        assert!((r[1] - 4.0 * s).abs() < 1e-12, "{r:?}");
        let err = call("rms_norm", &Attrs::new(), &[&x, &b.narrow(0, 0, 3).unwrap()]).unwrap_err().to_string();
        assert!(err.contains("rms_norm: weight has shape [3]"), "{err}");
    }
}
