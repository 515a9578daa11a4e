//! Tokenization with the Hugging Face `tokenizers` crate (its pure-Rust regex backend): a
//! model's `tokenizer.json`, with the file's own padding turned off and truncation set to the
//! model's longest sequence.

use crate::error::{ModelError, Result};
use std::path::Path;
use tokenizers::{Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

/// A tokenizer that turns one text into token ids, special tokens included, at most
/// `max_tokens` of them.
pub struct TextTokenizer {
    inner: Tokenizer,
    max_tokens: usize,
}

impl TextTokenizer {
    /// Reads `tokenizer.json` at `path`; texts are cut to `max_tokens` ids (special tokens
    /// counted), as sentence-transformers cuts them to `max_seq_length`.
    pub fn open(path: &Path, max_tokens: usize) -> Result<TextTokenizer> {
        if !path.is_file() {
            return Err(ModelError::Files(format!("no tokenizer file {}", path.display())));
        }
        let mut inner = Tokenizer::from_file(path)
            .map_err(|e| ModelError::Tokenizer(format!("cannot read {}: {e}", path.display())))?;
        let truncation = TruncationParams {
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        inner.with_truncation(Some(truncation)).map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        inner.with_padding(None);
        Ok(TextTokenizer { inner, max_tokens })
    }

    /// The longest sequence a text becomes.
    pub fn max_tokens(&self) -> usize {
        self.max_tokens
    }

    /// The ids of `text`: `[CLS] … [SEP]` for a BERT tokenizer, cut to `max_tokens`.
    pub fn ids(&self, text: &str) -> Result<Vec<i64>> {
        let encoding = self.inner.encode(text, true).map_err(|e| ModelError::Tokenizer(e.to_string()))?;
        Ok(encoding.get_ids().iter().map(|&id| i64::from(id)).collect())
    }

    /// The text of `ids`, special tokens left out.
    pub fn decode(&self, ids: &[i64]) -> Result<String> {
        let ids = ids
            .iter()
            .map(|&id| u32::try_from(id).map_err(|_| ModelError::Tokenizer(format!("token id {id} is not a u32"))))
            .collect::<Result<Vec<u32>>>()?;
        self.inner.decode(&ids, true).map_err(|e| ModelError::Tokenizer(e.to_string()))
    }
}
