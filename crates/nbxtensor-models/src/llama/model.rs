//! The Llama decoder as nbxtensor ops, batch 1, over a KV cache the model holds: a prefill of
//! a prompt padded to a bucket length (`sdpa`, causal) and a decode step of one token
//! (`decode_attention` over the cache), both writing their keys and values into the cache in
//! place (`kv_cache_write`). Every step is an op call, so both trace into programs as they are.
//!
//! Per layer, as Hugging Face's `LlamaDecoderLayer`: `rms_norm` → `linear` q, k, v (biases for
//! Qwen2) → `rope` on q and k (pairs `(i, i + d/2)`, HF's `rotate_half` layout) → attention
//! (grouped-query heads) → `linear` o → residual add and `rms_norm` → `silu(gate) · up` →
//! `linear` down → residual add; then the final `rms_norm`, the output head and `argmax`
//! (greedy) or `sample` (a seeded draw keyed by the position, [`Sampling`]).
//!
//! Fused where the decode step's profile says so, each fusion bit for bit its parts on the
//! same backend or a reordering of one product: a residual add and the norm after it are one
//! `add_rms_norm`; where the weights are copies anyway (a GPU, a cast) q, k and v are one
//! product and gate and up another ([`LayerWeights`](super::LayerWeights)`::qkv`, `gate_up`), and q
//! and k are rotated in one `rope` launch; a view already in row-major order is not copied.
//!
//! Everything runs in the weights' dtype on their device, as HF runs a half model: the rotary
//! tables are computed in float32 and cast, the norms and softmaxes accumulate in float32
//! inside their kernels.

use super::{LlamaConfig, LlamaWeights, Placement, Projection};
use crate::error::{ModelError, Result};
use nbxtensor::kernel::{Attrs, KernelError};
use nbxtensor::memory::Device;
use nbxtensor::ops;
use nbxtensor::program::ProgramError;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::path::Path;

/// A Llama-family decoder: its config and its weights.
#[derive(Clone)]
pub struct Llama {
    /// The sizes and facts.
    pub config: LlamaConfig,
    /// The weights.
    pub weights: LlamaWeights,
}

/// How a decoder picks its next token from the logits: a draw from `softmax(logits /
/// temperature)` kept to the `top_k` most likely tokens (0: all) and the smallest set whose
/// mass reaches `top_p` (1: all), from the Philox stream of `seed` at the token's position
/// (the same seed gives the same tokens on every device where the logits agree). Greedy
/// decoding (argmax) is no `Sampling` at all.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    /// Above 0, finite.
    pub temperature: f64,
    /// The most likely tokens kept; 0 keeps every token.
    pub top_k: usize,
    /// In (0, 1]: the nucleus's mass; 1 keeps every token.
    pub top_p: f64,
    /// The stream's seed.
    pub seed: u64,
}

/// The state a decoder runs over: one key and one value cache per layer (`[1, kv_heads,
/// capacity, head_dim]` in the weights' dtype, written in place) and the rotary tables of
/// every position (`[capacity, head_dim / 2]`), on the weights' device.
pub struct DecodeState {
    /// Key caches, one per layer.
    pub keys: Vec<Tensor>,
    /// Value caches, one per layer.
    pub values: Vec<Tensor>,
    /// `cos(position · frequency)`.
    pub cos: Tensor,
    /// `sin(position · frequency)`.
    pub sin: Tensor,
    /// Position 0, `[1]` int64: where a prefill writes.
    pub origin: Tensor,
}

impl DecodeState {
    /// The rows each cache holds.
    pub fn capacity(&self) -> usize {
        self.cos.shape().first().map_or(0, |&rows| rows as usize)
    }

    /// The caches of layer `n`.
    fn layer(&self, n: usize) -> Result<(&Tensor, &Tensor), ProgramError> {
        match (self.keys.get(n), self.values.get(n)) {
            (Some(k), Some(v)) => Ok((k, v)),
            _ => Err(ProgramError::Invalid(format!(
                "llama: no KV cache for layer {n} (the state holds {} key and {} value caches)",
                self.keys.len(),
                self.values.len()
            ))),
        }
    }

