//! `nbx generate --prompt-ids … --output …` on the tiny Llama-family checkpoints of
//! crates/nbxtensor-models/tests/data/llama gives Hugging Face's greedy tokens and prompt
//! logits (within 1e-4) as its references say; a seed repeats a sampled run, the half dtypes
//! run within their tolerance, and bad options are refused by name.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn checkpoint(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../nbxtensor-models/tests/data/llama").join(name)
}

fn nbx(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nbx")).args(args).output().unwrap()
}

/// A test's folder for the files it writes, removed when the test ends (passed or failed).
struct Scratch(PathBuf);

impl Scratch {
    fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(tag: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("nbx_generate_{tag}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

#[test]
fn generate_gives_the_reference_tokens_and_logits() {
    let dir = scratch("reference");
    for name in ["llama2-tiny", "llama3-tiny", "qwen2-tiny"] {
        let model = checkpoint(name);
        let r: Value = serde_json::from_str(&std::fs::read_to_string(model.join("reference.json")).unwrap()).unwrap();
        let prompt = dir.join(format!("{name}_prompt.json"));
        std::fs::write(&prompt, r["prompt_ids"].to_string()).unwrap();
        let output = dir.join(format!("{name}_out.json"));
        let steps = r["generated_ids"].as_array().unwrap().len().to_string();
        let run = nbx(&[
            "generate",
            "--model",
            model.to_str().unwrap(),
            "--prompt-ids",
            prompt.to_str().unwrap(),
            "--max-new-tokens",
            &steps,
            "--dtype",
            "float32",
            "--device",
            "cpu",
            "--output",
            output.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{name}: {stderr}");
        assert!(
            stderr.contains("prefill") && stderr.contains("tok/s") && stderr.contains("KV cache"),
            "{name}: {stderr}"
        );
        let got: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!(got["prompt_ids"], r["prompt_ids"], "{name}");
        // nbx stops after an end-of-sequence token: the reference up to its first one
        let eos: Vec<Value> = {
            let config: Value =
                serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap()).unwrap();
            match &config["eos_token_id"] {
                Value::Array(ids) => ids.clone(),
                Value::Null => Vec::new(),
                one => vec![one.clone()],
            }
        };
        let all = r["generated_ids"].as_array().unwrap();
        let want = match all.iter().position(|t| eos.contains(t)) {
            Some(at) => &all[..=at],
            None => &all[..],
        };
        assert_eq!(got["generated_ids"].as_array().unwrap().as_slice(), want, "{name}");
        if !model.join("tokenizer.json").is_file() {
            let stdout = String::from_utf8_lossy(&run.stdout);
            let printed: Vec<Value> =
                stdout.split_whitespace().map(|t| Value::from(t.parse::<i64>().unwrap())).collect();
            assert_eq!(printed.as_slice(), want, "{name}: the ids streamed to stdout");
        }
        let (a, b) = (got["prefill_last_logits"].as_array().unwrap(), r["prefill_last_logits"].as_array().unwrap());
        assert_eq!(a.len(), b.len());
        let diff = a.iter().zip(b).map(|(x, y)| (x.as_f64().unwrap() - y.as_f64().unwrap()).abs()).fold(0.0, f64::max);
        assert!(diff <= 1e-4, "{name}: prompt logits differ by {diff}");
    }
}

#[test]
fn generate_refuses_what_it_does_not_serve_by_name() {
    let dir = scratch("refusals");
    let prompt = dir.join("prompt.json");
    std::fs::write(&prompt, "[1, 5, 9]").unwrap();
    let model = checkpoint("llama2-tiny");
    let (m, p) = (model.to_str().unwrap(), prompt.to_str().unwrap());
    for (extra, word, status) in [
        (&["--temperature", "-0.5"][..], "--temperature", 2),
        (&["--top-p", "1.5"][..], "--top-p", 2),
        (&["--seed", "x"][..], "--seed", 2),
        (&["--dtype", "int8"][..], "int8", 2),
        (&["--device", "tpu"][..], "tpu", 2),
        (&["--max-new-tokens", "500"][..], "128 positions", 1),
    ] {
        let mut args = vec!["generate", "--model", m, "--prompt-ids", p];
        args.extend_from_slice(extra);
        let run = nbx(&args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(status), "{extra:?}: {stderr}");
        assert!(stderr.contains(word), "{extra:?}: {stderr}");
    }
    // without a GPU, --device cuda fails naming CUDA (with one, it runs)
    let run = nbx(&["generate", "--model", m, "--prompt-ids", p, "--max-new-tokens", "4", "--device", "cuda"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() || (run.status.code() == Some(1) && stderr.contains("CUDA")), "{stderr}");
    std::fs::write(&prompt, "[1, 5, 300]").unwrap();
    let run = nbx(&["generate", "--model", m, "--prompt-ids", p, "--max-new-tokens", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("300") && stderr.contains("vocabulary"), "{stderr}");
    std::fs::write(&prompt, "{\"ids\": [1]}").unwrap();
    let run = nbx(&["generate", "--model", m, "--prompt-ids", p]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("JSON list of token ids"), "{stderr}");
    let untokenized = checkpoint("qwen2-tiny");
    let run = nbx(&["generate", "--model", untokenized.to_str().unwrap(), "--prompt", "hello"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && stderr.contains("tokenizer.json"), "{stderr}");
}

/// A text prompt goes through the checkpoint's tokenizer.json (byte-level: a text's ids are its
/// UTF-8 bytes) and generates what its ids generate; the text is streamed to stdout.
#[test]
fn a_text_prompt_is_tokenized_and_generates_as_its_ids_do() {
    let dir = scratch("text");
    let model = checkpoint("llama2-tiny");
    let m = model.to_str().unwrap();
    let (from_text, from_ids, ids) = (dir.join("text.json"), dir.join("ids.json"), dir.join("prompt.json"));
    let run = nbx(&[
        "generate",
        "--model",
        m,
        "--prompt",
        "Once upon a time",
        "--max-new-tokens",
        "24",
        "--output",
        from_text.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(!run.stdout.is_empty(), "the text is streamed to stdout");
    let text: Value = serde_json::from_str(&std::fs::read_to_string(&from_text).unwrap()).unwrap();
    let bytes: Vec<i64> = "Once upon a time".bytes().map(i64::from).collect();
    assert_eq!(text["prompt_ids"], serde_json::json!(bytes));
    std::fs::write(&ids, text["prompt_ids"].to_string()).unwrap();
    let run = nbx(&[
        "generate",
        "--model",
        m,
        "--prompt-ids",
        ids.to_str().unwrap(),
        "--max-new-tokens",
        "24",
        "--output",
        from_ids.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&from_ids).unwrap()).unwrap();
    assert_eq!(text["generated_ids"], again["generated_ids"]);
    assert!(text == again, "the same prompt logits from the text and from its ids");
    assert_eq!(text["generated_ids"].as_array().unwrap().len(), 24, "no end token in these 24");
}

/// The generated ids and prompt logits of one `nbx generate` run (and its stderr).
fn generated(model: &Path, prompt: &Path, extra: &[&str], tag: &str) -> (Vec<i64>, Vec<f64>, String) {
    let output = prompt.with_file_name(format!("{tag}.json"));
    let mut args = vec!["generate", "--model", model.to_str().unwrap(), "--prompt-ids", prompt.to_str().unwrap()];
    args.extend_from_slice(&["--max-new-tokens", "20", "--output", output.to_str().unwrap()]);
    args.extend_from_slice(extra);
    let run = nbx(&args);
    let stderr = String::from_utf8_lossy(&run.stderr).to_string();
    assert!(run.status.success(), "{extra:?}: {stderr}");
    let got: Value = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    let ids = got["generated_ids"].as_array().unwrap().iter().map(|v| v.as_i64().unwrap()).collect();
    let logits = got["prefill_last_logits"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    (ids, logits, stderr)
}

#[test]
fn a_seed_repeats_a_sampled_run_and_the_half_dtypes_stay_within_tolerance() {
    let dir = scratch("sampled");
    let model = checkpoint("qwen2-tiny");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(model.join("reference.json")).unwrap()).unwrap();
    let prompt = dir.join("prompt.json");
    std::fs::write(&prompt, r["prompt_ids"].to_string()).unwrap();
    let sampled = ["--temperature", "0.9", "--top-k", "50", "--top-p", "0.95", "--seed", "42"];
    let (a, _, stderr) = generated(&model, &prompt, &sampled, "a");
    assert!(stderr.contains("seed 42"), "{stderr}");
    let (b, _, _) = generated(&model, &prompt, &sampled, "b");
    assert_eq!(a, b, "the same seed, the same tokens");
    let (greedy, want, stderr) = generated(&model, &prompt, &[], "greedy");
    assert!(stderr.contains("greedy") && stderr.contains("float32"), "the checkpoint's dtype: {stderr}");
    assert_ne!(a, greedy, "a draw at temperature 0.9 is not the greedy sequence");
    let (zero, _, _) = generated(&model, &prompt, &["--temperature", "0", "--seed", "3"], "zero");
    assert_eq!(zero, greedy, "temperature 0 is greedy");
    let largest = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    for (dtype, tolerance) in [("bfloat16", 0.03), ("float16", 0.005)] {
        let (_, logits, stderr) = generated(&model, &prompt, &["--dtype", dtype], dtype);
        assert!(stderr.contains(&format!("in {dtype}")), "{stderr}");
        let diff = logits.iter().zip(&want).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
        assert!(diff <= tolerance * largest, "{dtype}: prompt logits differ by {diff} (largest {largest})");
    }
}

/// The number after `label` in `text` (the first one).
fn number_after(text: &str, label: &str) -> u64 {
    let at = text.find(label).unwrap_or_else(|| panic!("no {label:?} in:\n{text}")) + label.len();
    text[at..].trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn price_says_before_loading_what_generate_then_holds() {
    let dir = scratch("price");
    for (name, dtype, prompt_length, new_tokens) in
        [("qwen2-tiny", "bfloat16", 11usize, 9usize), ("llama3-tiny", "float32", 3, 30)]
    {
        let model = checkpoint(name);
        let model = model.to_str().unwrap();
        let context = (prompt_length + new_tokens).to_string();
        let tokens = prompt_length.to_string();
        let price =
            nbx(&["price", "--model", model, "--context", &context, "--prompt-tokens", &tokens, "--dtype", dtype]);
        let printed = String::from_utf8_lossy(&price.stdout);
        assert!(price.status.success(), "{name}: {}", String::from_utf8_lossy(&price.stderr));
        let priced = number_after(&printed, "held");
        let prompt = dir.join(format!("{name}_prompt.json"));
        let ids: Vec<i64> = (0..prompt_length as i64).map(|i| (i * 13 + 5) % 100).collect();
        std::fs::write(&prompt, serde_json::to_string(&ids).unwrap()).unwrap();
        let new = new_tokens.to_string();
        let run = nbx(&[
            "generate",
            "--model",
            model,
            "--prompt-ids",
            prompt.to_str().unwrap(),
            "--max-new-tokens",
            &new,
            "--dtype",
            dtype,
        ]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert!(run.status.success(), "{name}: {stderr}");
        assert_eq!(
            number_after(&stderr, "memory held on cpu:"),
            priced,
            "{name}: held against nbx price\n{printed}\n{stderr}"
        );
        assert_eq!(number_after(&stderr, "bytes, priced"), priced, "{name}: generate's own price\n{stderr}");
        if dtype == "float32" {
            assert!(printed.contains("0.00 MiB allocated"), "{name}: the float32 weights are mapped\n{printed}");
        }
    }
    let err = nbx(&["price", "--model", checkpoint("llama3-tiny").to_str().unwrap()]);
    assert!(!err.status.success() && String::from_utf8_lossy(&err.stderr).contains("--context"));
}
