//! `nbx generate`: decoding of a Llama-family checkpoint (greedy, or sampled with a seed) on
//! the CPU or CUDA, in the checkpoint's dtype or the one asked, from a text prompt (through the
//! model's `tokenizer.json`) or a JSON list of token ids. The generated text (or ids)
//! goes to stdout as it comes, prefill and decode tokens per second to stderr; `--output`
//! writes the ids and the prompt's last logits as JSON (the path checked before any work, written
//! to a temporary file and renamed: `files::Output`).

use crate::files::Output;
use nbxtensor::backend;
use nbxtensor::memory::Device;
use nbxtensor::DType;
use nbxtensor_models::llama::{bucket, Generator, Llama, LlamaConfig, Placement, Sampling};
use nbxtensor_models::TextTokenizer;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The options of `nbx generate`.
#[derive(Debug, PartialEq)]
pub struct GenerateOptions {
    /// `--model DIR`.
    pub model: PathBuf,
    /// `--prompt TEXT`.
    pub prompt: Option<String>,
    /// `--prompt-ids FILE.json`.
    pub prompt_ids: Option<PathBuf>,
    /// `--max-new-tokens N`.
    pub max_new_tokens: usize,
    /// `--output FILE.json`.
    pub output: Option<PathBuf>,
    /// `--threads N`.
    pub threads: Option<usize>,
    /// `--device cpu|cuda|vulkan|metal` (a GPU's optionally `:N`).
    pub device: Device,
    /// `--dtype`; `None`: the checkpoint's.
    pub dtype: Option<DType>,
    /// `--quantize int4`: the layers' projections quantized at load.
    pub int4: bool,
    /// `--temperature T` (0: greedy).
    pub temperature: Option<f64>,
    /// `--top-k K` (0: every token).
    pub top_k: Option<usize>,
    /// `--top-p P` (1: every token).
    pub top_p: Option<f64>,
    /// `--seed S`.
    pub seed: Option<u64>,
}

impl GenerateOptions {
    /// How the next token is chosen: greedy (`None`) unless a sampling option is given and the
    /// temperature is not 0; an unseeded draw takes its seed from the clock (printed, so the
    /// run can be repeated with `--seed`).
    pub fn sampling(&self) -> Option<Sampling> {
        let given = self.temperature.is_some() || self.top_k.is_some() || self.top_p.is_some() || self.seed.is_some();
        if !given || self.temperature == Some(0.0) {
            return None;
        }
        let clock = || {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (now.as_nanos() as u64) & (i64::MAX as u64)
        };
        Some(Sampling {
            temperature: self.temperature.unwrap_or(1.0),
            top_k: self.top_k.unwrap_or(0),
            top_p: self.top_p.unwrap_or(1.0),
            seed: self.seed.unwrap_or_else(clock),
        })
    }
}

/// The `--dtype` of a decoder: float32, bfloat16 or float16.
pub fn decoder_dtype(value: &str) -> Result<DType, String> {
    match value {
        "float32" | "bfloat16" | "float16" => DType::from_name(value).map_err(|e| e.to_string()),
        other => Err(format!("unknown dtype {other:?} (float32, bfloat16 or float16)")),
    }
}

/// The `--quantize` of a decoder: `int4` (int4-g128-asym, the only one a decoder takes).
pub fn quantized(value: &str) -> Result<bool, String> {
    match crate::args::Quantize::parse(value)? {
        crate::args::Quantize::Int4 => Ok(true),
        crate::args::Quantize::Int8 => {
            Err("--quantize int8 is an encoder's (nbx embed); a decoder takes --quantize int4".into())
        }
    }
}

fn positive(option: &str, value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{option} takes a positive whole number, got {value:?}"))
}

fn number<T: std::str::FromStr>(option: &str, value: &str, what: &str) -> Result<T, String> {
    value.parse::<T>().map_err(|_| format!("{option} takes {what}, got {value:?}"))
}

