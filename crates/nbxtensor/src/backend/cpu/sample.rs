//! `sample` on the host (`ops::spec::sample` defines every step, bit for bit): a row at a
//! time, the weights in the workspace, the top-k and top-p edges found by radix selection over
//! the integer keys and weights (four passes each, as on a GPU). A position below 0 and a row
//! without a finite logit are refused by name.

use super::buffers::{read, write, Float};
use crate::backend::LaunchTable;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result, TensorMeta};
use crate::ops::spec::sample::{key, scaled, weight, Sample};
use crate::ops::spec::FLOATS;
use crate::random::Words;
use half::{bf16, f16};

fn invalid(message: String) -> KernelError {
    KernelError::Invalid(message)
}

/// The largest `value` with `mass(≥ value) ≥ want`, where `mass(bin)` adds `of(x)` over the
/// `xs` in a bin: radix selection from the top bit down, `digits` digits of `bits` bits
/// (`of` = 1 finds the k-th largest key; `of` = the weight finds the top-p edge). `want ≥ 1`
/// and at most the total mass.
fn select(xs: impl Iterator<Item = u64> + Clone, digits: u32, bits: u32, of: impl Fn(u64) -> u64, want: u64) -> u64 {
    let bins = 1usize << bits;
    let (mut prefix, mut mask, mut above) = (0u64, 0u64, 0u64);
    let mut mass = vec![0u64; bins];
    for digit in (0..digits).rev() {
        let shift = digit * bits;
        mass.iter_mut().for_each(|m| *m = 0);
        for x in xs.clone().filter(|x| x & mask == prefix) {
            mass[((x >> shift) as usize) & (bins - 1)] += of(x);
        }
        let mut chosen = 0;
        for bin in (0..bins).rev() {
            if above + mass[bin] >= want {
                chosen = bin as u64;
                break;
            }
            above += mass[bin];
        }
        prefix |= chosen << shift;
        mask |= ((bins - 1) as u64) << shift;
    }
    prefix
}

/// The token of one row of logits, given the row's drawn `word`; `weights` is the row's part of
/// the workspace.
fn row_token<T: Float>(spec: &Sample, logits: &[T], weights: &mut [u64], word: u32, row: usize) -> Result<i64> {
    let inverse = spec.inverse_temperature();
    let scaled_logit = |x: T| {
        let z = x.to_f32() * inverse;
        if z.is_nan() {
            f32::NEG_INFINITY
        } else {
            z
        }
    };
    let zs = logits.iter().map(|&x| scaled_logit(x));
    let m = zs.clone().fold(f32::NEG_INFINITY, f32::max);
    if m == f32::NEG_INFINITY {
        return Err(invalid(format!("sample: row {row} has no finite logit")));
    }
    if m == f32::INFINITY {
        return Ok(zs.clone().position(|z| z == m).unwrap_or(0) as i64);
    }
    let edge = match spec.top_k_of(logits.len()) {
        Some(k) => select(zs.clone().map(|z| u64::from(key(z))), 4, 8, |_| 1, k as u64) as u32,
        None => 0,
    };
    for (w, z) in weights.iter_mut().zip(zs) {
        *w = if key(z) >= edge { weight(z - m) } else { 0 };
    }
    if let Some(fraction) = spec.top_p_fraction() {
        let total: u64 = weights.iter().sum();
        let limit = scaled(fraction, total).max(1);
        // the lightest weight kept: the heaviest whose strictly heavier weights are below limit
        let lightest = select(weights.iter().copied(), 4, 11, |w| w, limit);
        weights.iter_mut().filter(|w| **w < lightest).for_each(|w| *w = 0);
    }
    let target = scaled(word, weights.iter().sum());
    let mut running = 0u64;
    for (j, &w) in weights.iter().enumerate() {
        running += w;
        if running > target {
            return Ok(j as i64);
        }
    }
    Err(invalid(format!("sample: row {row} kept no weight (an internal error)")))
}

fn run<T: Float>(spec: &Sample, launch: Launch<'_>) -> Result<()> {
    let metas: Vec<TensorMeta> = launch.inputs.iter().map(|t| TensorMeta::new(t.dtype(), t.shape())).collect();
    let z = spec.sizes(&metas)?;
    let position = match launch.inputs[1].dtype() {
        DType::Int32 => i64::from(read::<i32>(&launch.inputs[1])?[0]),
        _ => read::<i64>(&launch.inputs[1])?[0],
    };
    let position = u64::try_from(position)
        .map_err(|_| invalid(format!("sample: position {position} is negative (it numbers a Philox word)")))?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<i64>(&launch.outputs[0])? };
    if out.is_empty() {
        return Ok(());
    }
    let bytes = launch.workspace.into_host("sample")?;
    // SAFETY: every bit pattern is a valid u64; align_to_mut splits off misaligned ends.
    let (head, weights, _) = unsafe { bytes.align_to_mut::<u64>() };
    if !head.is_empty() || weights.len() < z.rows * z.vocab {
        return Err(invalid(format!("sample: the workspace does not hold {} aligned weights", z.rows * z.vocab)));
    }
    let logits = read::<T>(&launch.inputs[0])?;
    for (row, token) in out.iter_mut().enumerate() {
        let mut word = [0u32];
        Words { seed: spec.seed, stream: row as u64 }.fill(position, &mut word);
        let span = row * z.vocab..(row + 1) * z.vocab;
        *token = row_token(spec, &logits[span.clone()], &mut weights[span], word[0], row)?;
    }
    Ok(())
}

fn launch(spec: &Sample, launch: Launch<'_>) -> Result<()> {
    match spec.dtype {
        DType::Float32 => run::<f32>(spec, launch),
        DType::Float16 => run::<f16>(spec, launch),
        DType::Bfloat16 => run::<bf16>(spec, launch),
        other => Err(invalid(format!("sample is not defined on {other}"))),
    }
}

/// Registers `sample` on the floats.
pub fn register(table: &mut LaunchTable) {
    table.register("sample", &FLOATS, launch);
}

#[cfg(test)]
mod tests {
    use super::select;

    #[test]
    fn radix_selection_finds_the_kth_largest_and_the_mass_edge() {
        let xs = [5u64, 9, 1, 9, 3, 7];
        // the 1st, 2nd (ties) and 3rd largest by count
        assert_eq!(select(xs.iter().copied(), 4, 8, |_| 1, 1), 9);
        assert_eq!(select(xs.iter().copied(), 4, 8, |_| 1, 2), 9);
        assert_eq!(select(xs.iter().copied(), 4, 8, |_| 1, 3), 7);
        assert_eq!(select(xs.iter().copied(), 4, 8, |_| 1, 6), 1);
        // by mass: 9 + 9 = 18 reaches 18; 25 needs the 7 too
        assert_eq!(select(xs.iter().copied(), 4, 11, |w| w, 18), 9);
        assert_eq!(select(xs.iter().copied(), 4, 11, |w| w, 19), 7);
    }
}
