//! A BERT model's weights, read from `model.safetensors` by memory map (zero-copy where the
//! file's data is aligned), checked name by name against the config's sizes. Each layer's
//! query, key and value projections are the one exception: they are joined into one matrix at
//! load (a copy), so that attention's three products are one. [`BertWeights::quantized_int8`]
//! turns every dense layer's weight into the int8-g64 layout (`pack_int8`), for the
//! dynamically quantized products of `matmul_int8`; [`BertWeights::packed`] lays every float32
//! dense weight out in panels (`pack_linear`) once, for `linear_packed` on the CPU.

use super::BertConfig;
use crate::error::{ModelError, Result};
use crate::named::Named;
use nbxtensor::io::safetensors::load;
use nbxtensor::memory::Device;
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::path::Path;

/// A layer norm's scale and shift.
#[derive(Clone)]
pub struct Norm {
    /// Scale, `[hidden]`.
    pub weight: Tensor,
    /// Shift, `[hidden]`.
    pub bias: Tensor,
}

/// A dense layer's weight `[out, in]`: float32 as the file holds it, or quantized.
#[derive(Clone)]
pub enum DenseWeight {
    /// float32 `[out, in]`, multiplied by `linear`.
    Float(Tensor),
    /// float32 in `pack_linear`'s panels `[⌈out / panel⌉, in, panel]`, multiplied by
    /// `linear_packed`.
    Packed {
        /// The panels.
        panels: Tensor,
        /// The weight's rows, `out` (the panels round it up).
        out: usize,
    },
    /// The int8-g64 layout (`pack_int8`): int8 `codes` in tiles and float32
    /// `scales [groups, out]`, multiplied by `matmul_int8`.
    Int8 {
        /// One signed code per element (the tiles padded to 16 rows and whole groups).
        codes: Tensor,
        /// One scale per group of 64 elements of a row.
        scales: Tensor,
        /// The weight's elements, `out · in` (its codes hold padding too).
        elements: u64,
    },
}

impl DenseWeight {
    /// Its tensors.
    pub fn tensors(&self) -> Vec<&Tensor> {
        match self {
            DenseWeight::Float(weight) => vec![weight],
            DenseWeight::Packed { panels, .. } => vec![panels],
            DenseWeight::Int8 { codes, scales, .. } => vec![codes, scales],
        }
    }

    /// The weight's elements (`out · in`, whatever its layout).
    pub fn elements(&self) -> u64 {
        match self {
            DenseWeight::Float(weight) => weight.numel() as u64,
            DenseWeight::Packed { panels, out } => (out * panels.shape()[1] as usize) as u64,
            DenseWeight::Int8 { elements, .. } => *elements,
        }
    }
}

/// A dense layer: `x · weightᵀ + bias`.
#[derive(Clone)]
pub struct Dense {
    /// `[out, in]`.
    pub weight: DenseWeight,
    /// `[out]`, float32.
    pub bias: Tensor,
}

impl Dense {
    /// The float layers `parts` (of one input width) as one: their weights' rows one after
    /// the other, and their biases likewise, copied into new tensors.
    fn joined(parts: &[(Tensor, Tensor)]) -> Result<Dense> {
        let weights: Vec<&Tensor> = parts.iter().map(|(w, _)| w).collect();
        let biases: Vec<&Tensor> = parts.iter().map(|(_, b)| b).collect();
        Ok(Dense { weight: DenseWeight::Float(Tensor::concat(&weights, 0)?), bias: Tensor::concat(&biases, 0)? })
    }

    /// This layer with `f` applied to each of its tensors.
    fn map(&self, f: impl Fn(&Tensor) -> Result<Tensor>) -> Result<Dense> {
        let weight = match &self.weight {
            DenseWeight::Float(w) => DenseWeight::Float(f(w)?),
            DenseWeight::Packed { panels, out } => DenseWeight::Packed { panels: f(panels)?, out: *out },
            DenseWeight::Int8 { codes, scales, elements } => {
                DenseWeight::Int8 { codes: f(codes)?, scales: f(scales)?, elements: *elements }
            }
        };
        Ok(Dense { weight, bias: f(&self.bias)? })
    }

    /// The weight `[out, in]` as a float32 tensor: itself, or its panels read back (a copy);
    /// `None` when it is quantized.
    fn float_weight(&self) -> Result<Option<Tensor>> {
        Ok(match &self.weight {
            DenseWeight::Float(w) => Some(w.clone()),
            DenseWeight::Packed { panels, out } => {
                let [count, input, width] = panels.shape()[..] else {
                    return Err(ModelError::Files(format!("packed panels of shape {:?}", panels.shape())));
                };
                let rows = panels.permute(&[0, 2, 1])?.contiguous()?.reshape(&[count * width, input])?;
                Some(rows.narrow(0, 0, *out as i64)?.contiguous()?)
            }
            DenseWeight::Int8 { .. } => None,
        })
    }

