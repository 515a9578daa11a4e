//! A BERT encoder (Hugging Face `BertModel` weights) built from nbxtensor ops.

mod config;
mod encoder;
mod weights;

pub use config::BertConfig;
pub use encoder::Bert;
pub use weights::{BertWeights, Dense, DenseWeight, EmbeddingWeights, LayerWeights, Norm};