/// Parses the options after `nbx generate`.
pub fn parse(args: &[String]) -> Result<GenerateOptions, String> {
    let mut o = GenerateOptions {
        model: PathBuf::new(),
        prompt: None,
        prompt_ids: None,
        max_new_tokens: 128,
        output: None,
        threads: None,
        device: Device::CPU,
        dtype: None,
        int4: false,
        temperature: None,
        top_k: None,
        top_p: None,
        seed: None,
    };
    let mut model = None;
    let mut rest = args.iter();
    while let Some(option) = rest.next() {
        let value = rest.next().ok_or_else(|| format!("{option} needs a value"))?;
        match option.as_str() {
            "--model" => model = Some(PathBuf::from(value)),
            "--prompt" => o.prompt = Some(value.clone()),
            "--prompt-ids" => o.prompt_ids = Some(PathBuf::from(value)),
            "--max-new-tokens" => o.max_new_tokens = positive(option, value)?,
            "--output" => o.output = Some(PathBuf::from(value)),
            "--threads" => o.threads = Some(positive(option, value)?),
            "--device" => o.device = crate::args::device_option(value)?,
            "--dtype" => o.dtype = Some(decoder_dtype(value)?),
            "--quantize" => o.int4 = quantized(value)?,
            "--temperature" => {
                let t: f64 = number(option, value, "a number")?;
                if !(t.is_finite() && t >= 0.0) {
                    return Err(format!("--temperature takes a finite number at least 0 (0: greedy), got {value}"));
                }
                o.temperature = Some(t);
            }
            "--top-k" => o.top_k = Some(number(option, value, "a whole number (0: every token)")?),
            "--top-p" => {
                let p: f64 = number(option, value, "a number")?;
                if !(p > 0.0 && p <= 1.0) {
                    return Err(format!("--top-p takes a number in (0, 1] (1: every token), got {value}"));
                }
                o.top_p = Some(p);
            }
            "--seed" => {
                let seed: u64 = number(option, value, "a whole number from 0 to 2^63 - 1")?;
                if seed > i64::MAX as u64 {
                    return Err(format!("--seed takes a whole number from 0 to 2^63 - 1, got {value}"));
                }
                o.seed = Some(seed);
            }
            other => return Err(format!("nbx generate does not take {other:?}")),
        }
    }
    o.model = model.ok_or("nbx generate needs --model DIR")?;
    match (&o.prompt, &o.prompt_ids) {
        (Some(_), Some(_)) => Err("nbx generate takes --prompt or --prompt-ids, not both".into()),
        (None, None) => Err("nbx generate needs --prompt TEXT or --prompt-ids FILE.json".into()),
        _ => Ok(o),
    }
}

/// Reads a `--prompt-ids` file: a JSON list of token ids.
fn read_ids(path: &Path) -> Result<Vec<i64>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read --prompt-ids {}: {e}", path.display()))?;
    serde_json::from_str::<Vec<i64>>(&text)
        .map_err(|e| format!("--prompt-ids {} is not a JSON list of token ids: {e}", path.display()))
}

