//! Generation as planned programs: the prefill traced, planned and captured once per
//! prompt-length bucket (powers of two from [`MIN_BUCKET`]), the decode step captured once and
//! replayed for every token, on the model's device (a CUDA graph on a GPU). The KV caches are
//! state the programs hold (constants written in place), the token, position and length are
//! inputs, so one replay serves every step; the next token is chosen on the device (argmax, or
//! a seeded draw: [`Sampling`]) and only it comes back to the host each step.

use super::{DecodeState, Llama, Sampling};
use crate::error::{ModelError, Result};
use nbxtensor::backend;
use nbxtensor::memory::Device;
use nbxtensor::program::{trace, Executable, ProgramError, Replay};
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use std::collections::HashMap;
use std::time::Instant;

/// The shortest prefill bucket: prompts are padded to the next power of two at least this.
pub const MIN_BUCKET: usize = 8;

/// The prefill length a prompt of `tokens` ids is padded to.
pub fn bucket(tokens: usize) -> usize {
    tokens.max(MIN_BUCKET).next_power_of_two()
}

/// What one step gives: the logits of the position it ran (on the device, in the model's
/// dtype) and the next token.
#[derive(Clone, Debug)]
pub struct Step {
    /// `[1, 1, vocab]`, where the model runs.
    pub logits: Tensor,
    /// The next token (the argmax, or the draw).
    pub token: i64,
}

impl Step {
    /// The logits as float32 on the host (read back from the device).
    pub fn logits_f32(&self) -> Result<Vec<f32>> {
        Ok(self.logits.cast(DType::Float32)?.to(Device::CPU)?.to_vec::<f32>()?)
    }
}

/// A finished generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    /// The prompt's ids.
    pub prompt_ids: Vec<i64>,
    /// The tokens generated, an end-of-sequence token included when it stopped the generation.
    pub generated_ids: Vec<i64>,
    /// The logits of the prompt's last position.
    pub prefill_last_logits: Vec<f32>,
    /// Seconds the prefill took, its capture included when its bucket was new.
    pub prefill_seconds: f64,
    /// Seconds the decode steps took, the decode program's capture included when it was new.
    pub decode_seconds: f64,
    /// Seconds of `prefill_seconds` spent tracing, planning and capturing its bucket.
    pub prefill_capture_seconds: f64,
    /// Seconds of `decode_seconds` spent tracing, planning and capturing the decode step.
    pub decode_capture_seconds: f64,
}

/// The memory of a [`Generator`] on its device, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GeneratorMemory {
    /// The weights in the model's dtype (the tied head counted once).
    pub weight_bytes: u64,
    /// The key and value caches of every layer.
    pub cache_bytes: u64,
    /// The arenas of the captured prefill and decode replays, as the device's allocator holds
    /// them (each to its granularity).
    pub arena_bytes: u64,
}

/// One program the generator captured: its arena as the plan priced it against what creating
/// its executable took from the host allocator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// `prefill N` (a bucket of N positions) or `decode`.
    pub program: String,
    /// The plan's arena to the device allocator's granularity, known before anything runs.
    pub planned_bytes: u64,
    /// What `Executable::new` took from the device's allocator, measured (its accounting is
    /// process-wide: exact while nothing else allocates).
    pub allocated_bytes: u64,
}

/// A decoder with its caches and its captured programs, for generation of up to `capacity`
/// positions (prompt and generated tokens together), greedy or sampled.
pub struct Generator {
    llama: Llama,
    state: DecodeState,
    sampling: Option<Sampling>,
    replay: bool,
    prefills: HashMap<usize, Replay>,
    decode: Option<Replay>,
    captures: Vec<Capture>,
}

/// The prefill as a program of its inputs `[ids, last]` (see [`Llama::prefill`]).
pub(crate) fn prefill_program(
    llama: &Llama,
    state: &DecodeState,
    sampling: Option<&Sampling>,
    inputs: &[Tensor],
) -> std::result::Result<Vec<Tensor>, ProgramError> {
    match inputs {
        [ids, last] => llama.prefill(state, ids, last, sampling),
        _ => Err(ProgramError::Invalid(format!("llama prefill: 2 inputs, got {}", inputs.len()))),
    }
}

/// The decode step as a program of its inputs `[token, position, length]` (see
/// [`Llama::decode`]).
pub(crate) fn decode_program(
    llama: &Llama,
    state: &DecodeState,
    sampling: Option<&Sampling>,
    inputs: &[Tensor],
) -> std::result::Result<Vec<Tensor>, ProgramError> {
    match inputs {
        [token, position, length] => llama.decode(state, token, position, length, sampling),
        _ => Err(ProgramError::Invalid(format!("llama decode: 3 inputs, got {}", inputs.len()))),
    }
}

