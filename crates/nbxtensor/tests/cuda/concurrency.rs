//! The concurrency suite on the GPU (the CPU's is `tests/concurrency.rs`): 8 threads × 1,000
//! iterations of eager op calls, one shared replay (a CUDA graph), one shared executable,
//! captures (each thread recording graphs of its own while the others launch), settings churn,
//! per-thread launch observers, a shared generator whose draws go through the device, and
//! cuDNN's fused attention run eagerly and captured at once (its one handle bound to each
//! caller's stream);
//! every value read back and asserted, every case bounded in time. Skips, saying so, without a
//! device.

use super::attention::operands;
use super::common::{gpu, Draw};
use super::harness::{self, check, triple, tripled, values, ITERATIONS, THREADS};
use nbxtensor::kernel::Attrs;
use nbxtensor::memory::Device;
use nbxtensor::ops;
use nbxtensor::program::{self, Executable, ProgramError, Replay};
use nbxtensor::random::Generator;
use nbxtensor::settings::launch_observer::{self, KeyRecorder};
use nbxtensor::settings::{memory_limit, threads};
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(120);

/// A case on every thread (`harness::on_threads`), named "cuda …", failed as hung after
/// [`DEADLINE`].
fn on_threads(case: &str, body: impl Fn(usize, &AtomicUsize) + Send + Sync + 'static) {
    harness::on_threads(&format!("cuda {case}"), DEADLINE, body)
}

fn on(device: Device, v: Vec<f32>, shape: &[i64]) -> Tensor {
    Tensor::from_vec(v, shape).unwrap().to(device).unwrap()
}

fn back(t: &Tensor) -> Vec<f32> {
    t.to(Device::CPU).unwrap().contiguous().unwrap().to_vec::<f32>().unwrap()
}

