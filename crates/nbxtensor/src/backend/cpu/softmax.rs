//! softmax and log_softmax along one axis (attribute `axis`, default -1; negatives from the
//! end), on the float dtypes. Stable: the axis' maximum is subtracted before `exp`; the sum of
//! exponentials accumulates in float64. The input is seen as `(A, R, B)` with the axis as R;
//! each `a` slab is one task.

use super::buffers::{read, with_simd, write};
use super::exp::exp_f32;
use super::math::{Real, Stored, REALS};
use super::rows::par_rows;
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use half::{bf16, f16};

struct Softmax {
    log: bool,
    dtype: DType,
    axis: i64,
}

impl Softmax {
    fn name(&self) -> &'static str {
        if self.log {
            "log_softmax"
        } else {
            "softmax"
        }
    }

    /// `(A, R, B)` of `shape` around the axis.
    fn split(&self, shape: &[i64]) -> Result<(usize, usize, usize)> {
        let ndim = shape.len() as i64;
        let axis = if self.axis < 0 { self.axis + ndim } else { self.axis };
        if axis < 0 || axis >= ndim {
            return Err(KernelError::Invalid(format!(
                "{}: axis {} is out of range for shape {shape:?}",
                self.name(),
                self.axis
            )));
        }
        let axis = axis as usize;
        let product = |dims: &[i64]| dims.iter().product::<i64>() as usize;
        Ok((product(&shape[..axis]), shape[axis] as usize, product(&shape[axis + 1..])))
    }

    fn run<T: Stored>(&self, launch: &Launch<'_>) -> Result<()> {
        let input = &launch.inputs[0];
        let (_, r, b) = self.split(input.shape())?;
        let x = read::<T>(input)?;
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        let log = self.log;
        if b == 1 && self.dtype == DType::Float32 {
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
                        (0..r)
                            .map(at)
                            .fold(<T::Compute as Real>::of(f64::NEG_INFINITY), |m, v| if v > m { v } else { m });
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
    let max = x.iter().fold(f32::NEG_INFINITY, |m, &v| if v > m { v } else { m });
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

impl Kernel for Softmax {
    fn key(&self) -> String {
        format!("{}:{}:axis={}", self.name(), self.dtype.launch_key(), self.axis)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [input] = inputs else {
            return Err(KernelError::Invalid(format!("{}: takes one input, got {}", self.name(), inputs.len())));
        };
        if input.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "{}: input is {}, the kernel serves {}",
                self.name(),
                input.dtype,
                self.dtype
            )));
        }
        self.split(&input.shape)?;
        // per element: max, subtract, exp, add; then subtract, exp (or log), divide
        Cost::simple(vec![input.clone()], input.bytes()?, input.numel()? * 7)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match self.dtype {
            DType::Float32 => self.run::<f32>(&launch),
            DType::Float16 => self.run::<f16>(&launch),
            DType::Bfloat16 => self.run::<bf16>(&launch),
            DType::Float64 => self.run::<f64>(&launch),
            other => Err(KernelError::Invalid(format!("{}: no loop for {other}", self.name()))),
        }
    }
}

fn build(log: bool, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let name = if log { "log_softmax" } else { "softmax" };
    attrs.only(name, &["axis"])?;
    Ok(Box::new(Softmax { log, dtype, axis: attrs.int(name, "axis", Some(-1))? }))
}

/// Registers softmax and log_softmax on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("softmax", &REALS, |d, a| build(false, d, a));
    table.register("log_softmax", &REALS, |d, a| build(true, d, a));
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
