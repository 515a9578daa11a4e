//! The host cost of a launch on the GPU, from Rust: a chain of 1000 small kernels (`neg` on 16
//! float32 values) run eagerly (op calls: lookup, declaration, output from the pool, launch),
//! then as the replay of its captured CUDA graph. Prints the median of 7 runs per kernel:
//! host time (until the calls return) and wall time (until the GPU is done).
//!
//!     cargo run --release -p nbxtensor --example cuda_launch_cost

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
    let program = program::trace(&[x.clone()], chain)?;
    let plan = program.plan()?;
    let replay = Executable::new(program, plan)?.capture(&[&x])?;
    let nodes = replay.graph().map(|g| g.nodes()).unwrap_or(0);
    let (replay_host, replay_wall) = measure(device, &|| drop(replay.run(&[&x]).unwrap()));
    println!(
        "per kernel, eager from Rust ({CHAIN} neg): host {:.2} us, wall {:.2} us",
        eager_host * 1e6,
        eager_wall * 1e6
    );
    println!(
        "per node, CUDA graph replay ({nodes} nodes): host {:.3} us, wall {:.2} us",
        replay_host * 1e6,
        replay_wall * 1e6
    );
    Ok(())
}
