//! softmax and log_softmax on the host (`ops::spec::rows` says what they compute). The input
//! is seen as `(A, R, B)` with the axis as R; each `a` slab is one task; the last axis of
//! float32 takes a vectorized row loop.

use super::buffers::{read, with_simd, write};
use super::exp::exp_f32;
use super::math::{Real, Stored};
use super::rows::par_rows;
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::rows::Softmax;
use half::{bf16, f16};

fn run<T: Stored>(spec: &Softmax, launch: &Launch<'_>) -> Result<()> {
    let input = &launch.inputs[0];
    let (_, r, b) = spec.split(input.shape())?;
    let x = read::<T>(input)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&launch.outputs[0])? };
    let log = spec.log;
    if b == 1 && spec.dtype == DType::Float32 {
        // the last axis of float32: rows are contiguous; one vectorized exponential each
        let (x, out) = (cast_f32(&x), cast_f32_mut(out));
        par_rows(out, r, |first, rows| {
            for (row, y) in rows.chunks_mut(r).enumerate() {
                with_simd(|| last_axis_row(&x[(first + row) * r..][..r], y, log));
            }
        });
        return Ok(());
    }
    par_rows(out, r * b, |first, slabs| {
        for (s, slab) in slabs.chunks_mut(r * b).enumerate() {
            let base = (first + s) * r * b;
            for j in 0..b {
                let at = |i: usize| x[base + i * b + j].load();
                let max =
                    (0..r).map(at).fold(<T::Compute as Real>::of(f64::NEG_INFINITY), |m, v| if v > m { v } else { m });
                let sum: f64 = (0..r).map(|i| (at(i) - max).exp().wide()).sum();
                let log_sum = sum.ln();
                for i in 0..r {
                    let shifted = at(i) - max;
                    let value = if log { shifted.wide() - log_sum } else { shifted.exp().wide() / sum };
                    slab[i * b + j] = T::store(<T::Compute as Real>::of(value));
                }
            }
        }
    });
    Ok(())
}

/// The float32 view of a float32 kernel's input (the dtype was checked by dispatch).
fn cast_f32<T: Stored>(x: &[T]) -> &[f32] {
    assert_eq!(std::mem::size_of::<T>(), 4, "the float32 path runs on float32");
    // SAFETY: T is f32 here (the kernel's dtype is float32): same size, alignment and bits.
    unsafe { std::slice::from_raw_parts(x.as_ptr().cast::<f32>(), x.len()) }
}

/// The float32 view of a float32 kernel's output.
fn cast_f32_mut<T: Stored>(x: &mut [T]) -> &mut [f32] {
    assert_eq!(std::mem::size_of::<T>(), 4, "the float32 path runs on float32");
    // SAFETY: as in `cast_f32`.
    unsafe { std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<f32>(), x.len()) }
}

/// Lanes of the row sums: a fixed order of additions, whatever the thread count.
const LANES: usize = 16;

/// Softmax (or log-softmax) of one contiguous float32 row: the max, one exponential per
/// element written to `y`, the sum in float64 lanes, then one scaling pass.
#[inline(always)]
fn last_axis_row(x: &[f32], y: &mut [f32], log: bool) {
    // a loop, not an iterator's fold (a function of its own, compiled for the baseline)
    let mut max = f32::NEG_INFINITY;
    for &v in x {
        if v > max {
            max = v;
        }
    }
    let mut lanes = [0.0f64; LANES];
    let (body, tail) = (x.len() / LANES * LANES, x.len() % LANES);
    for (xs, ys) in x[..body].chunks_exact(LANES).zip(y[..body].chunks_exact_mut(LANES)) {
        for lane in 0..LANES {
            let e = exp_f32(xs[lane] - max);
            ys[lane] = e;
            lanes[lane] += e as f64;
        }
    }
    for i in 0..tail {
        let e = exp_f32(x[body + i] - max);
        y[body + i] = e;
        lanes[i] += e as f64;
    }
    let sum: f64 = lanes.iter().sum();
    if log {
        let shift = max as f64 + sum.ln();
        for (out, &v) in y.iter_mut().zip(x) {
            *out = (v as f64 - shift) as f32;
        }
    } else {
        let scale = (1.0 / sum) as f32;
        for out in y.iter_mut() {
            *out *= scale;
        }
    }
}

fn launch(spec: &Softmax, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, &launch),
        DType::Float16 => run::<f16>(spec, &launch),
        DType::Bfloat16 => run::<bf16>(spec, &launch),
        DType::Float64 => run::<f64>(spec, &launch),
        other => Err(KernelError::Invalid(format!("{}: no loop for {other}", spec.name()))),
    }
}

/// Registers softmax and log_softmax on the floats.
pub fn register(table: &mut LaunchTable) {
    table.register("softmax", &crate::ops::spec::REALS, launch);
    table.register("log_softmax", &crate::ops::spec::REALS, launch);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;

    #[test]
    fn softmax_is_stable_for_large_inputs_along_any_axis() {
        let x = Tensor::from_vec(vec![1000.0f32, 1000.0, 1001.0, 999.0], &[2, 2]).unwrap();
        let by_rows = call("softmax", &Attrs::new(), &[&x]).unwrap().remove(0).to_vec::<f32>().unwrap();
        let e2 = 2.0f64.exp();
        let want = [0.5, 0.5, (e2 / (1.0 + e2)) as f32, (1.0 / (1.0 + e2)) as f32];
        for (g, w) in by_rows.iter().zip(want) {
            assert!((g - w).abs() < 1e-6, "{by_rows:?}");
        }
        let attrs = Attrs::new().with("axis", AttrValue::Int(0));
        let by_cols = call("log_softmax", &attrs, &[&x]).unwrap().remove(0).to_vec::<f32>().unwrap();
        let l = (1.0 + 1.0f64.exp()).ln() as f32;
        assert!((by_cols[0] - (-l)).abs() < 1e-5 && (by_cols[2] - (1.0 - l)).abs() < 1e-5, "{by_cols:?}");
    }
}
