//! A BERT model's `config.json`: the sizes the encoder is built with.

use crate::error::{ModelError, Result};
use serde::Deserialize;
use std::path::Path;

/// The fields of a Hugging Face BERT `config.json` the encoder uses (the others are ignored).
#[derive(Clone, Debug, Deserialize, PartialEq)]
pub struct BertConfig {
    /// Width of every token's hidden state.
    pub hidden_size: usize,
    /// Encoder layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer (they split `hidden_size`).
    pub num_attention_heads: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Rows of the position table: the longest sequence the model takes.
    pub max_position_embeddings: usize,
    /// Rows of the word table.
    pub vocab_size: usize,
    /// The epsilon of every layer norm.
    pub layer_norm_eps: f64,
    /// The feed-forward activation (only the erf form `gelu` is served).
    pub hidden_act: String,
}

impl BertConfig {
    /// Reads and checks `config.json` at `path`.
    pub fn read(path: &Path) -> Result<BertConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Files(format!("cannot read {}: {e}", path.display())))?;
        let config: BertConfig = serde_json::from_str(&text)
            .map_err(|e| ModelError::Files(format!("{} is not a BERT config: {e}", path.display())))?;
        config.check().map_err(|why| ModelError::Files(format!("{}: {why}", path.display())))?;
        Ok(config)
    }

    /// Refuses sizes the encoder cannot be built with.
    pub fn check(&self) -> Result<(), String> {
        if self.hidden_act != "gelu" {
            return Err(format!("hidden_act {:?} is not served (only \"gelu\", the erf form)", self.hidden_act));
        }
        let sizes = [self.hidden_size, self.num_attention_heads, self.intermediate_size, self.vocab_size];
        if sizes.contains(&0) || self.max_position_embeddings == 0 {
            return Err("a size is 0".into());
        }
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        Ok(())
    }

    /// Width of one attention head.
    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Result<BertConfig, String> {
        let c: BertConfig = serde_json::from_str(text).map_err(|e| e.to_string())?;
        c.check().map(|()| c)
    }

    #[test]
    fn reads_the_sizes_and_refuses_what_does_not_fit() {
        let base = r#""hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536,
            "max_position_embeddings": 512, "vocab_size": 30522, "layer_norm_eps": 1e-12"#;
        let c = config(&format!(r#"{{{base}, "hidden_act": "gelu", "model_type": "bert"}}"#)).unwrap();
        assert_eq!((c.head_dim(), c.num_hidden_layers), (32, 6));
        let err = config(&format!(r#"{{{base}, "hidden_act": "relu"}}"#)).unwrap_err();
        assert!(err.contains("relu"), "{err}");
        let err = config(&format!(r#"{{{}, "hidden_act": "gelu"}}"#, base.replace("12,", "7,"))).unwrap_err();
        assert!(err.contains("384") && err.contains('7'), "{err}");
    }
}
