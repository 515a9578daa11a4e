//! A Llama-family `config.json` (Llama 2 and 3, Mistral, Qwen2): the sizes and facts the
//! decoder is built with. A fact the decoder needs that the file does not state is refused by
//! name, never given a default; a feature the decoder does not serve is refused by name.

use crate::error::{ModelError, Result};
use serde_json::{Map, Value};
use std::path::Path;

/// The families whose checkpoints the decoder reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `model_type` "llama" (`LlamaForCausalLM`).
    Llama,
    /// `model_type` "mistral": Llama's layout, with a sliding window in the config.
    Mistral,
    /// `model_type` "qwen2": Llama's layout with biases on the q, k and v projections.
    Qwen2,
}

impl Family {
    /// The family of a `config.json`'s `model_type`; `None` for one no decoder here reads.
    pub fn of_model_type(model_type: &str) -> Option<Family> {
        match model_type {
            "llama" => Some(Family::Llama),
            "mistral" => Some(Family::Mistral),
            "qwen2" => Some(Family::Qwen2),
            _ => None,
        }
    }
}

/// Llama 3's rotary frequency scaling (`rope_scaling` with `rope_type` "llama3").
#[derive(Clone, Debug, PartialEq)]
pub struct Llama3Scaling {
    /// How much longer the context was made (`factor`).
    pub factor: f64,
    /// `low_freq_factor`.
    pub low_freq_factor: f64,
    /// `high_freq_factor`.
    pub high_freq_factor: f64,
    /// `original_max_position_embeddings`: the context the model was first trained on.
    pub original_max_position_embeddings: f64,
}

/// The fields of a Llama-family `config.json` the decoder uses.
#[derive(Clone, Debug, PartialEq)]
pub struct LlamaConfig {
    /// Which family (`model_type`).
    pub family: Family,
    /// Width of the hidden state.
    pub hidden_size: usize,
    /// Width of the feed-forward layer.
    pub intermediate_size: usize,
    /// Decoder layers.
    pub num_hidden_layers: usize,
    /// Query heads.
    pub num_attention_heads: usize,
    /// Key and value heads (grouped-query attention when fewer than the query heads).
    pub num_key_value_heads: usize,
    /// Width of one head (`head_dim`, else `hidden_size / num_attention_heads`).
    pub head_dim: usize,
    /// Rows of the embedding table.
    pub vocab_size: usize,
    /// The longest context the model takes.
    pub max_position_embeddings: usize,
    /// The epsilon of every RMS norm.
    pub rms_norm_eps: f64,
    /// The base of the rotary frequencies.
    pub rope_theta: f64,
    /// Llama 3's frequency scaling, when the config asks for it.
    pub rope_scaling: Option<Llama3Scaling>,
    /// Whether the output head is the embedding table (`None`: the config does not say, and
    /// the weights decide: tied when there is no `lm_head.weight`).
    pub tie_word_embeddings: Option<bool>,
    /// Whether q, k and v have biases (`None`: the config does not say, and the weights decide).
    pub attention_bias: Option<bool>,
    /// The ids that end a generation (empty when the config names none).
    pub eos_token_ids: Vec<i64>,
    /// Mistral's sliding window, when it has one: attention past it is not served.
    pub sliding_window: Option<usize>,
}

fn need<'a>(map: &'a Map<String, Value>, field: &str) -> Result<&'a Value, String> {
    match map.get(field) {
        None | Some(Value::Null) => Err(format!("no {field:?} (the decoder needs it)")),
        Some(v) => Ok(v),
    }
}

fn size(map: &Map<String, Value>, field: &str) -> Result<usize, String> {
    let v = need(map, field)?;
    v.as_u64().filter(|&n| n > 0).map(|n| n as usize).ok_or_else(|| format!("{field} {v} is not a positive size"))
}

fn float(map: &Map<String, Value>, field: &str) -> Result<f64, String> {
    let v = need(map, field)?;
    v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| format!("{field} {v} is not a finite number"))
}

fn flag(map: &Map<String, Value>, field: &str) -> Result<Option<bool>, String> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(v) => Err(format!("{field} {v} is not true or false")),
    }
}

