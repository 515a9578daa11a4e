use nbxtensor::kernel::Attrs;
use nbxtensor::ops;
use nbxtensor::tensor::Tensor;
use std::time::Instant;
fn main() {
    nbxtensor::settings::threads::set_threads(Some(std::env::args().nth(1).map(|a| a.parse().unwrap()).unwrap_or(1))).unwrap();
    let n = 128 * 1536 * 8;
    let x = Tensor::from_vec((0..n).map(|i| ((i % 1000) as f32 - 500.0) / 100.0).collect(), &[n as i64]).unwrap();
    for op in ["exp", "sigmoid", "gelu", "gelu_tanh", "tanh"] {
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let t = Instant::now();
            ops::call(op, &Attrs::new(), &[&x]).unwrap();
            best = best.min(t.elapsed().as_secs_f64());
        }
        println!("{op}: {:.2} ns/element", best * 1e9 / n as f64);
    }
}
