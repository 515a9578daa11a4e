//! Normalizations over the last dim, on the float dtypes: `layer_norm(x, weight, bias)`
//! (attribute `eps`, default 1e-5: `(x - mean) / sqrt(var + eps) * weight + bias`, the biased
//! variance) and `rms_norm(x, weight)` (attribute `eps`, default 1e-6:
//! `x / sqrt(mean(x²) + eps) * weight`). weight and bias have the last dim's extent and x's
//! dtype. Statistics and the normalization are computed in float64, rounded once; the row sums
//! in eight interleaved float64 lanes (vectorized; the order depends on the row's length only).

use super::buffers::{read, with_simd, write};
use super::math::{Real, Stored, REALS};
use super::rows::par_rows;
use crate::backend::CapabilityTable;
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
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

struct Norm {
    /// layer_norm (true) or rms_norm.
    layer: bool,
    dtype: DType,
    eps: f64,
}

impl Norm {
    fn name(&self) -> &'static str {
        if self.layer {
            "layer_norm"
        } else {
            "rms_norm"
        }
    }

    fn run<T: Stored>(&self, launch: &Launch<'_>) -> Result<()> {
        let x = read::<T>(&launch.inputs[0])?;
        let weight = read::<T>(&launch.inputs[1])?;
        let bias = if self.layer { Some(read::<T>(&launch.inputs[2])?) } else { None };
        let n = weight.len();
        // SAFETY: the output is this launch's own buffer.
        let out = unsafe { write::<T>(&launch.outputs[0])? };
        let (layer, eps) = (self.layer, self.eps);
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
                        for (i, o) in row.iter_mut().enumerate() {
                            let mut value = (input[i].load().wide() - mean) * scale * weight[i].load().wide();
                            if let Some(bias) = &bias {
                                value += bias[i].load().wide();
                            }
                            *o = T::store(<T::Compute as Real>::of(value));
                        }
                    }
                },
            )
        });
        Ok(())
    }
}

impl Kernel for Norm {
    fn key(&self) -> String {
        format!("{}:{}:eps={:e}", self.name(), self.dtype.launch_key(), self.eps)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let name = self.name();
        let (wanted, roles) = if self.layer { (3, "x, weight, bias") } else { (2, "x, weight") };
        if inputs.len() != wanted {
            return Err(KernelError::Invalid(format!("{name}: takes {wanted} inputs ({roles}), got {}", inputs.len())));
        }
        let x = &inputs[0];
        let Some(&n) = x.shape.last() else {
            return Err(KernelError::Invalid(format!("{name}: x is 0-d; it normalizes over its last dim")));
        };
        for (role, meta) in roles.split(", ").zip(inputs) {
            if meta.dtype != self.dtype {
                return Err(KernelError::Invalid(format!(
                    "{name}: {role} is {}, the kernel serves {}",
                    meta.dtype, self.dtype
                )));
            }
            if role != "x" && meta.shape != [n] {
                return Err(KernelError::Invalid(format!(
                    "{name}: {role} has shape {:?}, x's last dim is {n}: it must be ({n},)",
                    meta.shape
                )));
            }
        }
        let read = inputs.iter().map(TensorMeta::bytes).sum::<Result<u64>>()?;
        // per element: statistics (2 or 3), normalize, scale (and shift)
        let per_element = if self.layer { 7 } else { 5 };
        Cost::simple(vec![x.clone()], read, x.numel()? * per_element)
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

fn build(layer: bool, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    let name = if layer { "layer_norm" } else { "rms_norm" };
    attrs.only(name, &["eps"])?;
    let eps = attrs.float(name, "eps", Some(if layer { 1e-5 } else { 1e-6 }))?;
    if !(eps >= 0.0 && eps.is_finite()) {
        return Err(KernelError::Invalid(format!("{name}: eps must be finite and at least 0, got {eps}")));
    }
    Ok(Box::new(Norm { layer, dtype, eps }))
}

/// Registers layer_norm and rms_norm on the float dtypes.
pub fn register(table: &mut CapabilityTable) {
    table.register("layer_norm", &REALS, |d, a| build(true, d, a));
    table.register("rms_norm", &REALS, |d, a| build(false, d, a));
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
