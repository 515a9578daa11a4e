//! A Llama-family model's weights: `model.safetensors`, or the shards a
//! `model.safetensors.index.json` names, mapped (zero-copy on the CPU where a file's data is
//! aligned and already in the dtype asked), each tensor checked by name and shape against the
//! config, then cast to the dtype asked and sent once to the device asked (on a GPU the cast
//! runs there, after the copy). A tensor the decoder does not use is refused by name (except
//! the rotary tables some checkpoints store).

use super::LlamaConfig;
use crate::error::{ModelError, Result};
use crate::named::Named;
use nbxtensor::backend;
use nbxtensor::io::safetensors::{load, open};
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// A projection `x · weightᵀ (+ bias)`.
#[derive(Clone)]
pub struct Projection {
    /// `[out, in]`.
    pub weight: Tensor,
    /// `[out]`, when the checkpoint has one.
    pub bias: Option<Tensor>,
}

/// One decoder layer.
#[derive(Clone)]
pub struct LayerWeights {
    /// The RMS norm's scale before attention, `[hidden]`.
    pub input_norm: Tensor,
    /// Query projection, `[heads · head_dim, hidden]`.
    pub q: Projection,
    /// Key projection, `[kv_heads · head_dim, hidden]`.
    pub k: Projection,
    /// Value projection, `[kv_heads · head_dim, hidden]`.
    pub v: Projection,
    /// Attention output, `[hidden, heads · head_dim]`.
    pub o: Projection,
    /// The RMS norm's scale before the feed-forward, `[hidden]`.
    pub post_attention_norm: Tensor,
    /// `[intermediate, hidden]`.
    pub gate: Projection,
    /// `[intermediate, hidden]`.
    pub up: Projection,
    /// `[hidden, intermediate]`.
    pub down: Projection,
    /// q, k and v joined, `[(heads + 2 · kv_heads) · head_dim, hidden]` (their rows in that
    /// order), when the weights are copies anyway (on a GPU, or cast): one product where there
    /// were three; `q`, `k` and `v` are then views of it.
    pub qkv: Option<Projection>,
    /// gate and up joined, `[2 · intermediate, hidden]`, on the same terms; `gate` and `up` are
    /// then views of it.
    pub gate_up: Option<Tensor>,
}

/// Where a model's weights and caches live and in which float dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The device of the weights, caches and programs.
    pub device: Device,
    /// The dtype of the weights, caches and activations; `None`: the checkpoint's own (the
    /// dtype of its token table).
    pub dtype: Option<DType>,
}

impl Placement {
    /// The CPU, in the checkpoint's dtype.
    pub const CHECKPOINT_ON_CPU: Placement = Placement { device: Device::CPU, dtype: None };
}

/// Every weight of a Llama-family decoder, in one float dtype on one device.
#[derive(Clone)]
pub struct LlamaWeights {
    /// The token table, `[vocab, hidden]`.
    pub embed: Tensor,
    /// The layers, in order.
    pub layers: Vec<LayerWeights>,
    /// The final RMS norm's scale, `[hidden]`.
    pub norm: Tensor,
    /// The output head, `[vocab, hidden]` (the token table itself when tied).
    pub lm_head: Tensor,
    /// Whether the output head is the token table.
    pub tied: bool,
    /// The dtype of every weight.
    pub dtype: DType,
}

/// Where loading the weights puts their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allocation {
    /// Bytes taken from the device's allocator (the weights copied), to its pool's granularity.
    pub allocated: u64,
    /// Bytes read in place from the files' maps (on the CPU, in the checkpoint's dtype).
    pub mapped: u64,
}

/// The float dtypes a decoder runs in.
const DECODER_DTYPES: [DType; 3] = [DType::Float32, DType::Bfloat16, DType::Float16];

/// Takes the checkpoint's tensors by name, each into one dtype on one device.
struct Taker {
    named: Named,
    dtype: DType,
    device: Device,
    /// When pricing: the checkpoint's tensors read as views into its map, and the bytes of the
    /// tensors taken so far: those the device's allocator would hold, and those mapped.
    priced: Option<(HashSet<String>, Allocation)>,
    /// Whether projections of one input are joined into one matrix ([`Taker::joined`]): where
    /// every weight is a copy (on a GPU, or cast), so joining costs no mapped view.
    join: bool,
}