    /// Bytes of the key and value caches together.
    pub fn cache_bytes(&self) -> u64 {
        let bytes = |t: &Tensor| t.numel() as u64 * t.dtype().itemsize().map_or(0, |w| w as u64);
        self.keys.iter().chain(&self.values).map(bytes).sum()
    }
}

/// One op's single output.
fn op(name: &str, inputs: &[&Tensor]) -> Result<Tensor, KernelError> {
    Ok(ops::call(name, &Attrs::new(), inputs)?.remove(0))
}

/// `t` itself where its elements are already in row-major order (a view of size-1 dims
/// permuted, a leading slice), else a contiguous copy: no launch where none is needed.
fn contiguous(t: &Tensor) -> Result<Tensor, KernelError> {
    match t.is_contiguous() {
        true => Ok(t.clone()),
        false => op("copy", &[t]),
    }
}

fn project(x: &Tensor, p: &Projection) -> Result<Tensor, KernelError> {
    p.apply(x)
}

impl Llama {
    /// Reads `config.json` and maps the weights (`model.safetensors` or a sharded index) of
    /// the model directory `dir`, on the CPU in the checkpoint's dtype.
    pub fn open(dir: &Path) -> Result<Llama> {
        Llama::open_as(dir, Placement::CHECKPOINT_ON_CPU)
    }

    /// [`Llama::open`] into the placement's device and dtype.
    pub fn open_as(dir: &Path, placement: Placement) -> Result<Llama> {
        if !dir.is_dir() {
            return Err(ModelError::Files(format!("no model directory {}", dir.display())));
        }
        let config = LlamaConfig::read(&dir.join("config.json"))?;
        let weights = LlamaWeights::load(dir, &config, placement)?;
        Ok(Llama { config, weights })
    }

    /// The device the weights live on.
    pub fn device(&self) -> Device {
        self.weights.embed.device()
    }

    /// Refuses a context of `capacity` positions the model does not take.
    fn check_capacity(&self, capacity: usize) -> Result<()> {
        let c = &self.config;
        if capacity == 0 || capacity > c.max_position_embeddings {
            return Err(ModelError::Input(format!(
                "a context of {capacity} positions: the model takes 1 to {} (max_position_embeddings)",
                c.max_position_embeddings
            )));
        }
        if let Some(window) = c.sliding_window.filter(|&w| w < capacity) {
            return Err(ModelError::Input(format!(
                "a context of {capacity} positions is past the sliding window of {window}: sliding-window attention is not served"
            )));
        }
        Ok(())
    }

    /// The shapes of one layer's key (or value) cache and of a rotary table, for `capacity`
    /// positions.
    fn state_shapes(&self, capacity: usize) -> ([i64; 4], [i64; 2]) {
        let c = &self.config;
        let cache = [1, c.num_key_value_heads as i64, capacity as i64, c.head_dim as i64];
        (cache, [capacity as i64, (c.head_dim / 2) as i64])
    }

