//! The Llama decoder beyond float32 greedy on the CPU: seeded sampling (a seed gives one
//! sequence, replays draw as an eager run does, top-k 1 is greedy), the half dtypes on the CPU
//! within their tolerance of the float32 reference, and the same decoder on CUDA where a GPU is
//! present (float32 with the CPU's greedy tokens and logits within 1e-3 of HF; bfloat16 and
//! float16 within their tolerance, and a sampled sequence equal to the CPU's where their logits
//! agree), and on Vulkan through the wgpu backend (HF's greedy tokens in float32, replay equal
//! to eager in bfloat16). Without a GPU the CUDA test says it skipped.

use nbxtensor::memory::{Device, DeviceKind};
use nbxtensor::DType;
use nbxtensor_models::llama::{Generation, Generator, Llama, Placement, Sampling};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CHECKPOINTS: [&str; 3] = ["llama2-tiny", "llama3-tiny", "qwen2-tiny"];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama").join(name)
}

/// The prompt, HF's greedy tokens and HF's prompt logits (float32).
fn reference(name: &str) -> (Vec<i64>, Vec<i64>, Vec<f32>) {
    let v: Value = serde_json::from_str(&std::fs::read_to_string(data(name).join("reference.json")).unwrap()).unwrap();
    let ints = |key: &str| v[key].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect::<Vec<_>>();
    let logits = v["prefill_last_logits"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    (ints("prompt_ids"), ints("generated_ids"), logits)
}

fn generator(name: &str, placement: Placement, capacity: usize, sampling: Option<Sampling>) -> Generator {
    Generator::new(Llama::open_as(&data(name), placement).unwrap(), capacity, sampling).unwrap()
}

/// The largest |a − b| over the largest |b|.
fn relative(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    let diff = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    diff / b.iter().map(|x| x.abs()).fold(f32::MIN_POSITIVE, f32::max)
}

const CPU: Placement = Placement::CHECKPOINT_ON_CPU;

fn sampling(seed: u64) -> Sampling {
    Sampling { temperature: 0.8, top_k: 40, top_p: 0.95, seed }
}

#[test]
fn a_seed_gives_one_sequence_and_replays_draw_as_an_eager_run() {
    for name in CHECKPOINTS {
        let (prompt, greedy, _) = reference(name);
        let n = 24;
        let run = |seed: u64, replay: bool| {
            let mut g = generator(name, CPU, prompt.len() + n, Some(sampling(seed)));
            g.set_replay(replay);
            g.generate(&prompt, n, false, |_| {}).unwrap().generated_ids
        };
        let first = run(5, true);
        assert_eq!(first, run(5, true), "{name}: the same seed");
        assert_eq!(first, run(5, false), "{name}: eager draws as the replay does");
        assert_ne!(first, run(6, true), "{name}: another seed");
        assert_ne!(first, greedy[..n], "{name}: a draw at temperature 0.8 is not the greedy sequence");
        // top_k = 1 keeps only the argmax: the greedy tokens, whatever the seed
        let one = Sampling { top_k: 1, ..sampling(9) };
        let mut g = generator(name, CPU, prompt.len() + n, Some(one));
        assert_eq!(g.generate(&prompt, n, false, |_| {}).unwrap().generated_ids, greedy[..n], "{name}: top_k 1");
    }
}

#[test]
fn what_sampling_refuses_is_refused_before_any_program() {
    let llama = Llama::open(&data("llama3-tiny")).unwrap();
    for (bad, word) in [
        (Sampling { temperature: 0.0, ..sampling(1) }, "argmax"),
        (Sampling { top_p: 0.0, ..sampling(1) }, "top_p"),
        (Sampling { seed: u64::MAX, ..sampling(1) }, "seed"),
    ] {
        let err = Generator::new(llama.clone(), 40, Some(bad)).err().expect("refused").to_string();
        assert!(err.contains(word), "{err}");
    }
    let err = Llama::open_as(&data("llama3-tiny"), Placement { dtype: Some(DType::Int8), ..CPU }).err().unwrap();
    assert!(err.to_string().contains("not int8"), "{err}");
}

/// The half dtypes on the CPU: prompt logits within a few bf16/f16 steps of HF's float32 ones.
#[test]
fn the_half_dtypes_run_on_the_cpu_within_their_tolerance() {
    for name in CHECKPOINTS {
        let (prompt, _, want) = reference(name);
        for (dtype, tolerance) in [(DType::Bfloat16, 0.03), (DType::Float16, 0.005)] {
            let mut g = generator(name, Placement { dtype: Some(dtype), ..CPU }, prompt.len() + 8, None);
            let out = g.generate(&prompt, 8, false, |_| {}).unwrap();
            let err = relative(&out.prefill_last_logits, &want);
            println!("{name} {dtype} on the CPU: prompt logits within {err:.2e} of HF (relative to the largest)");
            assert!(err <= tolerance, "{name} {dtype}: {err}");
            assert_eq!(
                g.memory().unwrap().weight_bytes * 2,
                generator(name, CPU, 8, None).memory().unwrap().weight_bytes
            );
        }
    }
}

fn cuda(test: &str) -> Option<Device> {
    match nbxtensor::backend::cuda::memory::driver() {
        Ok(driver) if !driver.devices.is_empty() => Some(Device { kind: DeviceKind::Cuda, index: 0 }),
        Ok(_) => {
            eprintln!("{test}: skipped: the CUDA driver loaded but reports no device");
            None
        }
        Err(why) => {
            eprintln!("{test}: skipped: no CUDA ({why})");
            None
        }
    }
}

/// `name`'s greedy float32 decoding on `device`: HF's tokens, the prompt's logits within 1e-3.
fn float32_greedy_is_hfs(name: &str, device: Device, prompt: &[i64], greedy: &[i64], want: &[f32]) {
    let n = greedy.len();
    let placement = Placement { device, dtype: Some(DType::Float32), int4: false };
    let out = generator(name, placement, prompt.len() + n, None).generate(prompt, n, false, |_| {}).unwrap();
    let err = relative(&out.prefill_last_logits, want);
    println!("{name} float32 on {device}: {n} greedy tokens, logits within {err:.2e} of HF");
    assert_eq!(out.generated_ids, greedy, "{name}: float32 greedy on {device}");
    assert!(err <= 1e-3, "{name}: float32 on {device} {err}");
}

/// Eight greedy bfloat16 tokens of `name` on `device`, the decode step replayed and run eagerly:
/// the same tokens (asserted); the replaying generator and both outputs.
fn bfloat16_replay_and_eager(name: &str, device: Device, prompt: &[i64]) -> (Generator, Generation, Generation) {
    let placement = Placement { device, dtype: Some(DType::Bfloat16), int4: false };
    let (mut replayed, mut eager) =
        (generator(name, placement, prompt.len() + 8, None), generator(name, placement, prompt.len() + 8, None));
    eager.set_replay(false);
    let a = replayed.generate(prompt, 8, false, |_| {}).unwrap();
    let b = eager.generate(prompt, 8, false, |_| {}).unwrap();
    assert_eq!(a.generated_ids, b.generated_ids, "{name}: replay and eager on {device}");
    (replayed, a, b)
}

/// Greedy decoding through the wgpu backend on Vulkan (lavapipe in CI, where `NBX_REQUIRE_VULKAN`
/// makes a missing adapter a failure): in float32 HF's greedy tokens and logits within 1e-3, in
/// bfloat16 within its tolerance; the decode step captured and replayed there, equal to an eager
/// run.
#[test]
fn on_vulkan_the_decoder_gives_hfs_greedy_tokens() {
    use nbxtensor::backend::wgpu::{unavailable_reason, Api};
    if let Some(why) = unavailable_reason(Api::Vulkan) {
        assert!(std::env::var_os("NBX_REQUIRE_VULKAN").is_none(), "NBX_REQUIRE_VULKAN is set, but: {why}");
        eprintln!("skipped: {why}");
        return;
    }
    let gpu = Device { kind: DeviceKind::Vulkan, index: 0 };
    for name in CHECKPOINTS {
        let (prompt, greedy, want) = reference(name);
        float32_greedy_is_hfs(name, gpu, &prompt, &greedy, &want);
        let (_, a, _) = bfloat16_replay_and_eager(name, gpu, &prompt);
        assert!(relative(&a.prefill_last_logits, &want) <= 0.03, "{name}: bfloat16 on vulkan");
    }
}

#[test]
fn on_cuda_the_decoder_gives_the_cpus_tokens() {
    let Some(gpu) = cuda("on_cuda_the_decoder_gives_the_cpus_tokens") else { return };
    for name in CHECKPOINTS {
        let (prompt, greedy, want) = reference(name);
        let n = greedy.len();
        // float32: HF's greedy tokens, logits within 1e-3
        float32_greedy_is_hfs(name, gpu, &prompt, &greedy, &want);
        // the half dtypes within their tolerance, and their first greedy tokens as the CPU's float32 ones
        for (dtype, tolerance) in [(DType::Bfloat16, 0.03), (DType::Float16, 0.005)] {
            let mut g =
                generator(name, Placement { device: gpu, dtype: Some(dtype), int4: false }, prompt.len() + n, None);
            let out = g.generate(&prompt, n, false, |_| {}).unwrap();
            let err = relative(&out.prefill_last_logits, &want);
            let same = out.generated_ids.iter().zip(&greedy).take_while(|(a, b)| a == b).count();
            println!(
                "{name} {dtype} on cuda: logits within {err:.2e} of HF, the first {same} of {n} greedy tokens as HF's"
            );
            assert!(err <= tolerance, "{name} {dtype} on cuda: {err}");
            assert!(same >= 4, "{name} {dtype} on cuda: only {same} greedy tokens as the float32 ones");
        }
        // a seeded draw in float32: the CPU's sequence (their logits agree to ~1e-6)
        let draw = |device| {
            let placement = Placement { device, dtype: Some(DType::Float32), int4: false };
            let mut g = generator(name, placement, prompt.len() + n, Some(sampling(3)));
            g.generate(&prompt, n, false, |_| {}).unwrap().generated_ids
        };
        assert_eq!(draw(gpu), draw(Device::CPU), "{name}: a seed draws the same tokens on cuda and the cpu");
        // the decode replay is a CUDA graph and equals an eager run bit for bit
        let (replayed, a, b) = bfloat16_replay_and_eager(name, gpu, &prompt);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&a.prefill_last_logits), bits(&b.prefill_last_logits), "{name}: prefill replay on cuda");
        let m = replayed.memory().unwrap();
        let captured: u64 = replayed.captures().iter().map(|c| c.allocated_bytes).sum();
        assert_eq!(m.arena_bytes, captured, "{name}: the device arenas as planned");
    }
}
