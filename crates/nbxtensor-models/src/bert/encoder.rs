//! The BERT encoder as nbxtensor ops: embeddings (word + position + segment 0, layer norm),
//! then per layer multi-head self-attention (`sdpa` with an additive padding mask), a residual
//! layer norm, a gelu feed-forward and a second residual layer norm.
//!
//! Fused as onnxruntime fuses BERT, each fusion the same arithmetic as its parts: q, k and v
//! come from one product by the joined weight ([`LayerWeights::qkv`](super::LayerWeights)),
//! taken as strided views of its output (every backend's `sdpa` reads its operands through
//! their strides); each residual add and the layer norm after it are one `add_layer_norm`
//! (bit for bit `add` then `layer_norm`). Dense layers quantized to int8 at load
//! ([`BertWeights::quantized_int8`]) run `matmul_int8`, x quantized per row as it runs;
//! float32 ones laid out in panels ([`BertWeights::packed`]) run `linear_packed`.

use super::{BertConfig, BertWeights, Dense, DenseWeight, Norm};
use crate::error::{ModelError, Result};
use nbxtensor::kernel::{AttrValue, Attrs, KernelError};
use nbxtensor::ops;
use nbxtensor::program::ProgramError;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::path::Path;

/// A BERT encoder: its config and its weights.
#[derive(Clone)]
pub struct Bert {
    /// The sizes.
    pub config: BertConfig,
    /// The weights.
    pub weights: BertWeights,
}

/// One op's single output.
fn op(name: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Tensor, KernelError> {
    Ok(ops::call(name, attrs, inputs)?.remove(0))
}

fn dense(x: &Tensor, d: &Dense) -> Result<Tensor, KernelError> {
    match &d.weight {
        DenseWeight::Float(weight) => op("linear", &Attrs::new(), &[x, weight, &d.bias]),
        DenseWeight::Packed { panels, out } => {
            if let Some(policy) = ops::policy_in_force().filter(|p| p.compute() != DType::Float32) {
                return Err(KernelError::Invalid(format!(
                    "the dense layers are packed for float32 products (linear_packed) and the {} compute of the policy in force cannot run them: unpack them first (SentenceEmbedder::unpack_weights)",
                    policy.compute()
                )));
            }
            op("linear_packed", &Attrs::new().with("features", AttrValue::Int(*out as i64)), &[x, panels, &d.bias])
        }
        DenseWeight::Int8 { codes, scales, .. } => op("matmul_int8", &Attrs::new(), &[x, codes, scales, &d.bias]),
    }
}

impl Bert {
    /// Reads `config.json` and maps `model.safetensors` from the model directory `dir`.
    ///
    /// ```no_run
    /// let bert = nbxtensor_models::bert::Bert::open("path/to/all-MiniLM-L6-v2".as_ref())?;
    /// assert_eq!(bert.config.hidden_size, 384);
    /// # Ok::<(), nbxtensor_models::ModelError>(())
    /// ```
    pub fn open(dir: &Path) -> Result<Bert> {
        if !dir.is_dir() {
            return Err(ModelError::Files(format!("no model directory {}", dir.display())));
        }
        let config = BertConfig::read(&dir.join("config.json"))?;
        let weights = BertWeights::load(&dir.join("model.safetensors"), &config)?;
        Ok(Bert { config, weights })
    }

    fn eps(&self) -> Attrs {
        Attrs::new().with("eps", AttrValue::Float(self.config.layer_norm_eps))
    }

    fn norm(&self, x: &Tensor, n: &Norm) -> Result<Tensor, KernelError> {
        op("layer_norm", &self.eps(), &[x, &n.weight, &n.bias])
    }

    /// The layer norm of `x + residual` (their sum, the op's first output, is not needed).
    fn add_norm(&self, x: &Tensor, residual: &Tensor, n: &Norm) -> Result<Tensor, KernelError> {
        Ok(ops::call("add_layer_norm", &self.eps(), &[x, residual, &n.weight, &n.bias])?.remove(1))
    }

    /// The last hidden states `[b, s, hidden]` of token ids `ids` (`[b, s]`, int64) under
    /// `mask`, an additive float32 mask broadcast to the attention scores (`[b, 1, 1, s]`: 0
    /// for a token, a large negative value for padding). Every step is an op call, so the
    /// function traces into a program as it is.
    pub fn forward(&self, ids: &Tensor, mask: &Tensor) -> Result<Tensor, ProgramError> {
        let c = &self.config;
        let &[batch, seq] = ids.shape() else {
            return Err(ProgramError::Invalid(format!("bert: ids must be [batch, seq], got {:?}", ids.shape())));
        };
        if seq as usize > c.max_position_embeddings {
            return Err(ProgramError::Invalid(format!(
                "bert: {seq} tokens, over the model's {} positions",
                c.max_position_embeddings
            )));
        }
        let e = &self.weights.embeddings;
        let words = op("embedding", &Attrs::new(), &[ids, &e.word])?;
        let positions = e.position.narrow(0, 0, seq)?;
        let segment = e.token_type.narrow(0, 0, 1)?;
        let summed = op("add", &Attrs::new(), &[&op("add", &Attrs::new(), &[&words, &positions])?, &segment])?;
        let mut x = self.norm(&summed, &e.norm)?;
        let (heads, head_dim, hidden) = (c.num_attention_heads as i64, c.head_dim() as i64, c.hidden_size as i64);
        // part `i` (0: q, 1: k, 2: v) of the joined product `[b, s, 3·hidden]` as heads
        // `[b, heads, s, head_dim]`: a view, rows 3·hidden apart
        let split = |qkv: &Tensor, i: i64| {
            qkv.narrow(2, i * hidden, hidden)?.reshape(&[batch, seq, heads, head_dim])?.permute(&[0, 2, 1, 3])
        };
        for layer in &self.weights.layers {
            let qkv = dense(&x, &layer.qkv)?;
            let (q, k, v) = (split(&qkv, 0)?, split(&qkv, 1)?, split(&qkv, 2)?);
            let heads_last = op("sdpa", &Attrs::new(), &[&q, &k, &v, mask])?.permute(&[0, 2, 1, 3])?;
            let context = op("copy", &Attrs::new(), &[&heads_last])?.reshape(&[batch, seq, hidden])?;
            x = self.add_norm(&x, &dense(&context, &layer.attention_out)?, &layer.attention_norm)?;
            let up = op("gelu", &Attrs::new(), &[&dense(&x, &layer.intermediate)?])?;
            x = self.add_norm(&x, &dense(&up, &layer.output)?, &layer.output_norm)?;
        }
        Ok(x)
    }
}
