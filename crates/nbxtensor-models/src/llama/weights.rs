//! A Llama-family model's weights: `model.safetensors`, or the shards a
//! `model.safetensors.index.json` names, mapped (zero-copy on the CPU where a file's data is
//! aligned and already in the dtype asked), each tensor checked by name and shape against the
//! config, then cast to the dtype asked and sent once to the device asked (on a GPU the cast
//! runs there, after the copy). A tensor the decoder does not use is refused by name (except
//! the rotary tables some checkpoints store). With [`Placement::int4`] the layers' projections
//! are quantized at load to int4-g128-asym (`Tensor::pack_int4`, on the host from the
//! checkpoint's own values, then sent); the token table, the head and the norms stay in the float
//! dtype.

use super::LlamaConfig;
use crate::error::{ModelError, Result};
use crate::named::Named;
use nbxtensor::backend;
use nbxtensor::io::safetensors::{load, open};
use nbxtensor::kernel::KernelError;
use nbxtensor::memory::Device;
use nbxtensor::ops::spec::quant::Int4Layout;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;

/// A projection's matrix `[out, in]`: in the weights' float dtype, or quantized at load.
#[derive(Clone)]
pub enum Weight {
    /// The matrix in the weights' float dtype.
    Dense(Tensor),
    /// The matrix in the int4-g128-asym layout (`Tensor::pack_int4`): codes `[out, in / 2]`
    /// uint8, scales and minima `[out, in / 128]` float16.
    Int4 {
        /// Two 4-bit codes a byte.
        packed: Tensor,
        /// A scale per group of 128 inputs.
        scales: Tensor,
        /// A minimum per group of 128 inputs.
        minima: Tensor,
        /// The inputs of a row (`in`).
        inputs: i64,
    },
}

impl Weight {
    /// `x · Wᵀ`: `linear`, or `matmul_int4` over the packed matrix.
    pub fn apply(&self, x: &Tensor) -> Result<Tensor, KernelError> {
        match self {
            Weight::Dense(w) => x.linear(w, None),
            Weight::Int4 { packed, scales, minima, .. } => x.matmul_int4(packed, scales, minima),
        }
    }

    /// Its tensors (one, or the codes, scales and minima).
    pub fn tensors(&self) -> Vec<&Tensor> {
        match self {
            Weight::Dense(w) => vec![w],
            Weight::Int4 { packed, scales, minima, .. } => vec![packed, scales, minima],
        }
    }

    /// Its elements, `out × in`.
    pub fn elements(&self) -> u64 {
        match self {
            Weight::Dense(w) => w.numel() as u64,
            Weight::Int4 { packed, inputs, .. } => packed.shape()[0] as u64 * *inputs as u64,
        }
    }

    /// Rows `at .. at + rows` (views).
    fn narrow(&self, at: i64, rows: i64) -> nbxtensor::Result<Weight> {
        Ok(match self {
            Weight::Dense(w) => Weight::Dense(w.narrow(0, at, rows)?),
            Weight::Int4 { packed, scales, minima, inputs } => Weight::Int4 {
                packed: packed.narrow(0, at, rows)?,
                scales: scales.narrow(0, at, rows)?,
                minima: minima.narrow(0, at, rows)?,
                inputs: *inputs,
            },
        })
    }

    /// The matrices of `parts` one under the other (all dense or all packed).
    fn concat(parts: &[&Weight]) -> Result<Weight> {
        let column = |n: usize| -> Result<Tensor> {
            let tensors: Vec<&Tensor> = parts.iter().map(|p| p.tensors()[n]).collect();
            Ok(Tensor::concat(&tensors, 0)?)
        };
        Ok(match parts.first() {
            Some(Weight::Int4 { inputs, .. }) => {
                Weight::Int4 { packed: column(0)?, scales: column(1)?, minima: column(2)?, inputs: *inputs }
            }
            _ => Weight::Dense(column(0)?),
        })
    }
}

/// A projection `x · weightᵀ (+ bias)`.
#[derive(Clone)]
pub struct Projection {
    /// `[out, in]`.
    pub weight: Weight,
    /// `[out]`, when the checkpoint has one.
    pub bias: Option<Tensor>,
}

