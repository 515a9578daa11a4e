//! The command line: `nbx embed …`, `nbx price …` and `nbx generate …`, their options
//! checked before anything is loaded.

use nbxtensor::memory::Device;
use std::path::PathBuf;

/// The usage text.
pub const USAGE: &str = "\
usage:
  nbx embed --model DIR --input FILE.json --output FILE.json [--device cpu|cuda|vulkan|metal] [--batch N] [--pad-multiple N]
            [--capture-at N] [--quantize int8] [--threads N]
  nbx price --model DIR [--batch N] [--seq N] [--device cpu|cuda|vulkan|metal] [--device-file VENDOR/NAME] [--svg FILE]
            [--quantize int8] [--threads N]
  nbx price --model DIR --context N [--prompt-tokens N] [--dtype float32|bfloat16|float16] [--quantize int4]
            [--device cpu|cuda|vulkan|metal] [--device-file VENDOR/NAME]
  nbx generate --model DIR (--prompt TEXT | --prompt-ids FILE.json) [--max-new-tokens N] [--device cpu|cuda|vulkan|metal]
               [--dtype float32|bfloat16|float16] [--quantize int4] [--temperature T] [--top-k K] [--top-p P]
               [--seed S] [--output FILE.json] [--threads N]

  embed  embeds a JSON list of strings (empty ones allowed) into a JSON list of unit vectors,
         in the same order; progress and timings on stderr. Texts of similar length are batched
         together; each batch is padded to its longest text, or to a multiple of --pad-multiple
         tokens (fewer distinct shapes, so fewer captures; padding weighs nothing, the embeddings
         move only by float rounding). A batch shape met for the first time runs op by op; the
         --capture-at-th time (default 2) it is traced, planned and captured, and its replay
         serves every later batch of that shape (--capture-at 1: every shape captured at once).
         --quantize int8 (CPU) quantizes the dense layers' weights at load to int8-g64
         and runs them as matmul_int8, each row of activations quantized to 8 bits as it goes
  price  traces and plans the model for one (batch, seq) shape without running it: parameters,
         peak memory, the arena against its lower bound, flops, bytes, and the predicted time
         on the rates of a device file. For a Llama-family decoder, the memory of a generation
         over --context positions (a prompt of --prompt-tokens, default the whole context, then
         decode steps) from config.json and the safetensors headers alone, no weight read:
         weights, KV cache, the prefill and decode arenas and what the run holds in all
  generate  decoding of a Hugging Face Llama-family checkpoint (llama, mistral, qwen2): a
         prefill program per prompt-length bucket, then one captured decode program (a CUDA
         graph on a GPU) replayed for every token over a KV cache written in place; stops at
         --max-new-tokens (default 128) or at the config's eos_token_id. Runs in the
         checkpoint's dtype unless --dtype says otherwise; --quantize int4 quantizes the layers'
         projections at load to int4-g128-asym (matmul_int4; the token table, head and norms stay
         in the float dtype). Greedy unless --temperature (0:
         greedy), --top-k (0: all), --top-p (1: all) or --seed is given; then each token is drawn
         on the device from the Philox stream of the seed (the clock's when none, printed) at its
         position: a seed repeats a run. Text goes to stdout as it comes (token ids when the
         model has no tokenizer.json); tok/s and memory on stderr; --output writes
         {\"prompt_ids\", \"generated_ids\", \"prefill_last_logits\"}
  --threads N  the CPU thread pool's size (default: the cores this process may use)";

/// The options of a command (those it does not take stay at their defaults).
#[derive(Debug, PartialEq)]
pub struct Options {
    /// `--model DIR`.
    pub model: PathBuf,
    /// `--input FILE`.
    pub input: Option<PathBuf>,
    /// `--output FILE`.
    pub output: Option<PathBuf>,
    /// `--device`.
    pub device: Device,
    /// `--batch N`.
    pub batch: usize,
    /// `--pad-multiple N`.
    pub pad_multiple: usize,
    /// `--capture-at N`.
    pub capture_at: usize,
    /// `--seq N`.
    pub seq: Option<usize>,
    /// `--svg FILE`.
    pub svg: Option<PathBuf>,
    /// `--device-file VENDOR/NAME`.
    pub device_file: Option<(String, String)>,
    /// `--threads N`.
    pub threads: Option<usize>,
    /// `--context N` (a decoder's positions).
    pub context: Option<usize>,
    /// `--prompt-tokens N` (a decoder's prompt).
    pub prompt_tokens: Option<usize>,
    /// `--dtype` (a decoder's; `None`: the checkpoint's).
    pub dtype: Option<nbxtensor::DType>,
    /// `--quantize` (an encoder's dense layers in int8, a decoder's projections in int4).
    pub quantize: Option<Quantize>,
}

/// The weights' layout asked for by `--quantize`, chosen at load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quantize {
    /// int4-g128-asym: a decoder's projections (`matmul_int4`).
    Int4,
    /// int8-g64: an encoder's dense layers (`matmul_int8`).
    Int8,
}

impl Quantize {
    /// The layout named by `--quantize`'s value.
    pub fn parse(value: &str) -> Result<Quantize, String> {
        match value {
            "int4" => Ok(Quantize::Int4),
            "int8" => Ok(Quantize::Int8),
            other => Err(format!("unknown --quantize {other:?} (int8 for an encoder, int4 for a decoder)")),
        }
    }
}

/// A parsed command.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// `nbx embed`.
    Embed(Options),
    /// `nbx price`.
    Price(Options),
    /// `nbx generate`.
    Generate(crate::generate::GenerateOptions),
    /// `nbx help`, `-h`, `--help`.
    Help,
}