    /// The state [`Llama::state`] makes, as symbolic tensors (no memory) on the model's device:
    /// what a program is traced and priced over before anything is allocated.
    pub fn symbolic_state(&self, capacity: usize) -> Result<DecodeState> {
        self.check_capacity(capacity)?;
        let (device, dtype) = (self.device(), self.weights.dtype);
        let (cache, table) = self.state_shapes(capacity);
        let caches = || {
            (0..self.config.num_hidden_layers)
                .map(|_| Tensor::symbolic(device, dtype, &cache))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(DecodeState {
            keys: caches()?,
            values: caches()?,
            cos: Tensor::symbolic(device, dtype, &table)?,
            sin: Tensor::symbolic(device, dtype, &table)?,
            origin: Tensor::symbolic(device, DType::Int64, &[1])?,
        })
    }

    /// Zeroed caches and the rotary tables of `capacity` positions (at most the model's
    /// `max_position_embeddings`, and within Mistral's sliding window).
    pub fn state(&self, capacity: usize) -> Result<DecodeState> {
        self.check_capacity(capacity)?;
        let c = &self.config;
        let frequencies = c.inverse_frequencies();
        let half = frequencies.len();
        let (mut cos, mut sin) = (Vec::with_capacity(capacity * half), Vec::with_capacity(capacity * half));
        for position in 0..capacity {
            for &f in &frequencies {
                let angle = position as f32 * f;
                cos.push(angle.cos());
                sin.push(angle.sin());
            }
        }
        let (device, dtype) = (self.device(), self.weights.dtype);
        let (shape, table_shape) = self.state_shapes(capacity);
        let caches =
            || (0..c.num_hidden_layers).map(|_| Tensor::zeros_on(device, dtype, &shape)).collect::<Result<Vec<_>, _>>();
        let table = |values: Vec<f32>| -> Result<Tensor> {
            Ok(Tensor::from_vec(values, &table_shape)?.cast(dtype)?.to(device)?)
        };
        Ok(DecodeState {
            keys: caches()?,
            values: caches()?,
            cos: table(cos)?,
            sin: table(sin)?,
            origin: Tensor::from_vec(vec![0i64], &[1])?.to(device)?,
        })
    }

    /// `[1, s, heads · d]` → `[1, heads, s, d]` (a view).
    fn heads(&self, x: &Tensor, heads: usize) -> Result<Tensor, ProgramError> {
        let s = x.shape()[1];
        Ok(x.reshape(&[1, s, heads as i64, self.config.head_dim as i64])?.permute(&[0, 2, 1, 3])?)
    }

    /// The layers over hidden states `x` (`[1, s, hidden]`), with the rotary rows `cos`, `sin`
    /// (`[s, head_dim / 2]`) of their positions; `attend(layer, q, k, v)` writes k and v into
    /// the layer's caches and returns the attention `[1, heads, s, d]`.
    fn layers(
        &self,
        mut x: Tensor,
        cos: &Tensor,
        sin: &Tensor,
        mut attend: impl FnMut(usize, &Tensor, &Tensor, &Tensor) -> Result<Tensor, ProgramError>,
    ) -> Result<Tensor, ProgramError> {
        let c = &self.config;
        let eps = c.rms_norm_eps;
        let s = x.shape()[1];
        let (nq, nkv) = (c.num_attention_heads as i64, c.num_key_value_heads as i64);
        // the feed-forward's output, added to the residual stream with the next layer's norm
        let mut pending: Option<Tensor> = None;
        for (n, layer) in self.weights.layers.iter().enumerate() {
            let h = match pending.take() {
                Some(fed) => {
                    let (sum, h) = x.add_rms_norm(&fed, &layer.input_norm, eps)?;
                    x = sum;
                    h
                }
                None => x.rms_norm(&layer.input_norm, eps)?,
            };
            let (q, k, v) = match &layer.qkv {
                Some(qkv) => {
                    // one product, and q and k rotated in one launch
                    let all = self.heads(&project(&h, qkv)?, c.num_attention_heads + 2 * c.num_key_value_heads)?;
                    let qk = all.narrow(1, 0, nq + nkv)?.rope(cos, sin, false)?;
                    (qk.narrow(1, 0, nq)?, qk.narrow(1, nq, nkv)?, all.narrow(1, nq + nkv, nkv)?)
                }
                None => (
                    self.heads(&project(&h, &layer.q)?, c.num_attention_heads)?.rope(cos, sin, false)?,
                    self.heads(&project(&h, &layer.k)?, c.num_key_value_heads)?.rope(cos, sin, false)?,
                    self.heads(&project(&h, &layer.v)?, c.num_key_value_heads)?,
                ),
            };
            let attention = attend(n, &q, &k, &contiguous(&v)?)?.permute(&[0, 2, 1, 3])?;
            let merged = contiguous(&attention)?.reshape(&[1, s, (c.num_attention_heads * c.head_dim) as i64])?;
            let (sum, h) = x.add_rms_norm(&project(&merged, &layer.o)?, &layer.post_attention_norm, eps)?;
            x = sum;
            let fed = match &layer.gate_up {
                Some(joined) => {
                    let both = joined.apply(&h)?;
                    let i = c.intermediate_size as i64;
                    both.narrow(-1, 0, i)?.silu_mul(&both.narrow(-1, i, i)?)?
                }
                None => project(&h, &layer.gate)?.silu_mul(&project(&h, &layer.up)?)?,
            };
            pending = Some(project(&fed, &layer.down)?);
        }
        if let Some(fed) = pending {
            x = x.add(&fed)?;
        }
        Ok(x)
    }

    /// The logits `[1, 1, vocab]` and the next token `[1, 1]` (int64) of one hidden row
    /// `[1, 1, hidden]` at `position` (`[1]` int64): the argmax, or a draw when `sampling`.
    fn head(&self, row: &Tensor, position: &Tensor, sampling: Option<&Sampling>) -> Result<Vec<Tensor>, ProgramError> {
        let normed = row.rms_norm(&self.weights.norm, self.config.rms_norm_eps)?;
        let logits = normed.linear(&self.weights.lm_head, None)?;
        let token = match sampling {
            None => logits.argmax(-1, false)?,
            Some(s) => logits.sample(position, s.temperature, s.top_k, s.top_p, s.seed)?,
        };
        Ok(vec![logits, token])
    }

    /// The prefill of `ids` (`[1, s]` int64, a prompt padded at its end to a bucket length
    /// `s` ≤ the state's capacity) whose last real token is at `last` (`[1]` int64): writes
    /// rows `0..s` of every cache (the padding's rows are rewritten by the decode steps before
    /// any is read) and returns the logits `[1, 1, vocab]` at `last` and the next token `[1, 1]`
    /// (drawn at position `last` when `sampling`).
    pub fn prefill(
        &self,
        state: &DecodeState,
        ids: &Tensor,
        last: &Tensor,
        sampling: Option<&Sampling>,
    ) -> Result<Vec<Tensor>, ProgramError> {
        let &[1, s] = ids.shape() else {
            return Err(ProgramError::Invalid(format!("llama prefill: ids must be [1, seq], got {:?}", ids.shape())));
        };
        if s as usize > state.capacity() {
            return Err(ProgramError::Invalid(format!(
                "llama prefill: {s} positions do not fit a cache of {}",
                state.capacity()
            )));
        }
        let x = ids.embedding(&self.weights.embed)?;
        let (cos, sin) = (state.cos.narrow(0, 0, s)?, state.sin.narrow(0, 0, s)?);
        let hidden = self.layers(x, &cos, &sin, |n, q, k, v| {
            let (keys, values) = state.layer(n)?;
            keys.kv_cache_write(k, &state.origin)?;
            values.kv_cache_write(v, &state.origin)?;
            Ok(q.sdpa(k, v, None, true, None)?)
        })?;
        self.head(&hidden.index_select(last, 1)?, last, sampling)
    }

    /// One decode step: the token `token` (`[1, 1]` int64) at `position` (`[1]` int64),
    /// attending over `length` (`[1]` int64, `position + 1`) cache rows after writing its own
    /// key and value at `position`; returns the logits `[1, 1, vocab]` and the next token
    /// `[1, 1]` (drawn at `position` when `sampling`).
    pub fn decode(
        &self,
        state: &DecodeState,
        token: &Tensor,
        position: &Tensor,
        length: &Tensor,
        sampling: Option<&Sampling>,
    ) -> Result<Vec<Tensor>, ProgramError> {
        let x = token.embedding(&self.weights.embed)?;
        let (cos, sin) = (position.embedding(&state.cos)?, position.embedding(&state.sin)?);
        let hidden = self.layers(x, &cos, &sin, |n, q, k, v| {
            let (keys, values) = state.layer(n)?;
            keys.kv_cache_write(k, position)?;
            values.kv_cache_write(v, position)?;
            Ok(q.decode_attention(keys, values, length, true, None)?)
        })?;
        self.head(&hidden, position, sampling)
    }
}