impl Projection {
    /// `x · weightᵀ + bias`.
    pub fn apply(&self, x: &Tensor) -> Result<Tensor, KernelError> {
        match (&self.weight, &self.bias) {
            (Weight::Dense(w), bias) => x.linear(w, bias.as_ref()),
            (packed, None) => packed.apply(x),
            (packed, Some(bias)) => packed.apply(x)?.add(bias),
        }
    }
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
    pub gate_up: Option<Weight>,
}

/// Where a model's weights and caches live and in which float dtype.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Placement {
    /// The device of the weights, caches and programs.
    pub device: Device,
    /// The dtype of the weights, caches and activations; `None`: the checkpoint's own (the
    /// dtype of its token table).
    pub dtype: Option<DType>,
    /// Whether the layers' projections are quantized at load to int4-g128-asym (`nbx generate
    /// --quantize int4`); each one's inputs must be a whole number of 128-wide groups.
    pub int4: bool,
}

impl Placement {
    /// The CPU, in the checkpoint's dtype.
    pub const CHECKPOINT_ON_CPU: Placement = Placement { device: Device::CPU, dtype: None, int4: false };
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
    /// The dtype of every float weight.
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
    /// every weight is a copy (on a GPU, cast, or quantized), so joining costs no mapped view.
    join: bool,
    /// The layout projections are quantized into at load, when they are.
    int4: Option<Int4Layout>,
}

