//! The host cost of an eager launch on the CPU, from Rust: a chain of 1000 tiny kernels
//! (`neg` on 16 float32 values) through the typed API (`Tensor::neg`) and through the string
//! entry point (`ops::call`), and the replay of the same chain captured. Prints, per launch,
//! the median over rounds of each.
//!
//!     cargo run --release -p nbxtensor --example cpu_launch_cost

use nbxtensor::kernel::Attrs;
use nbxtensor::program::{self, Executable};
use nbxtensor::Tensor;
use std::time::Instant;

const CHAIN: usize = 1000;
const ROUNDS: usize = 31;

fn typed(x: &Tensor) -> Tensor {
    let mut t = x.clone();
    for _ in 0..CHAIN {
        t = t.neg().expect("neg");
    }
    t
}

fn by_name(x: &Tensor) -> Tensor {
    let mut t = x.clone();
    for _ in 0..CHAIN {
        t = nbxtensor::ops::call("neg", &Attrs::new(), &[&t]).expect("neg").remove(0);
    }
    t
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x = Tensor::from_vec(vec![1.0f32; 16], &[16])?;
    let program = program::trace(&[x.clone()], |inputs| Ok(vec![typed(&inputs[0])]))?;
    let plan = program.plan()?;
    let replay = Executable::new(program, plan)?.capture(&[&x])?;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        let start = Instant::now();
        std::hint::black_box(typed(&x));
        a.push(start.elapsed().as_secs_f64() / CHAIN as f64);
        let start = Instant::now();
        std::hint::black_box(by_name(&x));
        b.push(start.elapsed().as_secs_f64() / CHAIN as f64);
        let start = Instant::now();
        std::hint::black_box(replay.run(&[&x])?);
        c.push(start.elapsed().as_secs_f64() / CHAIN as f64);
    }
    println!("per launch, eager (Tensor::neg)   {:>8.3} us", median(a) * 1e6);
    println!("per launch, eager (ops::call)     {:>8.3} us", median(b) * 1e6);
    println!("per launch, replay                {:>8.3} us", median(c) * 1e6);
    Ok(())
}
