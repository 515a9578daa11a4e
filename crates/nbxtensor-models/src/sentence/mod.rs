//! Sentence embeddings as sentence-transformers computes them (BERT, mean pooling over the
//! attention mask, L2 normalisation), run as planned programs: a (batch, seq) shape met for
//! the first time runs op by op (eagerly: one run, as a job of shapes that never repeat wants);
//! met again, it is traced, planned and captured (verified byte for byte against an eager run,
//! the checked run giving that batch), and its replay serves every later batch of that shape.
//! [`SentenceEmbedder::set_capture_at`] moves the capture to another meeting (the first: every
//! shape captured at once).

mod batch;
mod pooling;

pub use batch::{SentenceBatch, PADDING_SCORE};
pub use pooling::NORM_FLOOR;

use crate::bert::Bert;
use crate::error::{ModelError, Result};
use crate::tokenize::TextTokenizer;
use nbxtensor::backend;
use nbxtensor::memory::{host_allocator, Device};
use nbxtensor::program::{trace, Executable, Program, ProgramError, Replay};
use nbxtensor::tensor::Tensor;
use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

/// The longest sequence sentence-transformers feeds all-MiniLM-L6-v2 (its `max_seq_length`),
/// and the default when a model directory does not say.
pub const MAX_TOKENS: usize = 256;

/// The arena bytes the kept replays may hold together, by default: past it, the least recently
/// used ones are dropped (texts are batched by length, so an old shape seldom comes back).
pub const REPLAY_BUDGET: usize = 512 << 20;

/// The memory of one batch on the model's device: what the plan priced against what the
/// device's allocator was asked for (its accounting is process-wide: these are exact while
/// nothing else allocates).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchMemory {
    /// The arena of the shape's program as its plan prices it, before anything runs: the bytes
    /// the device's allocator takes for it (its size class or granularity), workspace included.
    pub planned_bytes: u64,
    /// The bytes creating the shape's executable took from the device's allocator, measured
    /// (`None` when the shape's replay existed).
    pub arena_allocated_bytes: Option<u64>,
    /// The bytes the replay run (or the copy of a capture's outputs) took above what was in use
    /// before it, measured (on the host its high-water mark, on a GPU the blocks it left live):
    /// the embeddings it returns (the arena is already there).
    pub run_allocated_bytes: u64,
}

/// How one batch ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchMode {
    /// Op by op, uncaptured: its shape met fewer times than the capture waits for (the memory
    /// then has no plan: `planned_bytes` 0, no arena, `run_allocated_bytes` the run's peak).
    Eager,
    /// Its shape captured on it: the capture's checked run gave the batch.
    Captured,
    /// On its shape's kept replay.
    Replayed,
}

/// The meeting of a shape at which it is captured by default: the second (the first runs
/// eagerly, so a shape that never comes back costs one run, not an eager and a checked one).
pub const CAPTURE_AT: usize = 2;

/// One batch embedded by [`SentenceEmbedder::run_batch`].
pub struct BatchRun {
    /// The `[b, hidden]` unit vectors.
    pub embeddings: Tensor,
    /// How it ran.
    pub mode: BatchMode,
    /// Seconds spent tracing, planning and capturing (0 unless `mode` is `Captured`).
    pub capture_seconds: f64,
    /// What the plan priced and what was allocated.
    pub memory: BatchMemory,
}

/// What one batch took, for progress reports.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchReport {
    /// Texts embedded so far, this batch included.
    pub done: usize,
    /// Texts in all.
    pub total: usize,
    /// The batch's padded shape, `(batch, seq)`.
    pub shape: (usize, usize),
    /// How it ran.
    pub mode: BatchMode,
    /// Seconds spent tracing, planning and capturing (0 unless `mode` is `Captured`).
    pub capture_seconds: f64,
    /// Seconds the batch ran: the eager run, the replay, or for a capture the copy of the
    /// checked run's outputs (which are this batch's: the capture ran the program on it).
    pub run_seconds: f64,
    /// Its host memory, priced and allocated.
    pub memory: BatchMemory,
}

/// A sentence-embedding model: a BERT encoder, its tokenizer, and one verified replay per
/// batch shape met so far (the most recently used ones, within a budget of arena bytes).
pub struct SentenceEmbedder {
    device: Device,
    bert: Bert,
    tokenizer: TextTokenizer,
    floor: Tensor,
    pad_multiple: usize,
    replay_budget: usize,
    capture_at: usize,
    clock: u64,
    replays: HashMap<(usize, usize), (Replay, u64)>,
    met: HashMap<(usize, usize), usize>,
    /// The float32 dense weights are laid out in panels before the first batch runs.
    pack_pending: bool,
}

