//! A generation's memory priced before any weight is read: the weights as symbolic tensors
//! from the safetensors headers alone, the KV caches and rotary tables as symbolic tensors,
//! and the prefill and decode programs traced and planned over them, exactly as a
//! [`Generator`](super::Generator) traces and plans them when it runs. What the price says the
//! run holds is what the device's allocator gives it, to its granularity.

use super::generate::{bucket, decode_program, prefill_program};
use super::{Allocation, Llama, LlamaConfig, LlamaWeights, Placement, Sampling};
use crate::error::{ModelError, Result};
use nbxtensor::backend;
use nbxtensor::memory::{check_fits, Device};
use nbxtensor::program::{trace, Program, ProgramPlan};
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::path::Path;

/// One program of a generation, traced and planned without running.
#[derive(Clone)]
pub struct PricedProgram {
    /// The launches and buffers.
    pub program: Program,
    /// Its memory plan.
    pub plan: ProgramPlan,
}

impl PricedProgram {
    /// Traces `model` over symbolic inputs of `shapes` (int64, on `device`) and plans it.
    fn of(
        device: Device,
        shapes: &[&[i64]],
        model: impl FnOnce(&[Tensor]) -> std::result::Result<Vec<Tensor>, nbxtensor::program::ProgramError>,
    ) -> Result<PricedProgram> {
        let inputs = shapes.iter().map(|s| Tensor::symbolic(device, DType::Int64, s)).collect::<Result<Vec<_>, _>>()?;
        let program = trace(&inputs, model)?;
        let plan = program.plan()?;
        Ok(PricedProgram { program, plan })
    }

    /// The bytes the program's arena takes from the device's allocator.
    pub fn arena_bytes(&self) -> u64 {
        self.plan.allocated_bytes()
    }
}

/// The memory a generation holds on its device, in bytes, known before any weight is read.
#[derive(Clone)]
pub struct GenerationPrice {
    /// Where the model runs.
    pub device: Device,
    /// The dtype of its weights, caches and activations.
    pub dtype: DType,
    /// The positions the caches hold.
    pub capacity: usize,
    /// The prompt's tokens.
    pub prompt_tokens: usize,
    /// The prefill bucket the prompt is padded to.
    pub prefill_bucket: usize,
    /// The weights' elements (the tied head counted once).
    pub parameters: u64,
    /// The weights' bytes in `dtype`.
    pub weight_bytes: u64,
    /// Where the weights' bytes are: copied into the device's allocator (to its granularity)
    /// or mapped from the files (on the CPU, in the checkpoint's dtype).
    pub weights: Allocation,
    /// The key and value caches' bytes.
    pub cache_bytes: u64,
    /// The caches, the rotary tables and the origin index as the allocator holds them.
    pub state_allocated_bytes: u64,
    /// The prefill program of the prompt's bucket.
    pub prefill: PricedProgram,
    /// The decode program (captured only where the generation takes a decode step).
    pub decode: PricedProgram,
}

impl GenerationPrice {
    /// What the generation holds from the device's allocator once both programs are captured:
    /// the copied weights, the state and the two arenas.
    pub fn held_bytes(&self) -> u64 {
        let decode = if self.decodes() { self.decode.arena_bytes() } else { 0 };
        self.weights.allocated + self.state_allocated_bytes + self.prefill.arena_bytes() + decode
    }

    /// Whether the generation takes a decode step: the prefill gives the first new token, and
    /// each step needs a position after the prompt's for the token before it.
    pub fn decodes(&self) -> bool {
        self.capacity > self.prompt_tokens + 1
    }

    /// Refuses the generation by name when what it holds is over the memory limit in force on
    /// its device (the one an allocation would meet), before anything is loaded.
    pub fn check_fits(&self) -> Result<()> {
        let what = format!(
            "a {} generation of {} positions: {} weight bytes, {} of caches and tables, arenas {} + {}",
            self.dtype,
            self.capacity,
            self.weights.allocated,
            self.state_allocated_bytes,
            self.prefill.arena_bytes(),
            self.decode.arena_bytes()
        );
        Ok(check_fits(self.device, self.held_bytes(), &what).map_err(nbxtensor::Error::from)?)
    }
}

impl Llama {
    /// The model of directory `dir` as [`Llama::open_as`] would open it, with symbolic weights
    /// read from the safetensors headers alone, and where loading them would put their bytes.
    pub fn open_priced(dir: &Path, placement: Placement) -> Result<(Llama, Allocation)> {
        if !dir.is_dir() {
            return Err(ModelError::Files(format!("no model directory {}", dir.display())));
        }
        let config = LlamaConfig::read(&dir.join("config.json"))?;
        let (weights, allocated) = LlamaWeights::priced(dir, &config, placement)?;
        Ok((Llama { config, weights }, allocated))
    }

    /// What a [`Generator`](super::Generator) of this model with caches of `capacity`
    /// positions holds after a prompt of `prompt_tokens` and its decode steps, choosing tokens
    /// by `sampling`: its state and both programs traced and planned over symbolic tensors (the
    /// weights may be symbolic too: [`Llama::open_priced`]); `weights` says where the weights'
    /// bytes are.
    pub fn price(
        &self,
        weights: Allocation,
        capacity: usize,
        prompt_tokens: usize,
        sampling: Option<&Sampling>,
    ) -> Result<GenerationPrice> {
        if prompt_tokens == 0 || prompt_tokens > capacity {
            return Err(ModelError::Input(format!(
                "a prompt of {prompt_tokens} tokens: a context of {capacity} positions takes 1 to {capacity}"
            )));
        }
        let state = self.symbolic_state(capacity)?;
        let device = self.device();
        let pooled = |t: &Tensor| -> Result<u64> { Ok(backend::of(device).pooled_bytes(t.byte_len()? as u64)) };
        let mut state_allocated_bytes = 0;
        for t in state.keys.iter().chain(&state.values).chain([&state.cos, &state.sin, &state.origin]) {
            state_allocated_bytes += pooled(t)?;
        }
        let s = bucket(prompt_tokens).min(capacity) as i64;
        let prefill = PricedProgram::of(device, &[&[1, s], &[1]], |t| prefill_program(self, &state, sampling, t))?;
        let decode = PricedProgram::of(device, &[&[1, 1], &[1], &[1]], |t| decode_program(self, &state, sampling, t))?;
        Ok(GenerationPrice {
            device,
            dtype: self.weights.dtype,
            capacity,
            prompt_tokens,
            prefill_bucket: s as usize,
            parameters: self.weights.parameters(),
            weight_bytes: self.weights.bytes()?,
            weights,
            cache_bytes: state.cache_bytes(),
            state_allocated_bytes,
            prefill,
            decode,
        })
    }
}
