//! `nbx price`: the model's program for one (batch, seq) shape, traced and planned without
//! running: parameters, peak memory, the arena against its lower bound, flops, bytes, and a
//! predicted time on a device file's rates.

use crate::args::Options;
use crate::open_model;
use nbxtensor::backend::{self, Peaks};

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1 << 20) as f64)
}

/// Runs `nbx price`; prints the summary on stdout.
pub fn run(o: &Options) -> Result<(), String> {
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
    println!("parameters  {parameters} ({} of float32 weights, mapped from the file)", mib(weight_bytes));
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