impl SentenceEmbedder {
    /// Opens a sentence-transformers model directory: `config.json`, `model.safetensors`
    /// (mapped), `tokenizer.json`, and `sentence_bert_config.json`'s `max_seq_length` when
    /// present (else [`MAX_TOKENS`]), never past the model's positions.
    pub fn open(dir: &Path) -> Result<SentenceEmbedder> {
        SentenceEmbedder::open_on(dir, Device::CPU)
    }

    /// [`SentenceEmbedder::open`] with the weights sent once to `device`, where every batch's
    /// program then runs (a CUDA graph on a GPU); the embeddings come back to the host. On a
    /// CPU with the packed products' kernel (`nbxtensor::backend::cpu::packed_native`) the
    /// first batch lays the dense weights out in panels ([`SentenceEmbedder::pack_weights`]),
    /// so that no product packs them again; quantized first, they are never packed.
    pub fn open_on(dir: &Path, device: Device) -> Result<SentenceEmbedder> {
        let mut bert = Bert::open(dir)?;
        bert.weights = bert.weights.to(device)?;
        let pack_pending = device == Device::CPU && nbxtensor::backend::cpu::packed_native();
        let max_tokens = max_seq_length(dir)?.unwrap_or(MAX_TOKENS).min(bert.config.max_position_embeddings);
        let tokenizer = TextTokenizer::open(&dir.join("tokenizer.json"), max_tokens)?;
        let floor = Tensor::from_vec(vec![NORM_FLOOR], &[1])?.to(device)?;
        Ok(SentenceEmbedder {
            device,
            bert,
            tokenizer,
            floor,
            pad_multiple: 1,
            replay_budget: REPLAY_BUDGET,
            capture_at: CAPTURE_AT,
            clock: 0,
            replays: HashMap::new(),
            met: HashMap::new(),
            pack_pending,
        })
    }

    /// Drops the replays and the shapes met: they were made with the weights just replaced.
    fn forget_shapes(&mut self) {
        self.replays.clear();
        self.met.clear();
    }

    /// Lays the float32 dense weights out in `pack_linear`'s panels now (what the first batch
    /// does itself on a CPU with AVX-512F), so that each batch runs them as `linear_packed`.
    /// Replays captured before are dropped. A device without the packed kernels refuses,
    /// naming them.
    pub fn pack_weights(&mut self) -> Result<()> {
        self.pack_pending = false;
        self.bert.weights = self.bert.weights.packed()?;
        self.forget_shapes();
        Ok(())
    }

    /// Quantizes every dense layer's weight to the int8-g64 layout (`pack_int8`), so
    /// that each batch runs them as `matmul_int8` (activations quantized per row as they go,
    /// their outliers kept float32). Replays
    /// captured before are dropped. A device without the int8 kernels refuses, naming them.
    pub fn quantize_int8(&mut self) -> Result<()> {
        self.pack_pending = false;
        self.bert.weights = self.bert.weights.quantized_int8()?;
        self.forget_shapes();
        Ok(())
    }

    /// Lays the packed dense weights out as `[out, in]` again (a copy; no batch packs them
    /// after it), for programs traced
    /// under a precision policy that computes the products in another dtype (`linear_packed`
    /// runs float32 only). Replays captured before are dropped.
    pub fn unpack_weights(&mut self) -> Result<()> {
        self.pack_pending = false;
        self.bert.weights = self.bert.weights.unpacked()?;
        self.forget_shapes();
        Ok(())
    }

    /// Pads every batch to a multiple of `multiple` tokens (at least 1; 1, the default, pads
    /// to the longest text of the batch), never past the model's positions. Padding keys have
    /// exactly zero attention and pooling weight, so the embeddings do not change; batch
    /// shapes repeat more often, and their replays are reused instead of captured anew.
    pub fn set_pad_multiple(&mut self, multiple: usize) -> Result<()> {
        if multiple == 0 {
            return Err(ModelError::Files("the padding multiple must be at least 1".into()));
        }
        self.pad_multiple = multiple;
        Ok(())
    }

    /// Captures a shape the `meeting`-th time it is met (at least 1: 1 captures every shape at
    /// once; [`CAPTURE_AT`] by default); before that its batches run eagerly. A shape whose
    /// replay was dropped is met afresh.
    pub fn set_capture_at(&mut self, meeting: usize) -> Result<()> {
        if meeting == 0 {
            return Err(ModelError::Files("a shape is captured at its first meeting or later (at least 1)".into()));
        }
        self.capture_at = meeting;
        Ok(())
    }

