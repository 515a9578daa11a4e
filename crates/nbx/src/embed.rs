//! `nbx embed`: a JSON list of strings in, a JSON list of unit vectors out, same order. On
//! stderr: progress, timings, and for every captured batch shape the arena its plan priced
//! against the bytes the host allocator gave it.

use crate::args::Options;
use crate::files::{read_texts, Output};
use crate::open_model;
use nbxtensor_models::BatchMode;
use std::path::Path;
use std::time::Instant;

/// Runs `nbx embed`.
pub fn run(o: &Options) -> Result<(), String> {
    let (input, output) = (o.input.as_deref().unwrap_or(Path::new("")), o.output.as_deref().unwrap_or(Path::new("")));
    // the input read and checked, and the output's place proven writable, before any work
    let texts = read_texts(input)?;
    let pending = Output::prepare(output, input)?;
    let start = Instant::now();
    let mut model = open_model(o)?;
    model.set_pad_multiple(o.pad_multiple).map_err(|e| e.to_string())?;
    model.set_capture_at(o.capture_at).map_err(|e| e.to_string())?;
    eprintln!("nbx: model {} opened in {:.3} s", o.model.display(), start.elapsed().as_secs_f64());
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let start = Instant::now();
    let (mut captured, mut eager, mut replayed) = (0.0, 0.0, 0.0);
    let embeddings = model
        .embed(&refs, o.batch, |r| {
            captured += r.capture_seconds;
            let fresh = match r.mode {
                BatchMode::Eager => {
                    eager += r.run_seconds;
                    String::from("shape met once: run op by op (captured if it comes again), ")
                }
                BatchMode::Captured => {
                    replayed += r.run_seconds;
                    format!(
                        "shape captured: traced, planned and captured in {:.3} s (its checked run gave this batch), ",
                        r.capture_seconds
                    )
                }
                BatchMode::Replayed => {
                    replayed += r.run_seconds;
                    String::from("replay reused, ")
                }
            };
            eprintln!(
                "nbx: {}/{} texts; batch {}x{} tokens: {fresh}ran in {:.4} s",
                r.done, r.total, r.shape.0, r.shape.1, r.run_seconds
            );
            if let Some(arena) = r.memory.arena_allocated_bytes {
                eprintln!(
                    "nbx: memory of batch {}x{}: arena planned {} bytes, allocated {arena} bytes; the run allocated {} bytes more (its embeddings)",
                    r.shape.0, r.shape.1, r.memory.planned_bytes, r.memory.run_allocated_bytes
                );
            }
        })
        .map_err(|e| e.to_string())?;
    let total = start.elapsed().as_secs_f64();
    eprintln!(
        "nbx: {} texts in {total:.3} s ({eager:.3} s op by op, {captured:.3} s capturing {} shape(s), {replayed:.3} s replaying)",
        texts.len(),
        model.captured_shapes().len()
    );
    let json = serde_json::to_string(&embeddings).map_err(|e| e.to_string())?;
    pending.commit(json.as_bytes())?;
    eprintln!("nbx: wrote {} embeddings of {} floats to {}", embeddings.len(), model.dimension(), output.display());
    Ok(())
}
