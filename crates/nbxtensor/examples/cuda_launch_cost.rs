//! The host cost of a launch on the GPU, from Rust: a chain of 1000 small kernels (`neg` on 16
//! float32 values) run eagerly (op calls: lookup, declaration, output from the pool, launch),
//! then as the replay of its captured CUDA graph; and, as the floor both stand on, the same
//! kernel launched 1000 times by bare `cuLaunchKernel` calls (function and parameters made
//! once). The three are measured in turn, round after round; prints, per kernel, the median
//! over the rounds of:
//! - host: until the calls return, the GPU idle at the start (a queue the GPU drains slower
//!   than the host fills it makes the host wait: then this is the GPU's launch rate);
//! - host, GPU busy: the same with ~8 ms of matrix products queued first, so that the host
//!   never waits for the GPU: the host's own cost of a launch;
//! - wall: until the GPU is done, from an idle GPU.
//!
//!     cargo run --release -p nbxtensor --example cuda_launch_cost

use nbxtensor::backend::cuda::memory::context;
use nbxtensor::backend::cuda::{device_ptr, function, sources, Args, THREADS};
use nbxtensor::dtype::DType;
use nbxtensor::kernel::Attrs;
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

/// Per-kernel seconds of one way of launching the chain, one entry per round.
#[derive(Default)]
struct Cost {
    host: Vec<f64>,
    host_busy: Vec<f64>,
    wall: Vec<f64>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Rounds of measurement: every way of launching is measured once a round, in turn, so that
/// the host's drift from round to round touches them alike.
const ROUNDS: usize = 15;

/// Adds one round of `run` (CHAIN launches) to `cost`; `busy` queues work that keeps the GPU
/// busy a while.
fn measure(device: Device, busy: &dyn Fn(), run: &dyn Fn(), cost: &mut Cost) {
    let ctx = context(device.index).expect("a CUDA device");
    ctx.synchronize().unwrap();
    let start = Instant::now();
    run();
    cost.host.push(start.elapsed().as_secs_f64() / CHAIN as f64);
    ctx.synchronize().unwrap();
    cost.wall.push(start.elapsed().as_secs_f64() / CHAIN as f64);
    busy();
    let start = Instant::now();
    run();
    cost.host_busy.push(start.elapsed().as_secs_f64() / CHAIN as f64);
    ctx.synchronize().unwrap();
}

fn report(what: &str, cost: &Cost) {
    println!(
        "per {what}: host {:.2} us, host with the GPU busy {:.2} us, wall {:.2} us (medians of {ROUNDS} rounds)",
        median(&cost.host) * 1e6,
        median(&cost.host_busy) * 1e6,
        median(&cost.wall) * 1e6
    );
}

/// The median over rounds of `a` − `b` (host time with the GPU busy): what one way of
/// launching costs over another measured in the same rounds.
fn paired_excess(a: &Cost, b: &Cost) -> f64 {
    let excess: Vec<f64> = a.host_busy.iter().zip(&b.host_busy).map(|(a, b)| a - b).collect();
    median(&excess)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = Device::parse("cuda")?;
    if let Err(why) = nbxtensor::backend::cuda::memory::driver() {
        println!("skipped: {why}");
        return Ok(());
    }
    let x = Tensor::from_vec((0..16).map(|i| i as f32).collect(), &[16])?.to(device)?;
    // six bfloat16 products of 8192³: about 8 ms of the GPU
    let square = Tensor::zeros_on(device, DType::Bfloat16, &[8192, 8192])?;
    let busy = || {
        for _ in 0..6 {
            drop(nbxtensor::ops::call("matmul", &Attrs::new(), &[&square, &square]).unwrap());
        }
    };
    let eager_run = || drop(chain(&[x.clone()]).unwrap());
    let y = Tensor::zeros_on(device, DType::Float32, &[16])?;
    let unary = sources().into_iter().find(|s| s.name == "unary.cu").expect("the unary source");
    let neg = function(device, unary, format_args!("unary_neg_fp32"))?;
    let mut args = Args::new();
    args.ptr(device_ptr(&x)).ptr(device_ptr(&y)).i64(16);
    let args = std::cell::RefCell::new(args);
    let bare_run = || {
        for _ in 0..CHAIN {
            neg.launch([1, 1, 1], [THREADS, 1, 1], 0, &mut args.borrow_mut()).unwrap();
        }
    };
    let program = program::trace(&[x.clone()], chain)?;
    let plan = program.plan()?;
    let replay = Executable::new(program, plan)?.capture(&[&x])?;
    let nodes = replay.graph().map(|g| g.nodes()).unwrap_or(0);
    let replay_run = || drop(replay.run(&[&x]).unwrap());
    // warm up every way (kernels loaded, pools filled), then take the rounds
    for run in [&eager_run as &dyn Fn(), &bare_run, &replay_run] {
        run();
    }
    let (mut eager, mut bare, mut replayed) = (Cost::default(), Cost::default(), Cost::default());
    for _ in 0..ROUNDS {
        measure(device, &busy, &bare_run, &mut bare);
        measure(device, &busy, &eager_run, &mut eager);
        measure(device, &busy, &replay_run, &mut replayed);
    }
    report(&format!("kernel, bare cuLaunchKernel ({CHAIN} neg)"), &bare);
    report(&format!("kernel, eager from Rust ({CHAIN} neg)"), &eager);
    println!(
        "per kernel, eager over bare cuLaunchKernel (median of the rounds' differences, GPU busy): {:.2} us",
        paired_excess(&eager, &bare) * 1e6
    );
    report(&format!("node, CUDA graph replay ({nodes} nodes)"), &replayed);
    Ok(())
}