fn step_of(outputs: Vec<Tensor>) -> Result<Step> {
    let Ok([logits, token]) = <[Tensor; 2]>::try_from(outputs) else {
        return Err(ProgramError::Invalid("a llama step gave other than 2 outputs".into()).into());
    };
    let token = token.to(Device::CPU)?.to_vec::<i64>()?.first().copied();
    let token = token.ok_or_else(|| ProgramError::Invalid("a llama step gave no token".into()))?;
    Ok(Step { logits, token })
}

impl Generator {
    /// A generator over `llama` with caches of `capacity` positions on the model's device,
    /// choosing each next token by `sampling` (`None`: greedy).
    pub fn new(llama: Llama, capacity: usize, sampling: Option<Sampling>) -> Result<Generator> {
        if let Some(s) = &sampling {
            // the op's own checks, before any program is traced
            nbxtensor::ops::spec::sample::Sample::new(llama.weights.dtype, s.temperature, s.top_k, s.top_p, s.seed)?;
        }
        let state = llama.state(capacity)?;
        let (prefills, captures) = (HashMap::new(), Vec::new());
        Ok(Generator { llama, state, sampling, replay: true, prefills, decode: None, captures })
    }

    /// Host `inputs` on the model's device.
    fn on_device(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        Ok(inputs.iter().map(|t| t.to(self.llama.device())).collect::<Result<_, _>>()?)
    }

    /// Runs every step eagerly, op by op, instead of on captured replays (`false`); the
    /// results are the same bit for bit (the test of the replays).
    pub fn set_replay(&mut self, replay: bool) {
        self.replay = replay;
    }

    /// The model.
    pub fn llama(&self) -> &Llama {
        &self.llama
    }

    /// The positions the caches hold.
    pub fn capacity(&self) -> usize {
        self.state.capacity()
    }

    /// The memory the generator holds: the weights (mapped or copied), the KV caches and the
    /// arenas of the replays captured so far.
    pub fn memory(&self) -> Result<GeneratorMemory> {
        let replays = self.prefills.values().chain(&self.decode);
        Ok(GeneratorMemory {
            weight_bytes: self.llama.weights.bytes()?,
            cache_bytes: self.state.cache_bytes(),
            arena_bytes: replays.map(|r| r.executable().plan().allocated_bytes()).sum(),
        })
    }

    /// The programs captured so far, in order, with their planned and allocated arenas.
    pub fn captures(&self) -> &[Capture] {
        &self.captures
    }

    /// The prefill buckets captured so far.
    pub fn captured_buckets(&self) -> Vec<usize> {
        let mut b: Vec<usize> = self.prefills.keys().copied().collect();
        b.sort_unstable();
        b
    }

