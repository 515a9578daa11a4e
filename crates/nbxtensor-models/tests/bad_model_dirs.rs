//! Opening a model directory that is missing, incomplete or malformed is refused by a message
//! naming the file at fault (no panic).

use nbxtensor_models::SentenceEmbedder;
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nbx_models_{name}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn refusal(dir: &std::path::Path) -> String {
    match SentenceEmbedder::open(dir) {
        Ok(_) => panic!("{} was accepted", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_incomplete_and_malformed_directories_are_refused_by_name() {
    let missing = std::env::temp_dir().join("nbx_models_no_such_dir");
    assert!(refusal(&missing).contains("no model directory"));

    let empty = scratch("empty");
    let err = refusal(&empty);
    assert!(err.contains("config.json"), "{err}");

    let config = r#"{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 16,
        "max_position_embeddings": 4, "vocab_size": 10, "layer_norm_eps": 1e-12, "hidden_act": "gelu"}"#;
    std::fs::write(empty.join("config.json"), config).unwrap();
    let err = refusal(&empty);
    assert!(err.contains("model.safetensors"), "{err}");

    std::fs::write(empty.join("model.safetensors"), b"not a safetensors file").unwrap();
    let err = refusal(&empty);
    assert!(err.to_lowercase().contains("header") || err.contains("safetensors"), "{err}");

    std::fs::write(empty.join("config.json"), "[1, 2]").unwrap();
    let err = refusal(&empty);
    assert!(err.contains("not a BERT config"), "{err}");
    std::fs::remove_dir_all(&empty).unwrap();
}
