//! Criterion benchmarks of the CPU kernels through the eager path (`ops::call`): what one op
//! call costs, declaration and allocation included. Run with `cargo bench -p nbxtensor`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::ops;
use nbxtensor::random::Generator;
use nbxtensor::tensor::Tensor;

fn random(shape: &[i64], seed: u64) -> Tensor {
    let n = shape.iter().product::<i64>() as usize;
    Tensor::from_vec(Generator::new(seed).normal_f32(n, 0.0, 1.0).expect("a small draw"), shape)
        .expect("a small tensor")
}

fn matmul(c: &mut Criterion) {
    let mut group = c.benchmark_group("matmul_f32");
    for n in [256i64, 512, 1024] {
        let (a, b) = (random(&[n, n], 1), random(&[n, n], 2));
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &n, |bench, _| {
            bench.iter(|| ops::call("matmul", &Attrs::new(), &[&a, &b]).expect("matmul runs"))
        });
    }
    group.finish();
}

fn elementwise(c: &mut Criterion) {
    let mut group = c.benchmark_group("elementwise_f32_1M");
    let (x, y) = (random(&[1 << 20], 3), random(&[1 << 20], 4));
    group.throughput(Throughput::Bytes(3 * 4 << 20));
    group.bench_function("add", |bench| bench.iter(|| ops::call("add", &Attrs::new(), &[&x, &y]).expect("add runs")));
    group.bench_function("exp", |bench| bench.iter(|| ops::call("exp", &Attrs::new(), &[&x]).expect("exp runs")));
    group.finish();
}

fn rows(c: &mut Criterion) {
    let mut group = c.benchmark_group("rows_f32_1024x1024");
    let x = random(&[1024, 1024], 5);
    let (w, b) = (random(&[1024], 6), random(&[1024], 7));
    let axis = Attrs::new().with("axis", AttrValue::Int(-1));
    let eps = Attrs::new().with("eps", AttrValue::Float(1e-5));
    group.bench_function("softmax", |bench| bench.iter(|| ops::call("softmax", &axis, &[&x]).expect("softmax runs")));
    group.bench_function("layer_norm", |bench| {
        bench.iter(|| ops::call("layer_norm", &eps, &[&x, &w, &b]).expect("layer_norm runs"))
    });
    group.finish();
}

fn attention(c: &mut Criterion) {
    let (q, k, v) = (random(&[1, 12, 128, 32], 8), random(&[1, 12, 128, 32], 9), random(&[1, 12, 128, 32], 10));
    c.bench_function("sdpa_f32_12x128x32", |bench| {
        bench.iter(|| ops::call("sdpa", &Attrs::new(), &[&q, &k, &v]).expect("sdpa runs"))
    });
}

criterion_group!(benches, matmul, elementwise, rows, attention);
criterion_main!(benches);