impl Taker {
    /// The tensor `name` of `shape` (see [`Named::take`]) in the dtype asked, on the device
    /// (when pricing, a symbolic tensor of that dtype there, its bytes counted unless the load
    /// would map it: on the CPU, in the checkpoint's dtype, aligned in the file).
    fn float(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self.named.take(name, shape)?;
        if !DECODER_DTYPES.contains(&tensor.dtype()) {
            let source = &self.named.source;
            return Err(ModelError::Files(format!("{source}: {name} is {}, not a float tensor", tensor.dtype())));
        }
        if let Some((views, bytes)) = &mut self.priced {
            let symbolic = Tensor::symbolic(self.device, self.dtype, tensor.shape())?;
            let len = symbolic.byte_len()? as u64;
            match self.device == Device::CPU && tensor.dtype() == self.dtype && views.contains(name) {
                true => bytes.mapped += len,
                false => bytes.allocated += backend::of(self.device).pooled_bytes(len),
            }
            return Ok(symbolic);
        }
        Ok(match self.device == Device::CPU {
            true => tensor.cast(self.dtype)?,
            false => tensor.to(self.device)?.cast(self.dtype)?,
        })
    }

    fn projection(&mut self, name: &str, out: usize, input: usize, bias: bool) -> Result<Projection> {
        let weight = self.float(&format!("{name}.weight"), &[out, input])?;
        let bias = if bias { Some(self.float(&format!("{name}.bias"), &[out])?) } else { None };
        Ok(Projection { weight, bias })
    }

    /// The projections `parts` (name, output rows) of one input of `input` features, each taken
    /// as [`Taker::projection`] takes it; when joining, also the one projection of them all (their
    /// rows one after the other), each part then a view of it.
    fn joined(
        &mut self,
        parts: &[(String, usize)],
        input: usize,
        bias: bool,
    ) -> Result<(Vec<Projection>, Option<Projection>)> {
        let before = self.priced.as_ref().map(|(_, bytes)| *bytes);
        let taken =
            parts.iter().map(|(name, out)| self.projection(name, *out, input, bias)).collect::<Result<Vec<_>>>()?;
        if !self.join {
            return Ok((taken, None));
        }
        let rows: usize = parts.iter().map(|(_, out)| out).sum();
        let joined = match (&mut self.priced, before) {
            (Some((_, bytes)), Some(before)) => {
                // priced: the parts are never held, only the joined matrix (and bias)
                let weight = Tensor::symbolic(self.device, self.dtype, &[rows as i64, input as i64])?;
                let bias = bias.then(|| Tensor::symbolic(self.device, self.dtype, &[rows as i64])).transpose()?;
                let pooled =
                    |t: &Tensor| -> Result<u64> { Ok(backend::of(self.device).pooled_bytes(t.byte_len()? as u64)) };
                bytes.allocated =
                    before.allocated + pooled(&weight)? + bias.as_ref().map(pooled).transpose()?.unwrap_or(0);
                Projection { weight, bias }
            }
            _ => {
                let weights: Vec<&Tensor> = taken.iter().map(|p| &p.weight).collect();
                let biases: Option<Vec<&Tensor>> = taken.iter().map(|p| p.bias.as_ref()).collect();
                let bias = biases.filter(|_| bias).map(|b| Tensor::concat(&b, 0)).transpose()?;
                Projection { weight: Tensor::concat(&weights, 0)?, bias }
            }
        };
        let mut start = 0;
        let mut views = Vec::with_capacity(parts.len());
        for (_, out) in parts {
            let (at, rows) = (start as i64, *out as i64);
            let bias = joined.bias.as_ref().map(|b| b.narrow(0, at, rows)).transpose()?;
            views.push(Projection { weight: joined.weight.narrow(0, at, rows)?, bias });
            start += out;
        }
        Ok((views, Some(joined)))
    }
}

