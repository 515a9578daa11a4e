// Local tuning tool (not committed): times kernel variants from .cu files.
use nbxtensor::backend::cuda::{device_ptr, function, Args, KernelSource};
use nbxtensor::dtype::DType;
use nbxtensor::memory::cuda::context;
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use std::time::Instant;

fn time(device: Device, f: &dyn Fn()) -> f64 {
    let ctx = context(device.index).unwrap();
    f();
    ctx.synchronize().unwrap();
    let mut v = Vec::new();
    for _ in 0..7 {
        let s = Instant::now();
        for _ in 0..10 {
            f();
        }
        ctx.synchronize().unwrap();
        v.push(s.elapsed().as_secs_f64() / 10.0);
    }
    v.sort_by(f64::total_cmp);
    v[3]
}

fn main() {
    let device = Device::parse("cuda").unwrap();
    let numel: i64 = 1 << 28;
    let x = Tensor::zeros_on(device, DType::Bfloat16, &[numel]).unwrap();
    let y = Tensor::zeros_on(device, DType::Bfloat16, &[numel]).unwrap();
    let (seq, dim) = (4096i64, 128i64);
    let cos = Tensor::zeros_on(device, DType::Bfloat16, &[seq, dim / 2]).unwrap();
    let sin = Tensor::zeros_on(device, DType::Bfloat16, &[seq, dim / 2]).unwrap();
    let sms = context(0).unwrap().info().multiprocessors;
    for path in std::env::args().skip(1) {
        let text: &'static str = Box::leak(std::fs::read_to_string(&path).unwrap().into_boxed_str());
        let name: &'static str = Box::leak(path.clone().into_boxed_str());
        let source: &'static KernelSource = Box::leak(Box::new(KernelSource { name, text }));
        let moved = 2.0 * numel as f64 * 2.0;
        let secs = if path.contains("rope") {
            let f = function(device, source, "rope_bf16_vec").unwrap();
            let rows = numel / dim;
            let units = rows * (dim / 2 / 8);
            let blocks = ((units as u64).div_ceil(256)).min(sms as u64 * 8) as u32;
            time(device, &|| {
                let mut a = Args::new();
                a.ptr(device_ptr(&x)).ptr(device_ptr(&cos)).i64(dim / 2).ptr(device_ptr(&sin)).i64(dim / 2);
                a.ptr(device_ptr(&y)).i64(rows).i64(seq).i64(dim);
                f.launch([blocks, 1, 1], [256, 1, 1], 0, &mut a).unwrap();
            })
        } else {
            let f = function(device, source, "softmax_rows_bf16_4_vec").unwrap();
            let n = 4096i64;
            let rows = numel / n;
            time(device, &|| {
                let mut a = Args::new();
                a.ptr(device_ptr(&x)).ptr(device_ptr(&y)).i64(rows).i64(n).i32(128).i32(0);
                f.launch([rows as u32, 1, 1], [128, 1, 1], 0, &mut a).unwrap();
            })
        };
        println!("{path}: {:.3} ms, {:.2} TB/s", secs * 1e3, moved / secs / 1e12);
    }
}