/// Runs `nbx generate`.
pub fn run(o: &GenerateOptions) -> Result<(), String> {
    nbxtensor::settings::threads::set_threads(o.threads).map_err(|e| e.to_string())?;
    if !o.model.is_dir() {
        return Err(format!("no model directory {} (see --model)", o.model.display()));
    }
    // the output path checked (and its temporary file made) before any work
    let input = o.prompt_ids.as_deref().unwrap_or(&o.model);
    let output = o.output.as_deref().map(|path| Output::prepare(path, input)).transpose()?;
    let placement = Placement { device: o.device, dtype: o.dtype, int4: o.int4 };
    let limit = LlamaConfig::read(&o.model.join("config.json")).map_err(|e| e.to_string())?.max_position_embeddings;
    let tokenizer_path = o.model.join("tokenizer.json");
    // cut one past the model's positions: a prompt that long is refused below, never cut
    let tokenizer = match (&o.prompt, tokenizer_path.is_file()) {
        (Some(_), false) => {
            return Err(format!("--prompt needs {} (or give --prompt-ids)", tokenizer_path.display()));
        }
        (_, true) => Some(TextTokenizer::open(&tokenizer_path, limit + 1).map_err(|e| e.to_string())?),
        (None, false) => None,
    };
    let prompt = match (&o.prompt, &o.prompt_ids, &tokenizer) {
        (Some(text), _, Some(t)) => t.ids(text).map_err(|e| e.to_string())?,
        (_, Some(path), _) => read_ids(path)?,
        _ => return Err("nbx generate needs --prompt TEXT or --prompt-ids FILE.json".into()),
    };
    if prompt.is_empty() {
        return Err("the prompt has no tokens".into());
    }
    if prompt.len() + o.max_new_tokens > limit + 1 {
        return Err(format!(
            "{} prompt tokens and --max-new-tokens {} do not fit the model's {limit} positions",
            prompt.len(),
            o.max_new_tokens
        ));
    }
    let capacity = (prompt.len() + o.max_new_tokens).max(bucket(prompt.len())).min(limit);
    let sampling = o.sampling();
    // priced from the headers, and refused over the memory limit, before any weight is read
    let (priced, allocated) = Llama::open_priced(&o.model, placement).map_err(|e| e.to_string())?;
    let price = priced.price(allocated, capacity, prompt.len(), sampling.as_ref()).map_err(|e| e.to_string())?;
    price.check_fits().map_err(|e| e.to_string())?;
    let device = backend::of(o.device);
    let before = device.in_use();
    let start = Instant::now();
    let llama = Llama::open_as(&o.model, placement).map_err(|e| e.to_string())?;
    eprintln!(
        "nbx: model {} opened on {} in {} in {:.3} s",
        o.model.display(),
        o.device,
        llama.weights.dtype,
        start.elapsed().as_secs_f64()
    );
    match &sampling {
        Some(s) => eprintln!(
            "nbx: sampling at temperature {}, top-k {}, top-p {}, seed {} (--seed {} repeats this run)",
            s.temperature, s.top_k, s.top_p, s.seed, s.seed
        ),
        None => eprintln!("nbx: greedy decoding"),
    }
    let mut generator = Generator::new(llama, capacity, sampling).map_err(|e| e.to_string())?;
    let mut stdout = std::io::stdout();
    let mut shown = 0usize;
    let mut so_far = Vec::new();
    let generation = generator
        .generate(&prompt, o.max_new_tokens, true, |token| {
            so_far.push(token);
            match &tokenizer {
                Some(t) => {
                    // print what the decoded text gained (a token may complete a character)
                    if let Ok(text) = t.decode(&so_far) {
                        if text.len() > shown && text.is_char_boundary(shown) {
                            let _ = write!(stdout, "{}", &text[shown..]);
                            shown = text.len();
                        }
                    }
                }
                None => {
                    let _ = write!(stdout, "{token} ");
                }
            }
            let _ = stdout.flush();
        })
        .map_err(|e| e.to_string())?;
    let _ = writeln!(stdout);
    let (n, steps) = (prompt.len(), generation.generated_ids.len().saturating_sub(1));
    eprintln!(
        "nbx: prefill of {n} tokens (bucket {}) in {:.4} s: {:.1} tok/s ({:.4} s of it tracing, planning and capturing)",
        bucket(n).min(generator.capacity()),
        generation.prefill_seconds,
        n as f64 / generation.prefill_seconds.max(1e-9),
        generation.prefill_capture_seconds
    );
    let replayed = generation.decode_seconds - generation.decode_capture_seconds;
    eprintln!(
        "nbx: {} tokens generated; {steps} decode steps in {:.4} s ({:.4} s of it tracing, planning and capturing): {:.1} tok/s replayed",
        generation.generated_ids.len(),
        generation.decode_seconds,
        generation.decode_capture_seconds,
        steps as f64 / replayed.max(1e-9)
    );
    for c in generator.captures() {
        eprintln!(
            "nbx: captured {}: arena planned {} bytes, allocated {} bytes",
            c.program, c.planned_bytes, c.allocated_bytes
        );
    }
    let memory = generator.memory().map_err(|e| e.to_string())?;
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    eprintln!(
        "nbx: memory on {}: weights {:.2} MiB, KV cache {:.2} MiB ({} positions), replay arenas {:.2} MiB",
        o.device,
        mib(memory.weight_bytes),
        mib(memory.cache_bytes),
        generator.capacity(),
        mib(memory.arena_bytes)
    );
    eprintln!(
        "nbx: memory held on {}: {} bytes, priced {} bytes before loading",
        o.device,
        device.in_use().saturating_sub(before),
        price.held_bytes()
    );
    if let (Some(output), Some(path)) = (output, &o.output) {
        let json = serde_json::json!({
            "prompt_ids": generation.prompt_ids,
            "generated_ids": generation.generated_ids,
            "prefill_last_logits": generation.prefill_last_logits,
        });
        output.commit(json.to_string().as_bytes())?;
        eprintln!("nbx: wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_the_options_and_refuses_what_is_not_served_by_name() {
        let o =
            parse(&args("--model m --prompt-ids p.json --max-new-tokens 24 --output o.json --dtype float32")).unwrap();
        assert_eq!((o.max_new_tokens, o.prompt_ids.as_deref()), (24, Some(Path::new("p.json"))));
        assert_eq!((o.dtype, o.device, o.sampling()), (Some(DType::Float32), Device::CPU, None));
        let o = parse(&args("--model m --prompt hi")).unwrap();
        assert_eq!((o.max_new_tokens, o.dtype), (128, None), "defaults: 128 tokens, the checkpoint's dtype");
        let o = parse(&args("--model m --prompt hi --device cuda --dtype bfloat16 --top-k 5 --seed 7")).unwrap();
        assert_eq!((o.device.to_string().as_str(), o.dtype), ("cuda:0", Some(DType::Bfloat16)));
        let want = Sampling { temperature: 1.0, top_k: 5, top_p: 1.0, seed: 7 };
        assert_eq!(o.sampling(), Some(want));
        let o = parse(&args("--model m --prompt hi --temperature 0 --top-p 0.5 --seed 1")).unwrap();
        assert_eq!(o.sampling(), None, "temperature 0 is greedy");
        let o = parse(&args("--model m --prompt hi --temperature 0.7")).unwrap();
        let s = o.sampling().unwrap();
        assert_eq!((s.temperature, s.top_k, s.top_p), (0.7, 0, 1.0));
        assert!(s.seed <= i64::MAX as u64, "a clock seed fits the op's range");
        for (line, word) in [
            ("--model m --prompt-ids p --temperature -1", "--temperature"),
            ("--model m --prompt-ids p --temperature inf", "--temperature"),
            ("--model m --prompt-ids p --top-k -5", "--top-k"),
            ("--model m --prompt-ids p --top-p 0", "--top-p"),
            ("--model m --prompt-ids p --top-p 1.5", "--top-p"),
            ("--model m --prompt-ids p --seed -1", "--seed"),
            ("--model m --prompt-ids p --seed 9223372036854775808", "--seed"),
            ("--model m --prompt-ids p --dtype int8", "int8"),
            ("--model m --prompt-ids p --device tpu", "tpu"),
            ("--model m --prompt-ids p --max-new-tokens 0", "--max-new-tokens"),
            ("--model m --prompt-ids p --beams 2", "--beams"),
            ("--model m", "--prompt"),
            ("--prompt-ids p", "--model"),
            ("--model m --prompt a --prompt-ids p", "not both"),
        ] {
            let err = parse(&args(line)).unwrap_err();
            assert!(err.contains(word), "{line}: {err}");
        }
    }
}