    /// Runs the host `inputs` on the replay in `slot` (copied straight into its arena),
    /// tracing `model` over their copies on `device` into a program, planning and capturing it
    /// first when the slot is empty (recorded in `captures` as `name`); returns the outputs and
    /// the capture's seconds.
    fn replayed(
        device: Device,
        slot: &mut Option<Replay>,
        captures: &mut Vec<Capture>,
        name: String,
        inputs: &[Tensor],
        model: impl FnOnce(&[Tensor]) -> std::result::Result<Vec<Tensor>, ProgramError>,
    ) -> Result<(Vec<Tensor>, f64)> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let mut seconds = 0.0;
        if slot.is_none() {
            let start = Instant::now();
            let traced = inputs.iter().map(|t| t.to(device)).collect::<Result<Vec<_>, _>>()?;
            let program = trace(&traced, model)?;
            let plan = program.plan()?;
            let planned_bytes = plan.allocated_bytes();
            let allocator = backend::of(program.device);
            let before = allocator.in_use();
            let executable = Executable::new(program, plan)?;
            let allocated_bytes = allocator.in_use().saturating_sub(before);
            *slot = Some(executable.capture(&refs)?);
            captures.push(Capture { program: name, planned_bytes, allocated_bytes });
            seconds = start.elapsed().as_secs_f64();
        }
        match slot {
            Some(replay) => Ok((replay.run(&refs)?, seconds)),
            None => Err(ProgramError::Invalid("no replay was captured".into()).into()),
        }
    }

    /// The prefill of `prompt` (1 to `capacity` ids, each below the vocabulary): writes the
    /// caches' first rows, returns the last position's logits and the next token, and the
    /// seconds spent capturing.
    pub fn prefill(&mut self, prompt: &[i64]) -> Result<(Step, f64)> {
        let vocab = self.llama.config.vocab_size as i64;
        if let Some(bad) = prompt.iter().find(|&&id| id < 0 || id >= vocab) {
            return Err(ModelError::Input(format!("prompt token {bad} is outside the vocabulary 0..{vocab}")));
        }
        if prompt.is_empty() || prompt.len() > self.capacity() {
            return Err(ModelError::Input(format!(
                "a prompt of {} tokens: the context takes 1 to {}",
                prompt.len(),
                self.capacity()
            )));
        }
        let s = bucket(prompt.len()).min(self.capacity());
        let mut ids = prompt.to_vec();
        ids.resize(s, 0);
        let inputs = [Tensor::from_vec(ids, &[1, s as i64])?, Tensor::from_vec(vec![prompt.len() as i64 - 1], &[1])?];
        let (llama, state, sampling) = (&self.llama, &self.state, self.sampling.as_ref());
        let model = |t: &[Tensor]| prefill_program(llama, state, sampling, t);
        if !self.replay {
            return Ok((step_of(model(&self.on_device(&inputs)?)?)?, 0.0));
        }
        let mut slot = self.prefills.remove(&s);
        let device = self.llama.device();
        let result = Self::replayed(device, &mut slot, &mut self.captures, format!("prefill {s}"), &inputs, model);
        if let Some(replay) = slot {
            self.prefills.insert(s, replay);
        }
        let (outputs, seconds) = result?;
        Ok((step_of(outputs)?, seconds))
    }

    /// One decode step of `token` at `position` (after the prompt and the tokens before it):
    /// writes the caches' row `position`, returns the logits and the next token, and the
    /// seconds spent capturing.
    pub fn decode(&mut self, token: i64, position: usize) -> Result<(Step, f64)> {
        if position >= self.capacity() {
            return Err(ModelError::Input(format!(
                "decode position {position} is past the context of {} positions",
                self.capacity()
            )));
        }
        let p = position as i64;
        let index = |value: i64, shape: &[i64]| Tensor::from_vec(vec![value], shape);
        let inputs = [index(token, &[1, 1])?, index(p, &[1])?, index(p + 1, &[1])?];
        let (llama, state, sampling) = (&self.llama, &self.state, self.sampling.as_ref());
        let model = |t: &[Tensor]| decode_program(llama, state, sampling, t);
        if !self.replay {
            return Ok((step_of(model(&self.on_device(&inputs)?)?)?, 0.0));
        }
        let device = self.llama.device();
        let (outputs, seconds) =
            Self::replayed(device, &mut self.decode, &mut self.captures, "decode".into(), &inputs, model)?;
        Ok((step_of(outputs)?, seconds))
    }

    /// Generation after `prompt`: at most `max_new_tokens` tokens (never past the
    /// context), stopping after an end-of-sequence token of the config when `stop_at_eos`;
    /// `on_token` sees each token as it comes.
    pub fn generate(
        &mut self,
        prompt: &[i64],
        max_new_tokens: usize,
        stop_at_eos: bool,
        mut on_token: impl FnMut(i64),
    ) -> Result<Generation> {
        if prompt.len() + max_new_tokens > self.capacity() + 1 {
            return Err(ModelError::Input(format!(
                "{} prompt tokens and {max_new_tokens} new ones do not fit a context of {} positions",
                prompt.len(),
                self.capacity()
            )));
        }
        let start = Instant::now();
        let (first, prefill_capture_seconds) = self.prefill(prompt)?;
        let prefill_seconds = start.elapsed().as_secs_f64();
        let start = Instant::now();
        let mut generated = Vec::with_capacity(max_new_tokens);
        let mut token = first.token;
        let mut decode_capture_seconds = 0.0;
        while generated.len() < max_new_tokens {
            generated.push(token);
            on_token(token);
            let stop = stop_at_eos && self.llama.config.eos_token_ids.contains(&token);
            if stop || generated.len() == max_new_tokens {
                break;
            }
            let (step, seconds) = self.decode(token, prompt.len() + generated.len() - 1)?;
            decode_capture_seconds += seconds;
            token = step.token;
        }
        Ok(Generation {
            prompt_ids: prompt.to_vec(),
            generated_ids: generated,
            prefill_last_logits: first.logits_f32()?,
            prefill_seconds,
            decode_seconds: start.elapsed().as_secs_f64(),
            prefill_capture_seconds,
            decode_capture_seconds,
        })
    }
}
