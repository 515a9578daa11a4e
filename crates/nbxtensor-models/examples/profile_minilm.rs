//! Where the time of one all-MiniLM-L6-v2 batch goes: the traced program's launches run one by
//! one (eagerly, each with fresh outputs and workspace), timed, and summed by kernel key.
//!
//! ```text
//! cargo run --release -p nbxtensor-models --example profile_minilm -- MODEL_DIR BATCH SEQ [REPEATS]
//! ```

use nbxtensor::kernel::{Launch, Workspace};
use nbxtensor::memory::{host_allocator, Allocator};
use nbxtensor::program::Source;
use nbxtensor::tensor::Tensor;
use nbxtensor_models::{SentenceBatch, SentenceEmbedder};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, batch, seq, rest @ ..] = args.as_slice() else {
        return Err("usage: profile_minilm MODEL_DIR BATCH SEQ [REPEATS]".into());
    };
    let (batch, seq): (usize, usize) = (batch.parse()?, seq.parse()?);
    let repeats: usize = rest.first().map(|r| r.parse()).transpose()?.unwrap_or(3);
    let model = SentenceEmbedder::open(dir.as_ref())?;
    let program = model.program(batch, seq)?;
    let ids: Vec<i64> = (0..batch * seq).map(|i| 1000 + (i * 7919 % 20000) as i64).collect();
    let texts: Vec<&[i64]> = ids.chunks(seq).collect();
    let inputs = SentenceBatch::new(&texts, seq)?;
    // best time of each launch over the repeats
    let mut best = vec![f64::INFINITY; program.steps.len()];
    for _ in 0..repeats {
        let mut values: Vec<Option<Tensor>> = vec![None; program.buffers.len()];
        for (&id, input) in program.inputs.iter().zip(inputs.inputs()) {
            values[id] = Some(input.clone());
        }
        for (index, step) in program.steps.iter().enumerate() {
            let bound = step
                .inputs
                .iter()
                .map(|o| {
                    let storage = match &o.source {
                        Source::Buffer(id) => Arc::clone(values[*id].as_ref().expect("written before").storage()),
                        Source::Constant(t) => Arc::clone(t.storage()),
                    };
                    Tensor::from_storage(storage, o.dtype, &o.shape, &o.strides, o.offset)
                })
                .collect::<Result<Vec<_>, _>>()?;
            let outputs =
                step.cost.outputs.iter().map(|m| Tensor::zeros(m.dtype, &m.shape)).collect::<Result<Vec<_>, _>>()?;
            let mut workspace = host_allocator().alloc(step.cost.workspace as usize)?;
            let start = Instant::now();
            step.kernel.launch(Launch {
                inputs: &bound,
                outputs: &outputs,
                workspace: Workspace::host(workspace.as_mut_slice()),
            })?;
            best[index] = best[index].min(start.elapsed().as_secs_f64());
            for (&id, t) in step.outputs.iter().zip(outputs) {
                values[id] = Some(t);
            }
        }
    }
    let mut by_key: BTreeMap<String, (usize, f64, u64, u64)> = BTreeMap::new();
    for (step, seconds) in program.steps.iter().zip(&best) {
        let shapes: Vec<String> = step.inputs.iter().map(|o| format!("{:?}", o.shape)).collect();
        let entry = by_key.entry(format!("{} {}", step.kernel.key(), shapes.join(" "))).or_default();
        entry.0 += 1;
        entry.1 += seconds;
        entry.2 += step.cost.flops;
        entry.3 += step.cost.bytes_read + step.cost.bytes_written;
    }
    let total: f64 = best.iter().sum();
    let mut rows: Vec<_> = by_key.into_iter().collect();
    rows.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
    println!("batch {batch} x seq {seq}: {:.3} ms in {} launches (best of {repeats} each)", total * 1e3, best.len());
    for (key, (count, seconds, flops, bytes)) in rows {
        println!(
            "{:>9.3} ms {:>5.1}% {:>3}x {:>7.1} GFLOP/s {:>6.1} GB/s  {key}",
            seconds * 1e3,
            100.0 * seconds / total,
            count,
            flops as f64 / seconds / 1e9,
            bytes as f64 / seconds / 1e9
        );
    }
    Ok(())
}