    /// Keeps replays whose arenas hold at most `bytes` together (the one in use always stays),
    /// dropping the least recently used first; [`REPLAY_BUDGET`] by default.
    pub fn set_replay_budget(&mut self, bytes: usize) {
        self.replay_budget = bytes;
        self.evict(0);
    }

    /// Drops the least recently used replays until the kept ones and `incoming` more arena
    /// bytes fit the budget.
    fn evict(&mut self, incoming: usize) {
        let held = |r: &HashMap<(usize, usize), (Replay, u64)>| {
            r.values().map(|(replay, _)| replay.executable().arena_bytes()).sum::<usize>()
        };
        while !self.replays.is_empty() && held(&self.replays) + incoming > self.replay_budget {
            let oldest = self.replays.iter().min_by_key(|(_, (_, used))| *used).map(|(shape, _)| *shape);
            oldest.map(|shape| self.replays.remove(&shape));
        }
    }

    /// Where the model runs.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The encoder.
    pub fn bert(&self) -> &Bert {
        &self.bert
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// Width of an embedding.
    pub fn dimension(&self) -> usize {
        self.bert.config.hidden_size
    }

    /// The model as a function of the program's inputs (ids, additive mask, pooling weights):
    /// `[b, hidden]` unit vectors. Runs eagerly on tensors, or traces into a program.
    pub fn model(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, ProgramError> {
        let [ids, mask, pool] = inputs else {
            return Err(ProgramError::Invalid(format!("the model takes 3 inputs, got {}", inputs.len())));
        };
        let hidden = self.bert.forward(ids, mask)?;
        Ok(vec![pooling::mean_normalized(&hidden, pool, &self.floor)?])
    }

    /// The traced program of a `batch` × `seq` batch (nothing runs).
    pub fn program(&self, batch: usize, seq: usize) -> Result<Program> {
        let zeros = SentenceBatch::zeros(batch, seq)?;
        let inputs = zeros.inputs().map(|t| t.to(self.device)).into_iter().collect::<Result<Vec<_>, _>>()?;
        Ok(trace(&inputs, |t| self.model(t))?)
    }

    /// Shapes whose replay is kept, ready.
    pub fn captured_shapes(&self) -> Vec<(usize, usize)> {
        let mut shapes: Vec<_> = self.replays.keys().copied().collect();
        shapes.sort_unstable();
        shapes
    }

    /// Embeds `batch` on its shape's replay; or, when the shape has no replay, eagerly until it
    /// has been met [`SentenceEmbedder::set_capture_at`] times, then captured on this batch,
    /// the embeddings the capture's checked run's (a capture costs the eager run and the
    /// checked one, no replay after); returns the embeddings (on the model's device), how the
    /// batch ran, the seconds spent capturing, and the memory the plan priced against what
    /// creating the executable and running the replay allocated on the device.
    pub fn run_batch(&mut self, batch: &SentenceBatch) -> Result<BatchRun> {
        if self.pack_pending {
            self.pack_weights()?;
        }
        let shape = batch.shape();
        let inputs = batch.inputs();
        let device = backend::of(self.device);
        if !self.replays.contains_key(&shape) {
            let met = self.met.entry(shape).or_insert(0);
            *met += 1;
            if *met < self.capture_at {
                return self.run_eagerly(batch);
            }
            self.met.remove(&shape);
        }
        let (mut capture_seconds, mut arena_allocated_bytes) = (0.0, None);
        // a kept shape replays; one met often enough is captured, and the capture's verified
        // run on these inputs gives the embeddings (no third run)
        let (replay, captured) = match self.replays.remove(&shape) {
            Some((replay, _)) => (replay, false),
            None => {
                let start = Instant::now();
                let program = self.program(shape.0, shape.1)?;
                let plan = program.plan()?;
                self.evict(plan.arena_bytes() as usize);
                let before = device.in_use();
                let executable = Executable::new(program, plan)?;
                arena_allocated_bytes = Some(device.in_use().saturating_sub(before));
                let replay = executable.capture(&inputs)?;
                capture_seconds = start.elapsed().as_secs_f64();
                (replay, true)
            }
        };
        let (outputs, run_allocated_bytes) =
            self.allocated_by(|| if captured { replay.executable().last_outputs() } else { replay.run(&inputs) });
        let planned_bytes = replay.executable().plan().allocated_bytes();
        self.clock += 1;
        self.replays.insert(shape, (replay, self.clock));
        let mut outputs = outputs?;
        let memory = BatchMemory { planned_bytes, arena_allocated_bytes, run_allocated_bytes };
        let mode = if captured { BatchMode::Captured } else { BatchMode::Replayed };
        Ok(BatchRun { embeddings: outputs.remove(0), mode, capture_seconds, memory })
    }

    /// `run`'s result and the bytes it took above what was in use before it on the model's
    /// device (on the host its high-water mark, on a GPU the blocks it left live).
    fn allocated_by<R>(&self, run: impl FnOnce() -> R) -> (R, u64) {
        let (host, device) = (host_allocator(), backend::of(self.device));
        let (before, held) = (host.reset_high_water(), device.in_use());
        let result = run();
        let bytes = match self.device == Device::CPU {
            true => host.high_water().saturating_sub(before),
            false => device.in_use().saturating_sub(held),
        };
        (result, bytes)
    }

    /// `batch` run op by op on the model's device: no trace, plan or arena; its memory the
    /// run's peak ([`SentenceEmbedder::allocated_by`]).
    fn run_eagerly(&self, batch: &SentenceBatch) -> Result<BatchRun> {
        let inputs = batch.inputs().map(|t| t.to(self.device)).into_iter().collect::<Result<Vec<_>, _>>()?;
        let forward = || self.model(&inputs);
        // on the CPU from one of the pool's threads, the others kept awake: each op that splits
        // its work starts on that thread at once (as a replay's launches do)
        let (outputs, run_allocated_bytes) = self.allocated_by(|| match self.device == Device::CPU {
            true => nbxtensor::settings::threads::install_awake(forward),
            false => forward(),
        });
        let mut outputs = outputs?;
        let memory = BatchMemory { planned_bytes: 0, arena_allocated_bytes: None, run_allocated_bytes };
        Ok(BatchRun { embeddings: outputs.remove(0), mode: BatchMode::Eager, capture_seconds: 0.0, memory })
    }

    /// Embeds `texts` (empty ones allowed) in batches of at most `batch_size`, texts of
    /// similar length together (fewer padding tokens, repeated shapes); returns one unit
    /// vector per text in the order given, and calls `report` after every batch.
    pub fn embed(
        &mut self,
        texts: &[&str],
        batch_size: usize,
        mut report: impl FnMut(&BatchReport),
    ) -> Result<Vec<Vec<f32>>> {
        if batch_size == 0 {
            return Err(ModelError::Files("the batch size must be at least 1".into()));
        }
        let ids = texts.iter().map(|t| self.tokenizer.ids(t)).collect::<Result<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| (ids[i].len(), i));
        let mut embeddings = vec![Vec::new(); texts.len()];
        let mut done = 0;
        for chunk in order.chunks(batch_size) {
            let lists: Vec<&[i64]> = chunk.iter().map(|&i| ids[i].as_slice()).collect();
            let longest = lists.iter().map(|l| l.len()).max().unwrap_or(0);
            let padded = longest.div_ceil(self.pad_multiple) * self.pad_multiple;
            let batch = SentenceBatch::new(&lists, padded.min(self.bert.config.max_position_embeddings))?;
            let start = Instant::now();
            let BatchRun { embeddings: vectors, mode, capture_seconds, memory } = self.run_batch(&batch)?;
            let run_seconds = start.elapsed().as_secs_f64() - capture_seconds;
            let values = vectors.to(Device::CPU)?.to_vec::<f32>()?;
            for (row, &i) in chunk.iter().enumerate() {
                embeddings[i] = values[row * self.dimension()..(row + 1) * self.dimension()].to_vec();
            }
            done += chunk.len();
            report(&BatchReport {
                done,
                total: texts.len(),
                shape: batch.shape(),
                mode,
                capture_seconds,
                run_seconds,
                memory,
            });
        }
        Ok(embeddings)
    }
}

/// `max_seq_length` of `sentence_bert_config.json` in `dir`, when the file exists.
fn max_seq_length(dir: &Path) -> Result<Option<usize>> {
    let path = dir.join("sentence_bert_config.json");
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ModelError::Files(format!("cannot read {}: {e}", path.display())))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ModelError::Files(format!("{} is not JSON: {e}", path.display())))?;
    match value.get("max_seq_length") {
        None => Ok(None),
        Some(n) => n.as_u64().filter(|&n| n >= 2).map(|n| Some(n as usize)).ok_or_else(|| {
            ModelError::Files(format!("{}: max_seq_length {n} is not a length of at least 2", path.display()))
        }),
    }
}
