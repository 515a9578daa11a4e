//! `nbx price`: the model's program for one (batch, seq) shape, traced and planned without
//! running: parameters, peak memory, the arena against its lower bound, flops, bytes, and a
//! predicted time on a device file's rates. For a Llama-family decoder, a generation's memory
//! from its config and safetensors headers alone (`GenerationPrice`): weights, KV cache, the
//! prefill and decode arenas, and what the run holds.

use crate::args::{Options, Quantize};
use crate::open_model;
use nbxtensor::backend::{self, Peaks};
use nbxtensor_models::llama::{Family, Llama, Placement};

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// The decoder family of the model directory's `config.json`, when it is one.
fn decoder_family(o: &Options) -> Result<Option<Family>, String> {
    let path = o.model.join("config.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    Ok(value.get("model_type").and_then(|t| t.as_str()).and_then(Family::of_model_type))
}

/// Runs `nbx price`; prints the summary on stdout.
pub fn run(o: &Options) -> Result<(), String> {
    if !o.model.is_dir() {
        return Err(format!("no model directory {} (see --model)", o.model.display()));
    }
    match decoder_family(o)? {
        Some(family) => return run_decoder(o, family),
        None => {
            for (given, option) in [
                (o.context.is_some(), "--context"),
                (o.prompt_tokens.is_some(), "--prompt-tokens"),
                (o.dtype.is_some(), "--dtype"),
                (o.quantize == Some(Quantize::Int4), "--quantize int4"),
            ] {
                if given {
                    return Err(format!(
                        "{option} prices a decoder's generation; {} is not a llama, mistral or qwen2 model",
                        o.model.display()
                    ));
                }
            }
        }
    }
    let model = open_model(o)?;
    let seq = o.seq.unwrap_or(model.tokenizer().max_tokens());
    if seq > model.bert().config.max_position_embeddings {
        return Err(format!(
            "--seq {seq} is over the model's {} positions",
            model.bert().config.max_position_embeddings
        ));
    }
    let program = model.program(o.batch, seq).map_err(|e| e.to_string())?;
    let plan = program.plan().map_err(|e| e.to_string())?;
    let parameters = model.bert().weights.parameters();
    let weight_bytes = model.bert().weights.bytes().map_err(|e| e.to_string())?;
    let arena = plan.arena_bytes();
    let allocated = plan.allocated_bytes();
    let bound = plan.plan.lower_bound;
    println!(
        "model       {} ({} layers, hidden {})",
        o.model.display(),
        model.bert().config.num_hidden_layers,
        model.dimension()
    );
    println!("shape       batch {} x seq {} tokens", o.batch, seq);
    let held = if o.quantize == Some(Quantize::Int8) {
        "the dense layers' weights quantized to int8-g64 at load, the rest float32 mapped from the file"
    } else {
        "float32, mapped from the file, each layer's q/k/v copied into one joined weight"
    };
    println!("parameters  {parameters} ({} of weights: {held})", mib(weight_bytes));
    println!("launches    {}", program.steps.len());
    println!(
        "arena       {} bytes ({}), lower bound {} bytes, ratio {:.4}",
        arena,
        mib(arena),
        bound,
        if bound == 0 { 1.0 } else { arena as f64 / bound as f64 }
    );
    println!(
        "peak memory {} (arena as allocated {} + weights {})",
        mib(allocated + weight_bytes),
        mib(allocated),
        mib(weight_bytes)
    );
    println!("allocated   {allocated} bytes for the arena (the host allocator's size class): what a run allocates");
    println!("flops       {} ({:.3} GFLOP)", program.flops(), program.flops() as f64 / 1e9);
    println!("bytes       {} moved by the launches ({})", program.bytes_moved(), mib(program.bytes_moved()));
    match &o.device_file {
        Some((vendor, name)) => {
            let peaks = Peaks::of_device(vendor, name).map_err(|e| e.to_string())?;
            let price = program.price(&peaks).map_err(|e| e.to_string())?;
            println!("predicted   {:.3} ms on {} (roofline of every launch)", price.seconds * 1e3, peaks.source);
        }
        None => {
            let peaks = backend::of(model.device()).peaks().map_err(|e| e.to_string())?;
            let price = program.price(&peaks).map_err(|e| e.to_string())?;
            println!(
                "predicted   {:.3} ms on {} ({:.1} GFLOP/s matrix, {:.2} GB/s; --device-file VENDOR/NAME prices on a device file)",
                price.seconds * 1e3,
                peaks.source,
                peaks.matrix.get("float32").copied().unwrap_or(0.0) / 1e9,
                peaks.bandwidth / 1e9
            );
        }
    }
    if let Some(path) = &o.svg {
        let title = format!("all-MiniLM-L6-v2, batch {} x seq {}", o.batch, seq);
        std::fs::write(path, plan.svg(&title)).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("nbx: wrote the plan's picture to {}", path.display());
    }
    Ok(())
}

/// `nbx price` of a Llama-family decoder: the generation's memory, priced before any weight is
/// read.
fn run_decoder(o: &Options, family: Family) -> Result<(), String> {
    for (given, option) in [(o.seq.is_some(), "--seq"), (o.svg.is_some(), "--svg")] {
        if given {
            return Err(format!("{option} is an encoder's; a decoder is priced with --context N [--prompt-tokens N]"));
        }
    }
    let context = o.context.ok_or("a decoder is priced for a context: give --context N")?;
    let prompt_tokens = o.prompt_tokens.unwrap_or(context);
    if o.quantize == Some(Quantize::Int8) {
        return Err("--quantize int8 is an encoder's (its dense layers); a decoder takes --quantize int4".into());
    }
    let int4 = o.quantize == Some(Quantize::Int4);
    let placement = Placement { device: o.device, dtype: o.dtype, int4 };
    let (llama, allocated) = Llama::open_priced(&o.model, placement).map_err(|e| e.to_string())?;
    let price = llama.price(allocated, context, prompt_tokens, None).map_err(|e| e.to_string())?;
    let c = &llama.config;
    println!(
        "model       {} ({family:?}, {} layers, hidden {}) on {} in {}{}",
        o.model.display(),
        c.num_hidden_layers,
        c.hidden_size,
        price.device,
        price.dtype,
        if int4 { ", its layers' projections in int4-g128-asym" } else { "" }
    );
    println!(
        "generation  {} positions; a prompt of {prompt_tokens} tokens (prefill bucket {}), then decode steps, greedy",
        price.capacity, price.prefill_bucket
    );
    println!(
        "weights     {} parameters, {} ({} allocated, {} mapped from the files)",
        price.parameters,
        mib(price.weight_bytes),
        mib(price.weights.allocated),
        mib(price.weights.mapped)
    );
    println!(
        "KV cache    {} (2 x {} layers x [1, {}, {}, {}])",
        mib(price.cache_bytes),
        c.num_hidden_layers,
        c.num_key_value_heads,
        price.capacity,
        c.head_dim
    );
    println!("state       {} allocated (the caches, the rotary tables, the origin)", mib(price.state_allocated_bytes));
    for (name, p) in [("prefill", &price.prefill), ("decode", &price.decode)] {
        println!(
            "{name:<11} {} launches, arena {} bytes ({}), {:.3} GFLOP, {} moved by the launches",
            p.program.steps.len(),
            p.arena_bytes(),
            mib(p.arena_bytes()),
            p.program.flops() as f64 / 1e9,
            mib(p.program.bytes_moved())
        );
    }
    println!(
        "held        {} bytes ({}): the weights allocated, the state and both arenas: what the run allocates",
        price.held_bytes(),
        mib(price.held_bytes())
    );
    price.check_fits().map_err(|e| e.to_string())?;
    Ok(())
}