#[test]
fn eight_threads_share_the_gpu_and_get_their_own_answers() {
    let Some(device) = gpu("eight_threads_share_the_gpu_and_get_their_own_answers") else { return };
    let example = move || on(device, values(0, 0), &[64]);

    on_threads("eager ops", move |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let x = on(device, v.clone(), &[8, 8]);
            let y = ops::call("add", &Attrs::new(), &[&x.transpose(0, 1).unwrap(), &x]).unwrap().remove(0);
            let want: Vec<f32> = (0..64).map(|n| v[(n % 8) * 8 + n / 8] + v[n]).collect();
            check(wrong, y.device() == device && back(&y) == want);
        }
    });

    let traced = program::trace(&[example()], triple).unwrap();
    let replay: Arc<Replay> =
        Arc::new(Executable::new(traced.clone(), traced.plan().unwrap()).unwrap().capture(&[&example()]).unwrap());
    assert!(replay.graph().is_some(), "a CUDA program replays a graph");
    on_threads("shared replay", move |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let out = replay.run(&[&on(device, v.clone(), &[64])]).unwrap().remove(0);
            check(wrong, back(&out) == tripled(&v));
        }
    });

    let executable = Arc::new(Executable::new(traced.clone(), traced.plan().unwrap()).unwrap());
    on_threads("shared executable", move |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let out = executable.run(&[&on(device, v.clone(), &[64])]).unwrap().remove(0);
            check(wrong, back(&out) == tripled(&v));
        }
    });

    // every thread records graphs of its own while the others record, replay and read back:
    // each graph holds its own thread's launches alone
    on_threads("captures", move |i, wrong| {
        for k in 0..ITERATIONS {
            let traced = program::trace(&[example()], triple).unwrap();
            let replay = Executable::new(traced.clone(), traced.plan().unwrap()).unwrap().capture(&[&example()]);
            let v = values(i, k);
            let out = replay.unwrap().run(&[&on(device, v.clone(), &[64])]).unwrap().remove(0);
            check(wrong, back(&out) == tripled(&v));
        }
    });

    on_threads("settings churn", move |i, wrong| {
        for k in 0..ITERATIONS {
            if i % 2 == 0 {
                threads::set_threads([Some(1), Some(2), None][(i + k) % 3]).unwrap();
                memory_limit::set_limit([None, Some(8 << 30)][k % 2]).unwrap();
            }
            let v: Vec<f32> = (0..1 << 14).map(|n| (n + i + k) as f32).collect();
            let x = on(device, v.clone(), &[1 << 14]);
            let y = ops::call("add", &Attrs::new(), &[&x, &x]).unwrap().remove(0);
            check(wrong, back(&y).iter().zip(&v).all(|(y, v)| *y == 2.0 * v));
        }
    });
    threads::set_threads(None).unwrap();
    memory_limit::set_limit(None).unwrap();

    on_threads("observers", move |i, wrong| {
        let recorder = Arc::new(KeyRecorder::default());
        // the inputs made before the observer watches (a move to the device is a copy)
        let inputs: Vec<Tensor> = (0..ITERATIONS).map(|k| on(device, values(i, k), &[64])).collect();
        if i % 2 == 0 {
            launch_observer::set_launch_observer(Some(recorder.clone()));
        }
        for (k, x) in inputs.iter().enumerate() {
            let y = ops::call("add", &Attrs::new(), &[x, x]).unwrap().remove(0);
            if i % 2 == 0 {
                check(wrong, y.storage().is_symbolic() && launch_observer::dry_run());
            } else {
                check(
                    wrong,
                    !launch_observer::dry_run() && back(&y) == values(i, k).iter().map(|v| 2.0 * v).collect::<Vec<_>>(),
                );
            }
        }
        check(wrong, recorder.launches().len() == if i % 2 == 0 { ITERATIONS } else { 0 });
        launch_observer::set_launch_observer(None);
    });

    let shared = Arc::new(Mutex::new(Generator::new(7)));
    let drawn = Arc::new(Mutex::new(Vec::new()));
    let (generator, all) = (Arc::clone(&shared), Arc::clone(&drawn));
    on_threads("generators", move |_, wrong| {
        for _ in 0..ITERATIONS {
            let draw = generator.lock().unwrap().uniform_f32(16, 0.0, 1.0).unwrap();
            // through the device and back: the same words
            let there = on(device, draw.clone(), &[16]);
            let zero = ops::call("mul", &Attrs::new(), &[&there, &on(device, vec![0.0; 16], &[16])]).unwrap().remove(0);
            let same = ops::call("add", &Attrs::new(), &[&there, &zero]).unwrap().remove(0);
            check(wrong, back(&same) == draw);
            all.lock().unwrap().extend(draw);
        }
    });
    let mut got = drawn.lock().unwrap().clone();
    let mut want = Generator::new(7).uniform_f32(16 * THREADS * ITERATIONS, 0.0, 1.0).unwrap();
    got.sort_by(f32::total_cmp);
    want.sort_by(f32::total_cmp);
    assert_eq!(got, want, "every draw read words of its own");

    // cuDNN: every thread calls fused attention eagerly (one handle, taken in turns); then
    // half the threads call it eagerly (on the shared stream) while the others capture it into
    // graphs of their own (on their recording streams) and replay them; every output
    // byte-equal to one eager call's (cuDNN's forward is deterministic)
    let [q, k, v] = operands(&mut Draw::new(63), DType::Bfloat16, [1, 2, 2, 64, 64, 64, 64]);
    let inputs = [q.to(device).unwrap(), k.to(device).unwrap(), v.to(device).unwrap()];
    let want = Arc::new(bytes(&attend(&inputs).unwrap()[0]));
    let (shared, expected) = (inputs.clone(), Arc::clone(&want));
    on_threads("fused attention, eager", move |_, wrong| {
        for _ in 0..ITERATIONS {
            check(wrong, bytes(&attend(&shared).unwrap()[0]) == *expected);
        }
    });
    on_threads("fused attention, eager and captured", move |i, wrong| {
        for _ in 0..ITERATIONS {
            let out = if i % 2 == 0 {
                attend(&inputs).unwrap().remove(0)
            } else {
                let traced = program::trace(&inputs, attend).unwrap();
                let executable = Executable::new(traced.clone(), traced.plan().unwrap()).unwrap();
                let replay = executable.capture(&inputs.iter().collect::<Vec<_>>()).unwrap();
                check(wrong, replay.graph().is_some());
                replay.run(&inputs.iter().collect::<Vec<_>>()).unwrap().remove(0)
            };
            check(wrong, bytes(&out) == *want);
        }
    });
}

/// sdpa with its defaults (cuDNN's fused attention for half inputs on a GPU).
fn attend(inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
    Ok(ops::call("sdpa", &Attrs::new(), &[&inputs[0], &inputs[1], &inputs[2]])?)
}

/// A tensor's bytes, read back to the host.
fn bytes(t: &Tensor) -> Vec<u8> {
    t.to(Device::CPU).unwrap().to_bytes().unwrap()
}