/// The safetensors files of a model directory: `model.safetensors`, else every shard
/// `model.safetensors.index.json` names (each once).
fn weight_files(dir: &Path) -> Result<Vec<std::path::PathBuf>> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    if !index.is_file() {
        return Err(ModelError::Files(format!(
            "{}: no model.safetensors and no model.safetensors.index.json",
            dir.display()
        )));
    }
    let text = std::fs::read_to_string(&index)
        .map_err(|e| ModelError::Files(format!("cannot read {}: {e}", index.display())))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModelError::Files(format!("{} is not JSON: {e}", index.display())))?;
    let map = value
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| ModelError::Files(format!("{}: no \"weight_map\" object", index.display())))?;
    let mut files = BTreeSet::new();
    for (name, file) in map {
        let file = file
            .as_str()
            .filter(|f| !f.contains('/') && !f.contains('\\') && f.ends_with(".safetensors"))
            .ok_or_else(|| {
                ModelError::Files(format!("{}: {name} maps to {file}, not a .safetensors file name", index.display()))
            })?;
        files.insert(file.to_string());
    }
    files
        .into_iter()
        .map(|f| {
            let path = dir.join(&f);
            match path.is_file() {
                true => Ok(path),
                false => Err(ModelError::Files(format!("{}: the shard {f} is missing", index.display()))),
            }
        })
        .collect()
}

impl LlamaWeights {
    /// Maps the weights of the model directory `dir` and takes every tensor the config's
    /// decoder needs, checking its shape, into the placement's dtype and device. A dtype asked
    /// that no decoder runs in (not float32, bfloat16 or float16) is refused by name.
    pub fn load(dir: &Path, config: &LlamaConfig, placement: Placement) -> Result<LlamaWeights> {
        Ok(LlamaWeights::read(dir, config, placement, false)?.0)
    }

    /// The weights [`LlamaWeights::load`] would give, as symbolic tensors (shapes and dtypes,
    /// no data) on the placement's device, from the safetensors headers alone (no weight is
    /// read or mapped), every check of the load made; and the bytes the load would take from
    /// the device's allocator for them (the weights it copies; on the CPU a tensor aligned in
    /// its file and in the dtype asked is mapped instead, and costs none).
    pub fn priced(dir: &Path, config: &LlamaConfig, placement: Placement) -> Result<(LlamaWeights, Allocation)> {
        let (weights, allocation) = LlamaWeights::read(dir, config, placement, true)?;
        Ok((weights, allocation.unwrap_or_default()))
    }