    /// This layer with its weight in the int8-g64 layout (itself when it is already).
    fn quantized_int8(&self) -> Result<Dense> {
        let weight = match self.float_weight()? {
            Some(w) => {
                let (codes, scales) = w.pack_int8()?;
                DenseWeight::Int8 { codes, scales, elements: w.numel() as u64 }
            }
            None => self.weight.clone(),
        };
        Ok(Dense { weight, bias: self.bias.clone() })
    }

    /// This layer with its weight `[out, in]` again (itself when it is not packed).
    fn unpacked(&self) -> Result<Dense> {
        let weight = match (&self.weight, self.float_weight()?) {
            (DenseWeight::Packed { .. }, Some(w)) => DenseWeight::Float(w),
            (other, _) => other.clone(),
        };
        Ok(Dense { weight, bias: self.bias.clone() })
    }

    /// This layer with a float32 weight laid out in `pack_linear`'s panels (itself when it is
    /// packed or quantized).
    fn packed(&self) -> Result<Dense> {
        let weight = match &self.weight {
            DenseWeight::Float(w) => DenseWeight::Packed { panels: w.pack_linear()?, out: w.shape()[0] as usize },
            other => other.clone(),
        };
        Ok(Dense { weight, bias: self.bias.clone() })
    }
}

/// The embedding tables and their layer norm.
#[derive(Clone)]
pub struct EmbeddingWeights {
    /// `[vocab, hidden]`.
    pub word: Tensor,
    /// `[max_positions, hidden]`.
    pub position: Tensor,
    /// `[type_vocab, hidden]`: row 0 is the segment of a single sentence.
    pub token_type: Tensor,
    /// The layer norm after the sum of the three.
    pub norm: Norm,
}

/// One encoder layer.
#[derive(Clone)]
pub struct LayerWeights {
    /// The query, key and value projections as one: weight `[3·hidden, hidden]` (the query's
    /// rows, then the key's, then the value's) and bias `[3·hidden]`. Copied once at load from
    /// the file's three projections, whose mapped tensors are not kept: one product then
    /// computes q, k and v side by side in each row of its output.
    pub qkv: Dense,
    /// Attention output projection.
    pub attention_out: Dense,
    /// Layer norm after attention.
    pub attention_norm: Norm,
    /// Feed-forward up projection.
    pub intermediate: Dense,
    /// Feed-forward down projection.
    pub output: Dense,
    /// Layer norm after the feed-forward.
    pub output_norm: Norm,
}

/// Every weight of a BERT encoder (float32).
#[derive(Clone)]
pub struct BertWeights {
    /// The embeddings.
    pub embeddings: EmbeddingWeights,
    /// The encoder layers, in order.
    pub layers: Vec<LayerWeights>,
}

impl Named {
    /// The float32 tensor `name` of `shape` (see [`Named::take`]).
    fn float32(&mut self, name: &str, shape: &[usize]) -> Result<Tensor> {
        let tensor = self.take(name, shape)?;
        if tensor.dtype() != DType::Float32 {
            return Err(ModelError::Files(format!("{}: {name} is {}, not float32", self.source, tensor.dtype())));
        }
        Ok(tensor)
    }

    /// The weight and bias of dense layer `prefix`.
    fn dense_parts(&mut self, prefix: &str, out: usize, input: usize) -> Result<(Tensor, Tensor)> {
        Ok((
            self.float32(&format!("{prefix}.weight"), &[out, input])?,
            self.float32(&format!("{prefix}.bias"), &[out])?,
        ))
    }

    fn dense(&mut self, prefix: &str, out: usize, input: usize) -> Result<Dense> {
        let (weight, bias) = self.dense_parts(prefix, out, input)?;
        Ok(Dense { weight: DenseWeight::Float(weight), bias })
    }

    fn norm(&mut self, prefix: &str, hidden: usize) -> Result<Norm> {
        Ok(Norm {
            weight: self.float32(&format!("{prefix}.weight"), &[hidden])?,
            bias: self.float32(&format!("{prefix}.bias"), &[hidden])?,
        })
    }
}

