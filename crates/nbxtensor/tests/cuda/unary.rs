//! The unary kernels on the GPU against the CPU backend and a float64 reference; skipped,
//! saying so, where there is no CUDA device.

use super::common::*;
use nbxtensor::kernel::Attrs;
use nbxtensor::DType;

const OPS: [&str; 12] =
    ["neg", "abs", "exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "silu", "gelu", "gelu_tanh", "relu"];

#[test]
fn unary_ops_match_the_cpu_and_float64() {
    let Some(device) = gpu("unary_ops_match_the_cpu_and_float64") else { return };
    let mut draw = Draw::new(7);
    for op in OPS {
        // positive inputs where the op needs them
        let (low, high) = if matches!(op, "log" | "sqrt" | "rsqrt") { (0.1, 4.0) } else { (-4.0, 4.0) };
        for dtype in [DType::Float32, DType::Float16, DType::Bfloat16] {
            // 4099 elements: the vector body and a scalar tail
            let x = host(&draw.uniform(4099, low, high), &[4099], dtype);
            let (gpu, cpu, reference) = run_three(device, op, &Attrs::new(), &[x]);
            assert_close(&format!("{op} {dtype} vs float64"), &gpu, &reference, tolerance(dtype));
            assert_close(&format!("{op} {dtype} vs cpu"), &gpu, &cpu, tolerance(dtype));
        }
    }
}

#[test]
fn unary_ops_read_strided_views() {
    let Some(device) = gpu("unary_ops_read_strided_views") else { return };
    let mut draw = Draw::new(8);
    let x = host(&draw.uniform(6 * 70, -3.0, 3.0), &[6, 70], DType::Float32);
    let view = |t: &nbxtensor::tensor::Tensor| t.permute(&[1, 0]).unwrap().narrow(0, 3, 60).unwrap();
    let on_gpu = view(&x.to(device).unwrap());
    assert!(!on_gpu.is_contiguous());
    for op in ["exp", "silu"] {
        let got = nbxtensor::ops::call(op, &Attrs::new(), &[&on_gpu]).unwrap().remove(0);
        let (_, _, reference) = run_three(device, op, &Attrs::new(), &[view(&x)]);
        assert_close(&format!("{op} on a transposed, narrowed view"), &values(&got), &reference, 2e-5);
    }
    let empty = host(&[], &[0, 5], DType::Float32);
    let (gpu, _, _) = run_three(device, "exp", &Attrs::new(), &[empty]);
    assert!(gpu.is_empty());
}

#[test]
fn random_draws_on_the_gpu_have_the_cpus_bits() {
    use nbxtensor::backend::cuda::{random_uniform_f32, random_words};
    use nbxtensor::random::Generator;
    let Some(device) = gpu("random_draws_on_the_gpu_have_the_cpus_bits") else { return };
    let (mut host, mut dev) = (Generator::new(2024).spawn(3), Generator::new(2024).spawn(3));
    // a first draw moves both offsets alike (to the next whole block)
    let first = host.uniform_f32(1001, -2.0, 5.0).unwrap();
    let on_gpu = random_uniform_f32(device, &mut dev, 1001, -2.0, 5.0).unwrap();
    assert_eq!(on_gpu.to(nbxtensor::memory::Device::CPU).unwrap().to_vec::<f32>().unwrap(), first);
    assert_eq!(host.offset(), dev.offset());
    let mut words = vec![0u32; 4099];
    host.words().fill(host.offset(), &mut words);
    let gpu_words = random_words(device, &mut dev, 4099).unwrap();
    assert_eq!(gpu_words.to(nbxtensor::memory::Device::CPU).unwrap().to_vec::<u32>().unwrap(), words);
    assert!(random_uniform_f32(device, &mut dev, 4, 1.0, 1.0).is_err(), "an empty range is refused");
}