    /// [`LlamaWeights::load`], or [`LlamaWeights::priced`] when `price`.
    fn read(
        dir: &Path,
        config: &LlamaConfig,
        placement: Placement,
        price: bool,
    ) -> Result<(LlamaWeights, Option<Allocation>)> {
        if let Some(dtype) = placement.dtype.filter(|d| !DECODER_DTYPES.contains(d)) {
            return Err(ModelError::Input(format!(
                "a llama decoder runs in float32, bfloat16 or float16, not {dtype}"
            )));
        }
        let mut tensors = HashMap::new();
        let mut mapped = HashSet::new();
        for file in weight_files(dir)? {
            let found: Vec<(String, Tensor)> = match price {
                false => load(&file)?.into_iter().map(|t| (t.name, t.tensor)).collect(),
                true => {
                    let index = open(&file)?;
                    let mut found = Vec::new();
                    for entry in &index.header().tensors {
                        if index.is_zero_copy(&entry.name)? {
                            mapped.insert(entry.name.clone());
                        }
                        found.push((entry.name.clone(), Tensor::symbolic(Device::CPU, entry.dtype, &entry.shape)?));
                    }
                    found
                }
            };
            for (name, tensor) in found {
                if tensors.insert(name.clone(), tensor).is_some() {
                    return Err(ModelError::Files(format!("{}: the tensor {name} is in two files", dir.display())));
                }
            }
        }
        tensors.retain(|name, _| !name.ends_with(".rotary_emb.inv_freq"));
        let named = Named { source: dir.display().to_string(), tensors };
        let table = named.tensors.get("model.embed_tokens.weight").map(|t| t.dtype());
        let dtype = match (placement.dtype, table) {
            (Some(asked), _) => asked,
            (None, Some(own)) => own,
            (None, None) => return Err(ModelError::Files(format!("{}: no model.embed_tokens.weight", named.source))),
        };
        let priced = price.then(|| (mapped, Allocation::default()));
        let join = placement.device != Device::CPU || table != Some(dtype);
        let mut named = Taker { named, dtype, device: placement.device, priced, join };
        let c = config;
        let (h, i, v, d) = (c.hidden_size, c.intermediate_size, c.vocab_size, c.head_dim);
        let (q_width, kv_width) = (c.num_attention_heads * d, c.num_key_value_heads * d);
        let bias = match c.attention_bias {
            Some(b) => b,
            None => named.named.tensors.contains_key("model.layers.0.self_attn.q_proj.bias"),
        };
        let tied = match c.tie_word_embeddings {
            Some(t) => t,
            None => !named.named.tensors.contains_key("lm_head.weight"),
        };
        let embed = named.float("model.embed_tokens.weight", &[v, h])?;
        let layers = (0..c.num_hidden_layers)
            .map(|n| {
                let p = format!("model.layers.{n}");
                let input_norm = named.float(&format!("{p}.input_layernorm.weight"), &[h])?;
                let attention = [("q", q_width), ("k", kv_width), ("v", kv_width)]
                    .map(|(part, rows)| (format!("{p}.self_attn.{part}_proj"), rows));
                let (qkv_parts, qkv) = named.joined(&attention, h, bias)?;
                let o = named.projection(&format!("{p}.self_attn.o_proj"), h, q_width, false)?;
                let post_attention_norm = named.float(&format!("{p}.post_attention_layernorm.weight"), &[h])?;
                let feed = [("gate", i), ("up", i)].map(|(part, rows)| (format!("{p}.mlp.{part}_proj"), rows));
                let (feed_parts, gate_up) = named.joined(&feed, h, false)?;
                let down = named.projection(&format!("{p}.mlp.down_proj"), h, i, false)?;
                let [q, k, v] = <[Projection; 3]>::try_from(qkv_parts)
                    .map_err(|_| ModelError::Files("three attention projections".into()))?;
                let [gate, up] = <[Projection; 2]>::try_from(feed_parts)
                    .map_err(|_| ModelError::Files("two feed-forward projections".into()))?;
                let gate_up = gate_up.map(|j| j.weight);
                Ok(LayerWeights { input_norm, q, k, v, o, post_attention_norm, gate, up, down, qkv, gate_up })
            })
            .collect::<Result<Vec<_>>>()?;
        let norm = named.float("model.norm.weight", &[h])?;
        let lm_head = if tied { embed.clone() } else { named.float("lm_head.weight", &[v, h])? };
        let mut left: Vec<&String> = named.named.tensors.keys().collect();
        if !left.is_empty() {
            left.sort();
            return Err(ModelError::Files(format!(
                "{}: tensors the config does not account for: {left:?}",
                named.named.source
            )));
        }
        let allocated = named.priced.map(|(_, bytes)| bytes);
        Ok((LlamaWeights { embed, layers, norm, lm_head, tied, dtype }, allocated))
    }

    /// Every distinct weight tensor (the tied head counted once).
    pub fn tensors(&self) -> Vec<&Tensor> {
        let mut all = vec![&self.embed, &self.norm];
        if !self.tied {
            all.push(&self.lm_head);
        }
        for l in &self.layers {
            all.extend([&l.input_norm, &l.post_attention_norm]);
            for p in [&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down] {
                all.push(&p.weight);
                all.extend(p.bias.as_ref());
            }
        }
        all
    }

    /// Weights in all (elements).
    pub fn parameters(&self) -> u64 {
        self.tensors().iter().map(|t| t.numel() as u64).sum()
    }

    /// Bytes of the weights in all (the tied head counted once).
    pub fn bytes(&self) -> Result<u64> {
        Ok(self.parameters() * self.dtype.itemsize().map_err(nbxtensor::Error::from)? as u64)
    }
}