/// Options each command takes.
const EMBED_OPTIONS: [&str; 9] = [
    "--model",
    "--input",
    "--output",
    "--device",
    "--batch",
    "--pad-multiple",
    "--capture-at",
    "--quantize",
    "--threads",
];
const PRICE_OPTIONS: [&str; 11] = [
    "--model",
    "--batch",
    "--seq",
    "--device",
    "--device-file",
    "--svg",
    "--threads",
    "--context",
    "--prompt-tokens",
    "--dtype",
    "--quantize",
];

/// The device of `--device`: `cpu`, `cuda`, `vulkan` or `metal`, a GPU's optionally `:N`.
pub fn device_option(value: &str) -> Result<Device, String> {
    Device::parse(value).map_err(|e| format!("--device: {e}"))
}

fn number(option: &str, value: &str) -> Result<usize, String> {
    value
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{option} takes a positive whole number, got {value:?}"))
}

/// Parses the arguments after the program's name.
pub fn parse(args: &[String]) -> Result<Command, String> {
    let Some(command) = args.first() else { return Err("no command given".into()) };
    let known: &[&str] = match command.as_str() {
        "embed" => &EMBED_OPTIONS,
        "price" => &PRICE_OPTIONS,
        "generate" => return Ok(Command::Generate(crate::generate::parse(&args[1..])?)),
        "help" | "-h" | "--help" => return Ok(Command::Help),
        other => return Err(format!("unknown command {other:?} (embed, price or generate)")),
    };
    let mut o = Options {
        model: PathBuf::new(),
        input: None,
        output: None,
        device: Device::CPU,
        batch: 32,
        pad_multiple: 1,
        capture_at: nbxtensor_models::CAPTURE_AT,
        seq: None,
        svg: None,
        device_file: None,
        threads: None,
        context: None,
        prompt_tokens: None,
        dtype: None,
        quantize: None,
    };
    let mut model = None;
    let mut rest = args[1..].iter();
    while let Some(option) = rest.next() {
        if !known.contains(&option.as_str()) {
            return Err(format!("nbx {command} does not take {option:?}"));
        }
        let value = rest.next().ok_or_else(|| format!("{option} needs a value"))?;
        match option.as_str() {
            "--model" => model = Some(PathBuf::from(value)),
            "--input" => o.input = Some(PathBuf::from(value)),
            "--output" => o.output = Some(PathBuf::from(value)),
            "--svg" => o.svg = Some(PathBuf::from(value)),
            "--batch" => o.batch = number(option, value)?,
            "--seq" => o.seq = Some(number(option, value)?),
            "--pad-multiple" => o.pad_multiple = number(option, value)?,
            "--capture-at" => o.capture_at = number(option, value)?,
            "--threads" => o.threads = Some(number(option, value)?),
            "--context" => o.context = Some(number(option, value)?),
            "--prompt-tokens" => o.prompt_tokens = Some(number(option, value)?),
            "--dtype" => o.dtype = Some(crate::generate::decoder_dtype(value)?),
            "--quantize" => o.quantize = Some(Quantize::parse(value)?),
            "--device" => o.device = device_option(value)?,
            "--device-file" => {
                let (vendor, name) = value
                    .split_once('/')
                    .ok_or_else(|| format!("--device-file takes VENDOR/NAME (e.g. nvidia/h100), got {value:?}"))?;
                o.device_file = Some((vendor.to_string(), name.to_string()));
            }
            other => return Err(format!("nbx {command} does not take {other:?}")),
        }
    }
    o.model = model.ok_or_else(|| format!("nbx {command} needs --model DIR"))?;
    if command == "embed" {
        if o.input.is_none() || o.output.is_none() {
            return Err("nbx embed needs --input FILE.json and --output FILE.json".into());
        }
        if o.quantize == Some(Quantize::Int4) {
            return Err("nbx embed takes --quantize int8 (int4 is a decoder's, for nbx generate)".into());
        }
        return Ok(Command::Embed(o));
    }
    Ok(Command::Price(o))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_each_command_and_refuses_what_it_does_not_take() {
        let Command::Embed(o) =
            parse(&args("embed --model m --input a.json --output b.json --batch 4 --pad-multiple 8 --capture-at 1"))
                .unwrap()
        else {
            panic!("not embed")
        };
        assert_eq!(
            (o.model, o.batch, o.pad_multiple, o.capture_at, o.device),
            (PathBuf::from("m"), 4, 8, 1, Device::CPU)
        );
        let Command::Price(o) = parse(&args("price --model m --seq 128 --device-file nvidia/h100")).unwrap() else {
            panic!("not price")
        };
        assert_eq!((o.seq, o.device_file), (Some(128), Some(("nvidia".into(), "h100".into()))));
        assert_eq!(o.threads, None);
        let Command::Embed(o) = parse(&args("embed --model m --input a --output b --threads 2")).unwrap() else {
            panic!("not embed")
        };
        assert_eq!(o.threads, Some(2));
        assert!(parse(&args("price --model m --threads 0")).unwrap_err().contains("--threads"));
        assert!(parse(&args("embed --model m --input a.json")).unwrap_err().contains("--output"));
        assert!(parse(&args("price --model m --device tpu")).unwrap_err().contains("tpu"));
        assert!(parse(&args("price --model m --batch 0")).unwrap_err().contains("--batch"));
        assert!(parse(&args("price --model m --input x")).unwrap_err().contains("--input"));
        assert!(parse(&args("train")).unwrap_err().contains("train"));
        assert!(parse(&args("price --batch 2")).unwrap_err().contains("--model"));
        let Command::Price(o) =
            parse(&args("price --model m --context 4096 --prompt-tokens 100 --dtype bfloat16")).unwrap()
        else {
            panic!("not price")
        };
        assert_eq!((o.context, o.prompt_tokens, o.dtype), (Some(4096), Some(100), Some(nbxtensor::DType::Bfloat16)));
        assert!(parse(&args("price --model m --context 0")).unwrap_err().contains("--context"));
        assert!(parse(&args("price --model m --dtype int8")).unwrap_err().contains("int8"));
        assert!(parse(&args("embed --model m --input a --output b --context 5")).unwrap_err().contains("--context"));
    }

    #[test]
    fn quantize_takes_int8_for_an_encoder_and_int4_for_a_decoder() {
        let Command::Embed(o) = parse(&args("embed --model m --input a --output b --quantize int8")).unwrap() else {
            panic!("not embed")
        };
        assert_eq!(o.quantize, Some(Quantize::Int8));
        let Command::Price(o) = parse(&args("price --model m --quantize int4")).unwrap() else { panic!("not price") };
        assert_eq!(o.quantize, Some(Quantize::Int4));
        let int4 = parse(&args("embed --model m --input a --output b --quantize int4")).unwrap_err();
        assert!(int4.contains("--quantize int8") && int4.contains("decoder"), "{int4}");
        let unknown = parse(&args("price --model m --quantize int2")).unwrap_err();
        assert!(unknown.contains("int2") && unknown.contains("int8") && unknown.contains("int4"), "{unknown}");
        let decoder = crate::generate::quantized("int8").unwrap_err();
        assert!(decoder.contains("encoder") && decoder.contains("int4"), "{decoder}");
        assert_eq!(crate::generate::quantized("int4"), Ok(true));
    }
}