impl Taker {
    /// The tensor `name` of `shape` (see [`Named::take`]) in the dtype asked, on the device
    /// (when pricing, a symbolic tensor of that dtype there, its bytes counted unless the load
    /// would map it: on the CPU, in the checkpoint's dtype, aligned in the file).
    fn float(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self.take_float(name, shape)?;
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

    /// The checkpoint's tensor `name` of `shape` as it is in the files, refused unless a float.
    fn take_float(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self.named.take(name, shape)?;
        if !DECODER_DTYPES.contains(&tensor.dtype()) {
            let source = &self.named.source;
            return Err(ModelError::Files(format!("{source}: {name} is {}, not a float tensor", tensor.dtype())));
        }
        Ok(tensor)
    }

    /// The bytes the device's allocator holds for `tensor` (to its pool's granularity).
    fn pooled(&self, tensor: &Tensor) -> Result<u64> {
        Ok(backend::of(self.device).pooled_bytes(tensor.byte_len()? as u64))
    }

    /// A symbolic matrix of `rows` × `input` as this load holds it (dense, or packed).
    fn symbolic_weight(&self, rows: usize, input: usize) -> Result<Weight> {
        let (rows, input) = (rows as i64, input as i64);
        Ok(match &self.int4 {
            None => Weight::Dense(Tensor::symbolic(self.device, self.dtype, &[rows, input])?),
            Some(layout) => {
                let groups = input / layout.group as i64;
                Weight::Int4 {
                    packed: Tensor::symbolic(self.device, DType::Uint8, &[rows, input / layout.per_byte as i64])?,
                    scales: Tensor::symbolic(self.device, DType::Float16, &[rows, groups])?,
                    minima: Tensor::symbolic(self.device, DType::Float16, &[rows, groups])?,
                    inputs: input,
                }
            }
        })
    }

    /// The matrix `name` of `shape`, quantized to int4 on the host from the checkpoint's values
    /// and sent to the device (when pricing, symbolic, its bytes counted).
    fn quantized(&mut self, layout: Int4Layout, name: &str, shape: [usize; 2]) -> Result<Weight> {
        let tensor = self.take_float(name, &shape)?;
        if shape[1] % layout.group != 0 {
            return Err(ModelError::Input(format!(
                "{}: {name} has {} inputs a row, not a whole number of int4 groups of {}: this model cannot be quantized to int4",
                self.named.source, shape[1], layout.group
            )));
        }
        if self.priced.is_some() {
            let weight = self.symbolic_weight(shape[0], shape[1])?;
            let held = weight.tensors().iter().map(|t| self.pooled(t)).sum::<Result<u64>>()?;
            if let Some((_, bytes)) = &mut self.priced {
                bytes.allocated += held;
            }
            return Ok(weight);
        }
        let (packed, scales, minima) = tensor.pack_int4()?;
        let inputs = shape[1] as i64;
        Ok(match self.device == Device::CPU {
            true => Weight::Int4 { packed, scales, minima, inputs },
            false => Weight::Int4 {
                packed: packed.to(self.device)?,
                scales: scales.to(self.device)?,
                minima: minima.to(self.device)?,
                inputs,
            },
        })
    }

    fn projection(&mut self, name: &str, out: usize, input: usize, bias: bool) -> Result<Projection> {
        let weight_name = format!("{name}.weight");
        let weight = match self.int4 {
            Some(layout) => self.quantized(layout, &weight_name, [out, input])?,
            None => Weight::Dense(self.float(&weight_name, &[out, input])?),
        };
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
        let joined = match before {
            Some(before) => {
                // priced: the parts are never held, only the joined matrix (and bias)
                let weight = self.symbolic_weight(rows, input)?;
                let bias = bias.then(|| Tensor::symbolic(self.device, self.dtype, &[rows as i64])).transpose()?;
                let mut held = before.allocated;
                for t in weight.tensors().into_iter().chain(bias.as_ref()) {
                    held += self.pooled(t)?;
                }
                if let Some((_, bytes)) = &mut self.priced {
                    bytes.allocated = held;
                }
                Projection { weight, bias }
            }
            None => {
                let weights: Vec<&Weight> = taken.iter().map(|p| &p.weight).collect();
                let biases: Option<Vec<&Tensor>> = taken.iter().map(|p| p.bias.as_ref()).collect();
                let bias = biases.filter(|_| bias).map(|b| Tensor::concat(&b, 0)).transpose()?;
                Projection { weight: Weight::concat(&weights)?, bias }
            }
        };
        let mut start = 0;
        let mut views = Vec::with_capacity(parts.len());
        for (_, out) in parts {
            let (at, rows) = (start as i64, *out as i64);
            let bias = joined.bias.as_ref().map(|b| b.narrow(0, at, rows)).transpose()?;
            views.push(Projection { weight: joined.weight.narrow(at, rows)?, bias });
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
        let int4 = placement.int4.then(|| Int4Layout::of_table("a model quantized to int4")).transpose()?;
        let join = placement.device != Device::CPU || table != Some(dtype) || int4.is_some();
        let mut named = Taker { named, dtype, device: placement.device, priced, join, int4 };
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

    /// The float tensors and the projections, each once (the tied head counted once; the
    /// parts of a joined matrix as its views).
    fn parts(&self) -> (Vec<&Tensor>, Vec<&Projection>) {
        let mut floats = vec![&self.embed, &self.norm];
        if !self.tied {
            floats.push(&self.lm_head);
        }
        let mut projections = Vec::new();
        for l in &self.layers {
            floats.extend([&l.input_norm, &l.post_attention_norm]);
            projections.extend([&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down]);
        }
        (floats, projections)
    }

    /// Every distinct weight tensor (the tied head counted once; a quantized projection's
    /// codes, scales and minima).
    pub fn tensors(&self) -> Vec<&Tensor> {
        let (mut all, projections) = self.parts();
        for p in projections {
            all.extend(p.weight.tensors());
            all.extend(p.bias.as_ref());
        }
        all
    }

    /// Weights in all (elements; a quantized matrix counts its `out × in`).
    pub fn parameters(&self) -> u64 {
        let (floats, projections) = self.parts();
        let floats: u64 = floats.iter().map(|t| t.numel() as u64).sum();
        let bias = |p: &Projection| p.bias.as_ref().map_or(0, |b| b.numel() as u64);
        floats + projections.iter().map(|p| p.weight.elements() + bias(p)).sum::<u64>()
    }

    /// Bytes of the weights in all, as held (the tied head counted once; quantized matrices
    /// as their codes, scales and minima).
    pub fn bytes(&self) -> Result<u64> {
        let mut total = 0;
        for t in self.tensors() {
            total += t.byte_len()? as u64;
        }
        Ok(total)
    }
}
