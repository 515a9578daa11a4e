//! The host cost of a launch on the GPU, from Rust: a chain of 1000 small kernels (`neg` on 16
//! float32 values) run eagerly (op calls: lookup, declaration, output from the pool, launch),
//! then as the replay of its captured CUDA graph; and, as the floor both stand on, the same
//! kernel launched 1000 times by bare `cuLaunchKernel` calls (function and parameters made
//! once). Prints the median of 7 runs per kernel: host time (until the calls return) and wall
//! time (until the GPU is done).
//!
//!     cargo run --release -p nbxtensor --example cuda_launch_cost

use nbxtensor::backend::cuda::{device_ptr, function, sources, Args, THREADS};
use nbxtensor::kernel::Attrs;
use nbxtensor::memory::cuda::context;
use nbxtensor::memory::Device;
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::tensor::Tensor;
use std::time::Instant;

const CHAIN: usize = 1000;

fn chain(inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
    let mut t = inputs[0].clone();
    for _ in 0..CHAIN {
        t = nbxtensor::ops::call("neg", &Attrs::new(), &[&t])?.remove(0);
    }
    Ok(vec![t])
}

/// Median (host, wall) seconds per kernel of `run`.
fn measure(device: Device, run: &dyn Fn()) -> (f64, f64) {
    let ctx = context(device.index).expect("a CUDA device");
    run();
    ctx.synchronize().unwrap();
    let (mut host, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let start = Instant::now();
        run();
        host.push(start.elapsed().as_secs_f64() / CHAIN as f64);
        ctx.synchronize().unwrap();
        wall.push(start.elapsed().as_secs_f64() / CHAIN as f64);
    }
    host.sort_by(f64::total_cmp);
    wall.sort_by(f64::total_cmp);
    (host[3], wall[3])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::parse("cuda")?;
    if let Err(why) = nbxtensor::memory::cuda::driver() {
        println!("skipped: {why}");
        return Ok(());
    }
    let x = Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[16])?.to(device)?;
    let (eager_host, eager_wall) = measure(device, &|| drop(chain(&[x.clone()]).unwrap()));
    println!(
        "per kernel, eager from Rust ({CHAIN} neg): host {:.2} us, wall {:.2} us",
        eager_host * 1e6,
        eager_wall * 1e6
    );
    let y = Tensor::zeros_on(device, nbxtensor::dtype::DType::Float32, &[16])?;
    let unary = sources().into_iter().find(|s| s.name == "unary.cu").expect("the unary source");
    let neg = function(device, unary, "unary_neg_f32")?;
    let mut args = Args::new();
    args.ptr(device_ptr(&x)).ptr(device_ptr(&y)).i64(16);
    let args = std::cell::RefCell::new(args);
    let (bare_host, bare_wall) = measure(device, &|| {
        for _ in 0..CHAIN {
            neg.launch([1, 1, 1], [THREADS, 1, 1], 0, &mut args.borrow_mut()).unwrap();
        }
    });
    println!(
        "per kernel, bare cuLaunchKernel ({CHAIN} neg): host {:.2} us, wall {:.2} us",
        bare_host * 1e6,
        bare_wall * 1e6
    );
    let program = program::trace(&[x.clone()], chain)?;
    let plan = program.plan()?;
    let replay = Executable::new(program, plan)?.capture(&[&x])?;
    let nodes = replay.graph().map(|g| g.nodes()).unwrap_or(0);
    let (replay_host, replay_wall) = measure(device, &|| drop(replay.run(&[&x]).unwrap()));
    println!(
        "per node, CUDA graph replay ({nodes} nodes): host {:.3} us, wall {:.2} us",
        replay_host * 1e6,
        replay_wall * 1e6
    );
    Ok(())
}
