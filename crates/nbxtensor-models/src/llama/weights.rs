//! A Llama-family model's weights: `model.safetensors`, or the shards a
//! `model.safetensors.index.json` names, mapped (zero-copy on the CPU where a file's data is
//! aligned and already in the dtype asked), each tensor checked by name and shape against the
//! config, then cast to the dtype asked and sent once to the device asked (on a GPU the cast
//! runs there, after the copy). A tensor the decoder does not use is refused by name (except
//! the rotary tables some checkpoints store).

use super::LlamaConfig;
use crate::error::{ModelError, Result};
use crate::named::Named;
use nbxtensor::io::safetensors::load;
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::collections::{BTreeSet, HashMap};
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

/// The float dtypes a decoder runs in.
const DECODER_DTYPES: [DType; 3] = [DType::Float32, DType::Bfloat16, DType::Float16];

/// Takes the checkpoint's tensors by name, each into one dtype on one device.
struct Taker {
    named: Named,
    dtype: DType,
    device: Device,
}

impl Taker {
    /// The tensor `name` of `shape` (see [`Named::take`]) in the dtype asked, on the device.
    fn float(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self.named.take(name, shape)?;
        if !DECODER_DTYPES.contains(&tensor.dtype()) {
            let source = &self.named.source;
            return Err(ModelError::Files(format!("{source}: {name} is {}, not a float tensor", tensor.dtype())));
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
        if let Some(dtype) = placement.dtype.filter(|d| !DECODER_DTYPES.contains(d)) {
            return Err(ModelError::Input(format!(
                "a llama decoder runs in float32, bfloat16 or float16, not {dtype}"
            )));
        }
        let mut tensors = HashMap::new();
        for file in weight_files(dir)? {
            for t in load(&file)? {
                if tensors.insert(t.name.clone(), t.tensor).is_some() {
                    return Err(ModelError::Files(format!("{}: the tensor {} is in two files", dir.display(), t.name)));
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
        let mut named = Taker { named, dtype, device: placement.device };
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
                Ok(LayerWeights {
                    input_norm: named.float(&format!("{p}.input_layernorm.weight"), &[h])?,
                    q: named.projection(&format!("{p}.self_attn.q_proj"), q_width, h, bias)?,
                    k: named.projection(&format!("{p}.self_attn.k_proj"), kv_width, h, bias)?,
                    v: named.projection(&format!("{p}.self_attn.v_proj"), kv_width, h, bias)?,
                    o: named.projection(&format!("{p}.self_attn.o_proj"), h, q_width, false)?,
                    post_attention_norm: named.float(&format!("{p}.post_attention_layernorm.weight"), &[h])?,
                    gate: named.projection(&format!("{p}.mlp.gate_proj"), i, h, false)?,
                    up: named.projection(&format!("{p}.mlp.up_proj"), i, h, false)?,
                    down: named.projection(&format!("{p}.mlp.down_proj"), h, i, false)?,
                })
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
        Ok(LlamaWeights { embed, layers, norm, lm_head, tied, dtype })
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