impl BertWeights {
    /// Maps `path` (a safetensors file with Hugging Face `BertModel` names, with or without a
    /// `bert.` prefix) and takes every weight the config's encoder needs, checking its shape.
    pub fn load(path: &Path, config: &BertConfig) -> Result<BertWeights> {
        if !path.is_file() {
            return Err(ModelError::Files(format!("no weights file {}", path.display())));
        }
        let tensors = load(path)?
            .into_iter()
            .map(|t| (t.name.strip_prefix("bert.").unwrap_or(&t.name).to_string(), t.tensor))
            .collect();
        let mut named = Named { source: path.display().to_string(), tensors };
        let (h, i) = (config.hidden_size, config.intermediate_size);
        let type_rows = named
            .tensors
            .get("embeddings.token_type_embeddings.weight")
            .and_then(|t| t.shape().first().copied())
            .unwrap_or(1)
            .max(1) as usize;
        let embeddings = EmbeddingWeights {
            word: named.float32("embeddings.word_embeddings.weight", &[config.vocab_size, h])?,
            position: named.float32("embeddings.position_embeddings.weight", &[config.max_position_embeddings, h])?,
            token_type: named.float32("embeddings.token_type_embeddings.weight", &[type_rows, h])?,
            norm: named.norm("embeddings.LayerNorm", h)?,
        };
        let layers = (0..config.num_hidden_layers)
            .map(|n| {
                let p = format!("encoder.layer.{n}");
                let projections = ["query", "key", "value"]
                    .map(|name| named.dense_parts(&format!("{p}.attention.self.{name}"), h, h))
                    .into_iter()
                    .collect::<Result<Vec<_>>>()?;
                Ok(LayerWeights {
                    qkv: Dense::joined(&projections)?,
                    attention_out: named.dense(&format!("{p}.attention.output.dense"), h, h)?,
                    attention_norm: named.norm(&format!("{p}.attention.output.LayerNorm"), h)?,
                    intermediate: named.dense(&format!("{p}.intermediate.dense"), i, h)?,
                    output: named.dense(&format!("{p}.output.dense"), h, i)?,
                    output_norm: named.norm(&format!("{p}.output.LayerNorm"), h)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BertWeights { embeddings, layers })
    }

    /// Every weight tensor, the embeddings first, then each layer's.
    pub fn tensors(&self) -> Vec<&Tensor> {
        let e = &self.embeddings;
        let mut all = vec![&e.word, &e.position, &e.token_type, &e.norm.weight, &e.norm.bias];
        for l in &self.layers {
            for d in [&l.qkv, &l.attention_out, &l.intermediate, &l.output] {
                all.extend(d.weight.tensors());
                all.push(&d.bias);
            }
            for n in [&l.attention_norm, &l.output_norm] {
                all.extend([&n.weight, &n.bias]);
            }
        }
        all
    }

    /// Every weight copied to `device` (itself when already there).
    pub fn to(&self, device: Device) -> Result<BertWeights> {
        let t = |x: &Tensor| x.to(device);
        let dense = |d: &Dense| d.map(|x| Ok(x.to(device)?));
        let norm = |n: &Norm| Ok::<_, ModelError>(Norm { weight: t(&n.weight)?, bias: t(&n.bias)? });
        let e = &self.embeddings;
        let embeddings = EmbeddingWeights {
            word: t(&e.word)?,
            position: t(&e.position)?,
            token_type: t(&e.token_type)?,
            norm: norm(&e.norm)?,
        };
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(LayerWeights {
                    qkv: dense(&l.qkv)?,
                    attention_out: dense(&l.attention_out)?,
                    attention_norm: norm(&l.attention_norm)?,
                    intermediate: dense(&l.intermediate)?,
                    output: dense(&l.output)?,
                    output_norm: norm(&l.output_norm)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BertWeights { embeddings, layers })
    }

    /// Every dense layer's weight in the int8-g64 layout (`pack_int8`, on the
    /// weights' device); the embeddings, norms and biases stay float32.
    pub fn quantized_int8(&self) -> Result<BertWeights> {
        self.dense_mapped(Dense::quantized_int8)
    }

    /// Every float32 dense weight laid out in `pack_linear`'s panels (on the CPU, where
    /// `linear_packed` serves them), in place of its `[out, in]` form: the same bytes once
    /// more only while it is packed. Quantized weights stay as they are.
    pub fn packed(&self) -> Result<BertWeights> {
        self.dense_mapped(Dense::packed)
    }

    /// Every packed dense weight back in its `[out, in]` form (a copy of the panels' values).
    pub fn unpacked(&self) -> Result<BertWeights> {
        self.dense_mapped(Dense::unpacked)
    }

    /// These weights with `f` applied to every layer's four dense layers.
    fn dense_mapped(&self, f: impl Fn(&Dense) -> Result<Dense>) -> Result<BertWeights> {
        let layers = self
            .layers
            .iter()
            .map(|l| {
                Ok(LayerWeights {
                    qkv: f(&l.qkv)?,
                    attention_out: f(&l.attention_out)?,
                    intermediate: f(&l.intermediate)?,
                    output: f(&l.output)?,
                    ..l.clone()
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(BertWeights { embeddings: self.embeddings.clone(), layers })
    }

    /// Weights in all (elements; a quantized weight counts its codes, not its scales).
    pub fn parameters(&self) -> u64 {
        let e = &self.embeddings;
        let embeddings = [&e.word, &e.position, &e.token_type, &e.norm.weight, &e.norm.bias];
        let mut total: u64 = embeddings.iter().map(|t| t.numel() as u64).sum();
        for l in &self.layers {
            for d in [&l.qkv, &l.attention_out, &l.intermediate, &l.output] {
                total += d.weight.elements() + d.bias.numel() as u64;
            }
            for n in [&l.attention_norm, &l.output_norm] {
                total += (n.weight.numel() + n.bias.numel()) as u64;
            }
        }
        total
    }

    /// Bytes of the weights (each tensor's elements times its dtype's width).
    pub fn bytes(&self) -> Result<u64> {
        self.tensors()
            .iter()
            .map(|t| Ok(t.numel() as u64 * t.dtype().itemsize().map_err(nbxtensor::Error::from)? as u64))
            .sum()
    }
}
