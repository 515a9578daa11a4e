//! The concurrency suite from Rust: 8 threads × 1,000 iterations of eager op calls, one shared
//! replay, one shared executable, captures, settings churn, per-thread launch observers and a
//! shared generator; every value asserted, every case bounded in time (a case that does not
//! finish within its deadline fails as hung).

mod harness;

use harness::{check, triple, tripled, values, ITERATIONS, THREADS};
use nbxtensor::kernel::Attrs;
use nbxtensor::ops;
use nbxtensor::program::{self, Executable, Replay};
use nbxtensor::random::Generator;
use nbxtensor::settings::launch_observer::{self, KeyRecorder};
use nbxtensor::settings::threads;
use nbxtensor::tensor::Tensor;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

const DEADLINE: Duration = Duration::from_secs(300);

/// A case on every thread (`harness::on_threads`), failed as hung after [`DEADLINE`].
fn on_threads(case: &str, body: impl Fn(usize, &AtomicUsize) + Send + Sync + 'static) {
    harness::on_threads(case, DEADLINE, body)
}

fn example() -> Tensor {
    Tensor::from_vec(values(0, 0), &[64]).unwrap()
}

#[test]
fn eight_threads_share_everything_and_get_their_own_answers() {
    on_threads("eager ops", |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let x = Tensor::from_vec(v.clone(), &[8, 8]).unwrap();
            let y = ops::call("add", &Attrs::new(), &[&x.transpose(0, 1).unwrap(), &x]).unwrap().remove(0);
            let want: Vec<f32> = (0..64).map(|n| v[(n % 8) * 8 + n / 8] + v[n]).collect();
            check(wrong, y.to_vec::<f32>().unwrap() == want);
        }
    });

    let program = program::trace(&[example()], triple).unwrap();
    let replay: Arc<Replay> =
        Arc::new(Executable::new(program.clone(), program.plan().unwrap()).unwrap().capture(&[&example()]).unwrap());
    on_threads("shared replay", move |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let out = replay.run(&[&Tensor::from_vec(v.clone(), &[64]).unwrap()]).unwrap().remove(0);
            check(wrong, out.to_vec::<f32>().unwrap() == tripled(&v));
        }
    });

    let executable = Arc::new(Executable::new(program.clone(), program.plan().unwrap()).unwrap());
    on_threads("shared executable", move |i, wrong| {
        for k in 0..ITERATIONS {
            let v = values(i, k);
            let out = executable.run(&[&Tensor::from_vec(v.clone(), &[64]).unwrap()]).unwrap().remove(0);
            check(wrong, out.to_vec::<f32>().unwrap() == tripled(&v));
        }
    });

    on_threads("captures", |i, wrong| {
        for k in 0..ITERATIONS {
            let program = program::trace(&[example()], triple).unwrap();
            let replay = Executable::new(program.clone(), program.plan().unwrap()).unwrap().capture(&[&example()]);
            let v = values(i, k);
            let out = replay.unwrap().run(&[&Tensor::from_vec(v.clone(), &[64]).unwrap()]).unwrap().remove(0);
            check(wrong, out.to_vec::<f32>().unwrap() == tripled(&v));
        }
    });

    on_threads("settings churn", |i, wrong| {
        for k in 0..ITERATIONS {
            if i % 2 == 0 {
                threads::set_threads([Some(1), Some(2), None][(i + k) % 3]).unwrap();
            }
            // past one piece of the tiling table: the pool in force runs it
            let v: Vec<f32> = (0..1 << 14).map(|n| (n + i + k) as f32).collect();
            let x = Tensor::from_vec(v.clone(), &[1 << 14]).unwrap();
            let y = ops::call("add", &Attrs::new(), &[&x, &x]).unwrap().remove(0);
            check(wrong, y.to_vec::<f32>().unwrap().iter().zip(&v).all(|(y, v)| *y == 2.0 * v));
        }
    });
    threads::set_threads(None).unwrap();

    on_threads("observers", |i, wrong| {
        let recorder = Arc::new(KeyRecorder::default());
        if i % 2 == 0 {
            launch_observer::set_launch_observer(Some(recorder.clone()));
        }
        for k in 0..ITERATIONS {
            let x = Tensor::from_vec(values(i, k), &[64]).unwrap();
            let y = ops::call("add", &Attrs::new(), &[&x, &x]).unwrap().remove(0);
            if i % 2 == 0 {
                check(wrong, y.storage().is_symbolic() && launch_observer::dry_run());
            } else {
                check(wrong, !launch_observer::dry_run() && y.to_vec::<f32>().unwrap()[0] == 2.0 * values(i, k)[0]);
            }
        }
        check(wrong, recorder.launches().len() == if i % 2 == 0 { ITERATIONS } else { 0 });
        launch_observer::set_launch_observer(None);
    });

    let shared = Arc::new(Mutex::new(Generator::new(7)));
    let drawn = Arc::new(Mutex::new(Vec::new()));
    let (generator, all) = (Arc::clone(&shared), Arc::clone(&drawn));
    on_threads("generators", move |_, _| {
        for _ in 0..ITERATIONS {
            let draw = generator.lock().unwrap().uniform_f32(16, 0.0, 1.0).unwrap();
            all.lock().unwrap().extend(draw);
        }
    });
    let mut got = drawn.lock().unwrap().clone();
    let mut want = Generator::new(7).uniform_f32(16 * THREADS * ITERATIONS, 0.0, 1.0).unwrap();
    got.sort_by(f32::total_cmp);
    want.sort_by(f32::total_cmp);
    assert_eq!(got, want, "every draw read words of its own");
    assert_eq!(shared.lock().unwrap().offset(), (16 * THREADS * ITERATIONS) as u64);
}
