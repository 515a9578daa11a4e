//! What the CUDA tests share: the device (or the reason there is none, printed as the test's
//! skip notice), random inputs, and comparison against the CPU backend and a float64
//! reference (the CPU kernel run on float64 copies of the inputs).
#![allow(dead_code)] // each family uses a part

use nbxtensor::backend::cuda::memory as cuda;
use nbxtensor::kernel::Attrs;
use nbxtensor::memory::{Device, DeviceKind};
use nbxtensor::tensor::Tensor;
use nbxtensor::{ops, DType};

/// `cuda:0`, or `None` after printing why the test is skipped.
pub fn gpu(test: &str) -> Option<Device> {
    match cuda::driver() {
        Ok(_) => Some(Device { kind: DeviceKind::Cuda, index: 0 }),
        Err(why) => {
            eprintln!("{test}: skipped, no CUDA device: {why}");
            None
        }
    }
}

/// A small deterministic generator (xorshift64*), so that every run draws the same inputs.
pub struct Draw(u64);

impl Draw {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Draw {
        Draw(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }

    /// The next value in [0, 1).
    pub fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// `n` values uniform in [low, high).
    pub fn uniform(&mut self, n: usize, low: f64, high: f64) -> Vec<f64> {
        (0..n).map(|_| low + (high - low) * self.unit()).collect()
    }
}

/// A host tensor of `dtype` holding `values` (rounded to the dtype by the library's cast).
pub fn host(values: &[f64], shape: &[i64], dtype: DType) -> Tensor {
    let t = Tensor::from_vec(values.to_vec(), shape).unwrap();
    if dtype == DType::Float64 {
        return t;
    }
    cast(&t, dtype)
}

/// The library's cast of a host tensor.
pub fn cast(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        return t.clone();
    }
    let attrs = Attrs::new().with("dtype", nbxtensor::kernel::AttrValue::DType(dtype));
    ops::call("cast", &attrs, &[t]).unwrap().remove(0)
}

/// The elements of any float tensor (on any device) as float64.
pub fn values(t: &Tensor) -> Vec<f64> {
    let host = t.to(Device::CPU).unwrap();
    cast(&host.contiguous().unwrap(), DType::Float64).to_vec::<f64>().unwrap()
}

/// The relative tolerance a dtype's results are held to (its machine epsilon times a margin).
pub fn tolerance(dtype: DType) -> f64 {
    match dtype {
        DType::Float32 => 2e-5,
        DType::Float16 => 2e-3,
        DType::Bfloat16 => 1.6e-2,
        other => panic!("no tolerance for {other}"),
    }
}

/// Asserts `got` is within `rtol` of `want` elementwise (relative to the largest magnitude of
/// `want`, plus rtol per element), naming `what` and the first element that is not.
pub fn assert_close(what: &str, got: &[f64], want: &[f64], rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: lengths differ");
    let scale = want.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-30);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= rtol * (w.abs() + scale * 0.1) + 1e-30;
        assert!(ok, "{what}: element {i}: got {g}, want {w} (rtol {rtol})");
    }
}

/// Runs `op` with `attrs` on `inputs` (host tensors) on the GPU and on the CPU; returns the
/// values of output 0 of each, after checking the GPU output's device, dtype and shape.
pub fn run_two(device: Device, op: &str, attrs: &Attrs, inputs: &[Tensor]) -> (Vec<f64>, Vec<f64>) {
    let on_gpu: Vec<Tensor> = inputs.iter().map(|t| t.to(device).unwrap()).collect();
    let gpu_refs: Vec<&Tensor> = on_gpu.iter().collect();
    let gpu_out = ops::call(op, attrs, &gpu_refs).unwrap_or_else(|e| panic!("{op} on {device}: {e}")).remove(0);
    assert_eq!(gpu_out.device(), device, "{op}: the output lives on the inputs' device");
    let cpu_refs: Vec<&Tensor> = inputs.iter().collect();
    let cpu_out = ops::call(op, attrs, &cpu_refs).unwrap().remove(0);
    assert_eq!((gpu_out.dtype(), gpu_out.shape()), (cpu_out.dtype(), cpu_out.shape()), "{op}: output meta");
    (values(&gpu_out), values(&cpu_out))
}

/// Runs `op` with `attrs` on `inputs` (host tensors) three ways: on the GPU, on the CPU, and on
/// the CPU with every float input widened to float64; returns (gpu, cpu, reference) values of
/// output 0 and checks the GPU output's dtype and shape against the CPU's.
pub fn run_three(device: Device, op: &str, attrs: &Attrs, inputs: &[Tensor]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let on_gpu: Vec<Tensor> = inputs.iter().map(|t| t.to(device).unwrap()).collect();
    let gpu_refs: Vec<&Tensor> = on_gpu.iter().collect();
    let gpu_out = ops::call(op, attrs, &gpu_refs).unwrap_or_else(|e| panic!("{op} on {device}: {e}")).remove(0);
    assert_eq!(gpu_out.device(), device, "{op}: the output lives on the inputs' device");
    let cpu_refs: Vec<&Tensor> = inputs.iter().collect();
    let cpu_out = ops::call(op, attrs, &cpu_refs).unwrap().remove(0);
    assert_eq!((gpu_out.dtype(), gpu_out.shape()), (cpu_out.dtype(), cpu_out.shape()), "{op}: output meta");
    let wide: Vec<Tensor> =
        inputs.iter().map(|t| if t.dtype().is_float() { cast(t, DType::Float64) } else { t.clone() }).collect();
    let wide_refs: Vec<&Tensor> = wide.iter().collect();
    let reference = ops::call(op, attrs, &wide_refs).unwrap().remove(0);
    (values(&gpu_out), values(&cpu_out), values(&reference))
}