fn scaling(map: &Map<String, Value>) -> Result<Option<Llama3Scaling>, String> {
    let s = match map.get("rope_scaling") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(s)) => s,
        Some(v) => return Err(format!("rope_scaling {v} is not an object")),
    };
    let kind = s.get("rope_type").or_else(|| s.get("type")).and_then(Value::as_str);
    match kind {
        Some("default") => Ok(None),
        Some("llama3") => {
            let at = |field: &str| float(s, field).map_err(|e| format!("rope_scaling: {e}"));
            let scaling = Llama3Scaling {
                factor: at("factor")?,
                low_freq_factor: at("low_freq_factor")?,
                high_freq_factor: at("high_freq_factor")?,
                original_max_position_embeddings: at("original_max_position_embeddings")?,
            };
            if scaling.factor <= 0.0
                || scaling.low_freq_factor <= 0.0
                || scaling.high_freq_factor <= scaling.low_freq_factor
                || scaling.original_max_position_embeddings <= 0.0
            {
                return Err(format!(
                    "rope_scaling llama3: factor and low_freq_factor must be positive and high_freq_factor above low_freq_factor, got {scaling:?}"
                ));
            }
            Ok(Some(scaling))
        }
        Some(other) => Err(format!("rope_scaling type {other:?} is not served (only \"llama3\")")),
        None => Err("rope_scaling has no \"rope_type\" (or \"type\")".into()),
    }
}

fn eos(map: &Map<String, Value>) -> Result<Vec<i64>, String> {
    let bad = |v: &Value| format!("eos_token_id {v} is not a token id or a list of them");
    match map.get("eos_token_id") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(v @ Value::Number(_)) => v.as_i64().filter(|&n| n >= 0).map(|n| vec![n]).ok_or_else(|| bad(v)),
        Some(Value::Array(ids)) => ids.iter().map(|v| v.as_i64().filter(|&n| n >= 0).ok_or_else(|| bad(v))).collect(),
        Some(v) => Err(bad(v)),
    }
}

