//! The Llama-family decoder against Hugging Face transformers on the tiny checkpoints of
//! `tests/data/llama` (seeded random weights from scripts/make_tiny_llama.py; each
//! `reference.json` made by scripts/llama_reference.py: float32, eager attention, CPU):
//! greedy tokens identical for all 32 steps and the prompt's last logits within 1e-4; the
//! captured replays equal an eager run bit for bit; bad checkpoints are refused by name.

use nbxtensor_models::llama::{bucket, Generator, Llama, LlamaConfig};
use serde_json::Value;
use std::path::{Path, PathBuf};

const CHECKPOINTS: [&str; 3] = ["llama2-tiny", "llama3-tiny", "qwen2-tiny"];

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama").join(name)
}

struct Reference {
    prompt: Vec<i64>,
    generated: Vec<i64>,
    logits: Vec<f32>,
}

fn reference(name: &str) -> Reference {
    let text = std::fs::read_to_string(data(name).join("reference.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    let ints = |key: &str| v[key].as_array().unwrap().iter().map(|x| x.as_i64().unwrap()).collect::<Vec<_>>();
    let logits = v["prefill_last_logits"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap() as f32).collect();
    Reference { prompt: ints("prompt_ids"), generated: ints("generated_ids"), logits }
}

fn generator(name: &str, reference: &Reference) -> Generator {
    let llama = Llama::open(&data(name)).unwrap();
    Generator::new(llama, reference.prompt.len() + reference.generated.len(), None).unwrap()
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn greedy_tokens_and_prompt_logits_match_transformers() {
    for name in CHECKPOINTS {
        let r = reference(name);
        assert!(r.generated.len() >= 24, "{name}: the reference has {} steps", r.generated.len());
        let mut g = generator(name, &r);
        let out = g.generate(&r.prompt, r.generated.len(), false, |_| {}).unwrap();
        let diff = max_diff(&out.prefill_last_logits, &r.logits);
        println!("{name}: {} tokens identical, prompt logits max |diff| {diff:.2e}", out.generated_ids.len());
        assert!(diff <= 1e-4, "{name}: prompt logits differ by {diff}");
        assert_eq!(out.generated_ids, r.generated, "{name}: greedy tokens");
        // a second prompt on the same generator (its bucket captured, the decode replay reused)
        let again = g.generate(&r.prompt, r.generated.len(), false, |_| {}).unwrap();
        assert_eq!(again.generated_ids, r.generated, "{name}: greedy tokens on the kept replays");
        assert!(out.prefill_capture_seconds > 0.0 && out.decode_capture_seconds > 0.0, "{name}: captured");
        assert_eq!(
            (again.prefill_capture_seconds, again.decode_capture_seconds),
            (0.0, 0.0),
            "{name}: nothing captured the second time"
        );
    }
}

#[test]
fn generation_stops_after_an_end_of_sequence_token() {
    for name in CHECKPOINTS {
        let r = reference(name);
        // the config's end token made the reference's fifth token (and a token it never gives)
        let end = r.generated[4];
        let dir = edited(name, "eos", |c| {
            c.insert("eos_token_id".into(), serde_json::json!([255, end]));
        });
        let llama = Llama::open(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let mut g = Generator::new(llama, r.prompt.len() + r.generated.len(), None).unwrap();
        let at = r.generated.iter().position(|&t| t == end || t == 255).unwrap();
        let mut streamed = Vec::new();
        let out = g.generate(&r.prompt, r.generated.len(), true, |t| streamed.push(t)).unwrap();
        assert_eq!(out.generated_ids, r.generated[..=at], "{name}: stopped after {end}");
        assert_eq!(streamed, out.generated_ids, "{name}: every token streamed as it came");
        let all = g.generate(&r.prompt, r.generated.len(), false, |_| {}).unwrap();
        assert_eq!(all.generated_ids, r.generated, "{name}: not stopped when asked not to");
    }
}

#[test]
fn the_decode_replay_equals_an_eager_decode_bit_for_bit() {
    for name in CHECKPOINTS {
        let r = reference(name);
        let (mut replayed, mut eager) = (generator(name, &r), generator(name, &r));
        eager.set_replay(false);
        let (a, _) = replayed.prefill(&r.prompt).unwrap();
        let (b, _) = eager.prefill(&r.prompt).unwrap();
        let bits =
            |s: &nbxtensor_models::llama::Step| s.logits_f32().unwrap().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert!(a.token == b.token && bits(&a) == bits(&b), "{name}: prefill");
        let mut token = a.token;
        for step in 0..12 {
            let position = r.prompt.len() + step;
            let (a, _) = replayed.decode(token, position).unwrap();
            let (b, _) = eager.decode(token, position).unwrap();
            assert!(bits(&a) == bits(&b) && a.token == b.token, "{name}: decode step {step} differs");
            token = a.token;
        }
        assert_eq!(replayed.captured_buckets(), [bucket(r.prompt.len())], "{name}");
        let (m, c) = (replayed.memory().unwrap(), &replayed.llama().config);
        let per_row = (c.num_hidden_layers * 2 * c.num_key_value_heads * c.head_dim * 4) as u64;
        assert_eq!(m.cache_bytes, per_row * replayed.capacity() as u64, "{name}");
        // the weights are the files' data: their sizes less the headers (a few KiB)
        let files: u64 = std::fs::read_dir(data(name))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .map(|p| p.metadata().unwrap().len())
            .sum();
        assert!(m.weight_bytes < files && files - m.weight_bytes < 8192, "{name}: {} of {files}", m.weight_bytes);
        assert!(m.arena_bytes > 0 && eager.memory().unwrap().arena_bytes == 0, "{name}: only the replays hold arenas");
    }
}

/// A copy of a checkpoint in a fresh temporary directory, its config edited by `edit`.
fn edited(name: &str, tag: &str, edit: impl FnOnce(&mut serde_json::Map<String, Value>)) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nbx_llama_{tag}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for entry in std::fs::read_dir(data(name)).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(&path, dir.join(path.file_name().unwrap())).unwrap();
    }
    let mut config: Value = serde_json::from_str(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    edit(config.as_object_mut().unwrap());
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

fn refusal(dir: &Path) -> String {
    let err = match Llama::open(dir) {
        Ok(_) => panic!("{} opened", dir.display()),
        Err(e) => e.to_string(),
    };
    let _ = std::fs::remove_dir_all(dir);
    err
}

#[test]
fn bad_checkpoints_are_refused_by_name() {
    for field in ["rope_theta", "num_key_value_heads", "rms_norm_eps", "hidden_act", "model_type"] {
        let err = refusal(&edited("llama2-tiny", field, |c| {
            c.remove(field);
        }));
        assert!(err.contains(field) && err.contains("config.json"), "{field}: {err}");
    }
    let err = refusal(&edited("llama2-tiny", "dynamic", |c| {
        c.insert("rope_scaling".into(), serde_json::json!({"rope_type": "dynamic", "factor": 2.0}));
    }));
    assert!(err.contains("dynamic"), "{err}");
    // the config says tied, the file has an lm_head: a tensor nothing accounts for
    let err = refusal(&edited("llama2-tiny", "tied", |c| {
        c.insert("tie_word_embeddings".into(), Value::Bool(true));
    }));
    assert!(err.contains("lm_head.weight"), "{err}");
    // a wider model than the weights
    let err = refusal(&edited("llama2-tiny", "wide", |c| {
        c.insert("intermediate_size".into(), serde_json::json!(256));
    }));
    assert!(err.contains("gate_proj") && err.contains("256"), "{err}");
    // a shard the index names is gone
    let dir = edited("qwen2-tiny", "shard", |_| {});
    std::fs::remove_file(dir.join("model-00002-of-00002.safetensors")).unwrap();
    let err = refusal(&dir);
    assert!(err.contains("model-00002-of-00002.safetensors"), "{err}");
    let err = refusal(&std::env::temp_dir().join("nbx_llama_no_such_dir"));
    assert!(err.contains("no model directory"), "{err}");
}

#[test]
fn configs_of_the_three_families_read_as_their_checkpoints_say() {
    let c = LlamaConfig::read(&data("llama3-tiny").join("config.json")).unwrap();
    assert_eq!((c.num_key_value_heads, c.head_dim, c.eos_token_ids.clone()), (2, 16, vec![2, 3]));
    assert!(c.rope_scaling.is_some() && c.tie_word_embeddings == Some(true));
    let q = Llama::open(&data("qwen2-tiny")).unwrap();
    assert!(q.weights.layers[0].q.bias.is_some() && q.weights.layers[0].o.bias.is_none());
    let l = Llama::open(&data("llama2-tiny")).unwrap();
    assert!(!l.weights.tied && l.weights.layers[1].k.bias.is_none());
    // aligned float32 data: every weight is a read-only view into the file's map, not a copy
    for llama in [&q, &l] {
        assert!(llama.weights.tensors().iter().all(|t| t.is_read_only()), "the weights are mapped");
    }
    let t = Llama::open(&data("llama3-tiny")).unwrap();
    assert!(t.weights.tied && t.weights.lm_head.shape() == [256, 64]);
}

/// Mistral's config over Llama's layout: the same tokens as the llama checkpoint; a context
/// past its sliding window is refused by name.
#[test]
fn a_mistral_config_is_llama_within_its_sliding_window() {
    let r = reference("llama2-tiny");
    let dir = edited("llama2-tiny", "mistral", |c| {
        c.insert("model_type".into(), Value::from("mistral"));
        c.insert("sliding_window".into(), Value::from(r.prompt.len() + r.generated.len()));
    });
    let llama = Llama::open(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let llama = llama.unwrap();
    let refused = match Generator::new(llama.clone(), 100, None) {
        Ok(_) => panic!("a context of 100 past a window of {}", r.prompt.len() + r.generated.len()),
        Err(e) => e.to_string(),
    };
    assert!(refused.contains("sliding window"), "{refused}");
    let mut g = Generator::new(llama, r.prompt.len() + r.generated.len(), None).unwrap();
    let out = g.generate(&r.prompt, r.generated.len(), false, |_| {}).unwrap();
    assert_eq!(out.generated_ids, r.generated);
}

/// A config silent about tied embeddings: the weights decide (no `lm_head.weight`: tied).
#[test]
fn without_tie_word_embeddings_the_weights_decide() {
    let r = reference("llama3-tiny");
    let dir = edited("llama3-tiny", "untold", |c| {
        c.remove("tie_word_embeddings");
    });
    let llama = Llama::open(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    let llama = llama.unwrap();
    assert!(llama.config.tie_word_embeddings.is_none() && llama.weights.tied);
    let mut g = Generator::new(llama, r.prompt.len() + r.generated.len(), None).unwrap();
    assert_eq!(g.generate(&r.prompt, r.generated.len(), false, |_| {}).unwrap().generated_ids, r.generated);
}

/// A bfloat16 checkpoint runs in bfloat16 by default (its weights as stored) and is widened to
/// float32 when asked: the same values as the float32 weights rounded to bfloat16.
#[test]
fn a_bfloat16_checkpoint_runs_as_stored_or_widened_when_asked() {
    use nbxtensor::io::safetensors::{load, save};
    use nbxtensor::DType;
    use nbxtensor_models::llama::Placement;
    let dir = edited("llama2-tiny", "bf16", |_| {});
    let file = dir.join("model.safetensors");
    let tensors = load(&file).unwrap();
    let halves: Vec<(String, nbxtensor::Tensor)> =
        tensors.iter().map(|t| (t.name.clone(), t.tensor.cast(DType::Bfloat16).unwrap())).collect();
    let named: Vec<(&str, &nbxtensor::Tensor)> = halves.iter().map(|(n, t)| (n.as_str(), t)).collect();
    save(&file, &named, None).unwrap();
    let own = Llama::open(&dir);
    let widened = Llama::open_as(&dir, Placement { dtype: Some(DType::Float32), ..Placement::CHECKPOINT_ON_CPU });
    let _ = std::fs::remove_dir_all(&dir);
    let (own, llama) = (own.unwrap(), widened.unwrap());
    let table = &halves.iter().find(|(n, _)| n == "model.embed_tokens.weight").unwrap().1;
    assert_eq!(own.weights.dtype, DType::Bfloat16);
    assert_eq!(own.weights.embed.to_bytes().unwrap(), table.to_bytes().unwrap());
    assert_eq!(own.weights.bytes().unwrap(), llama.weights.bytes().unwrap() / 2);
    let rounded = table.cast(DType::Float32).unwrap();
    assert_eq!(llama.weights.embed.dtype(), DType::Float32);
    assert_eq!(llama.weights.embed.to_vec::<f32>().unwrap(), rounded.to_vec::<f32>().unwrap());
    let r = reference("llama2-tiny");
    let mut g = Generator::new(llama, r.prompt.len() + 8, None).unwrap();
    assert_eq!(g.generate(&r.prompt, 8, false, |_| {}).unwrap().generated_ids.len(), 8);
}
