//! Models built from nbxtensor ops, outside the core: a BERT encoder ([`bert::Bert`]) loaded
//! from Hugging Face safetensors by memory map, and sentence embeddings as sentence-transformers
//! computes them ([`SentenceEmbedder`]: mean pooling over the attention mask, L2
//! normalisation), run as traced, planned and captured programs — one verified replay per
//! (batch, sequence) shape; and Llama-family decoders ([`llama::Llama`]) with greedy
//! generation ([`llama::Generator`]): a prefill program per prompt-length bucket and one
//! decode program replayed for every token over a KV cache written in place.

pub mod bert;
mod error;
pub mod llama;
mod named;
mod sentence;
mod tokenize;

pub use error::{ModelError, Result};
pub use sentence::{
    BatchMemory, BatchMode, BatchReport, BatchRun, SentenceBatch, SentenceEmbedder, CAPTURE_AT, MAX_TOKENS, NORM_FLOOR,
    PADDING_SCORE, REPLAY_BUDGET,
};
pub use tokenize::TextTokenizer;