impl LlamaConfig {
    /// Reads and checks `config.json` at `path`; an error names the file and the field.
    pub fn read(path: &Path) -> Result<LlamaConfig> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ModelError::Files(format!("cannot read {}: {e}", path.display())))?;
        LlamaConfig::parse(&text).map_err(|why| ModelError::Files(format!("{}: {why}", path.display())))
    }

    /// Parses and checks the text of a `config.json`.
    pub fn parse(text: &str) -> Result<LlamaConfig, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let Value::Object(map) = value else { return Err("not a JSON object".into()) };
        let model_type = need(&map, "model_type")?;
        let Some(family) = model_type.as_str().and_then(Family::of_model_type) else {
            return Err(format!("model_type {model_type} is not served (llama, mistral or qwen2)"));
        };
        let act = need(&map, "hidden_act")?;
        if act.as_str() != Some("silu") {
            return Err(format!("hidden_act {act} is not served (only \"silu\")"));
        }
        if flag(&map, "mlp_bias")? == Some(true) {
            return Err("mlp_bias true is not served".into());
        }
        let num_attention_heads = size(&map, "num_attention_heads")?;
        let hidden_size = size(&map, "hidden_size")?;
        let head_dim = match map.get("head_dim") {
            None | Some(Value::Null) => {
                if hidden_size % num_attention_heads != 0 {
                    return Err(format!(
                        "hidden_size {hidden_size} is not a multiple of num_attention_heads {num_attention_heads} (and there is no head_dim)"
                    ));
                }
                hidden_size / num_attention_heads
            }
            Some(_) => size(&map, "head_dim")?,
        };
        if head_dim % 2 != 0 {
            return Err(format!("head_dim {head_dim} is odd (rotary pairs need an even width)"));
        }
        let num_key_value_heads = size(&map, "num_key_value_heads")?;
        if num_attention_heads % num_key_value_heads != 0 {
            return Err(format!(
                "num_attention_heads {num_attention_heads} is not a multiple of num_key_value_heads {num_key_value_heads}"
            ));
        }
        let rms_norm_eps = float(&map, "rms_norm_eps")?;
        if rms_norm_eps < 0.0 {
            return Err(format!("rms_norm_eps {rms_norm_eps} is negative"));
        }
        let rope_theta = float(&map, "rope_theta")?;
        if rope_theta <= 1.0 {
            return Err(format!("rope_theta {rope_theta} is not above 1"));
        }
        let attention_bias = match family {
            Family::Qwen2 => Some(true),
            _ => flag(&map, "attention_bias")?,
        };
        let sliding_window = match family {
            Family::Llama => None,
            Family::Mistral => match map.get("sliding_window") {
                None | Some(Value::Null) => None,
                Some(_) => Some(size(&map, "sliding_window")?),
            },
            Family::Qwen2 => {
                if flag(&map, "use_sliding_window")? == Some(true) {
                    return Err("use_sliding_window true is not served".into());
                }
                None
            }
        };
        Ok(LlamaConfig {
            family,
            hidden_size,
            intermediate_size: size(&map, "intermediate_size")?,
            num_hidden_layers: size(&map, "num_hidden_layers")?,
            num_attention_heads,
            num_key_value_heads,
            head_dim,
            vocab_size: size(&map, "vocab_size")?,
            max_position_embeddings: size(&map, "max_position_embeddings")?,
            rms_norm_eps,
            rope_theta,
            rope_scaling: scaling(&map)?,
            tie_word_embeddings: flag(&map, "tie_word_embeddings")?,
            attention_bias,
            eos_token_ids: eos(&map)?,
            sliding_window,
        })
    }

    /// The rotary inverse frequencies, `head_dim / 2` of them, in float32 as Hugging Face
    /// computes them (`1 / theta^(2i/d)`, then Llama 3's scaling when the config has it).
    pub fn inverse_frequencies(&self) -> Vec<f32> {
        let d = self.head_dim;
        let base = self.rope_theta as f32;
        let plain = (0..d / 2).map(|i| 1.0 / base.powf((2 * i) as f32 / d as f32));
        let Some(s) = &self.rope_scaling else { return plain.collect() };
        let (factor, low, high, old) = (
            s.factor as f32,
            s.low_freq_factor as f32,
            s.high_freq_factor as f32,
            s.original_max_position_embeddings as f32,
        );
        let (low_wavelen, high_wavelen) = (old / low, old / high);
        plain
            .map(|f| {
                let wavelen = 2.0 * std::f32::consts::PI / f;
                let scaled = if wavelen > low_wavelen { f / factor } else { f };
                if wavelen < high_wavelen || wavelen > low_wavelen {
                    return scaled;
                }
                let smooth = (old / wavelen - low) / (high - low);
                (1.0 - smooth) * scaled / factor + smooth * scaled
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#""model_type": "llama", "hidden_act": "silu", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 256,
        "max_position_embeddings": 128, "rms_norm_eps": 1e-6, "rope_theta": 10000.0"#;

    fn parse(extra: &str) -> Result<LlamaConfig, String> {
        LlamaConfig::parse(&format!("{{{BASE}{extra}}}"))
    }

    #[test]
    fn reads_the_facts_and_names_what_is_missing_or_not_served() {
        let c = parse(r#", "eos_token_id": [2, 3]"#).unwrap();
        assert_eq!((c.head_dim, c.eos_token_ids.clone(), c.tie_word_embeddings), (16, vec![2, 3], None));
        let f = c.inverse_frequencies();
        assert_eq!(f.len(), 8);
        assert!(f[0] == 1.0 && (f[1] - 0.316_227_8).abs() < 1e-6, "{f:?}");
        for field in ["rope_theta", "num_key_value_heads", "rms_norm_eps", "vocab_size"] {
            let text = format!("{{{BASE}}}");
            let cut: Value = serde_json::from_str(&text).unwrap();
            let mut map = cut.as_object().unwrap().clone();
            map.remove(field);
            let err = LlamaConfig::parse(&Value::Object(map).to_string()).unwrap_err();
            assert!(err.contains(field), "{field}: {err}");
        }
        let err = parse(r#", "rope_scaling": {"rope_type": "yarn", "factor": 4.0}"#).unwrap_err();
        assert!(err.contains("yarn"), "{err}");
        let err = parse(r#", "rope_scaling": {"rope_type": "llama3", "factor": 8.0}"#).unwrap_err();
        assert!(err.contains("low_freq_factor"), "{err}");
        let err = LlamaConfig::parse(&format!("{{{}}}", BASE.replace("\"silu\"", "\"gelu\""))).unwrap_err();
        assert!(err.contains("gelu"), "{err}");
        let err = LlamaConfig::parse(&format!("{{{}}}", BASE.replace("\"llama\"", "\"gpt2\""))).unwrap_err();
        assert!(err.contains("gpt2"), "{err}");
        assert!(parse(r#", "mlp_bias": true"#).unwrap_err().contains("mlp_bias"));
        assert!(parse(r#", "eos_token_id": "end""#).unwrap_err().contains("eos_token_id"));
    }

    #[test]
    fn llama3_scaling_keeps_high_frequencies_divides_low_ones_and_blends_between() {
        let scaling = r#", "rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0,
            "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}"#;
        let c = LlamaConfig::parse(&format!("{{{}{scaling}}}", BASE.replace(", \"rope_theta\": 10000.0", ""))).unwrap();
        let plain = LlamaConfig { rope_scaling: None, ..c.clone() }.inverse_frequencies();
        let scaled = c.inverse_frequencies();
        // wavelengths 6.3 (kept, under 64/4), 32.4 (blended), then over 64 (divided by 8)
        assert_eq!(scaled[0], plain[0]);
        assert!(scaled[1] < plain[1] && scaled[1] > plain[1] / 8.0, "{} {}", scaled[1], plain[1]);
        assert_eq!(scaled[3], plain[3] / 8.0);
    }
}
