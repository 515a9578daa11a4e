//! The planner on the buffers of real models: a MiniLM-sized BERT encoder and Llama-style
//! decoder blocks, traced launch by launch. Each plan must stay within 5% of the lower bound
//! (`cargo test -p nbxtensor --test planner_models -- --nocapture` prints the ratios; the
//! pictures are written under the target's temporary folder).

use nbxtensor::memory::{BufferRequest, Plan, HOST_ALIGNMENT};
use nbxtensor::DType;

/// A program traced one launch at a time: each launch reads buffers and writes one.
struct Trace {
    requests: Vec<BufferRequest>,
    launches: usize,
}

impl Trace {
    fn new() -> Trace {
        Trace { requests: Vec::new(), launches: 0 }
    }

    /// A launch reading `inputs` and writing a new buffer of `elements` × `dtype`, optionally
    /// in place of `in_place_of` (which must be read here for the last time).
    fn launch(&mut self, inputs: &[usize], elements: u64, dtype: DType, in_place_of: Option<usize>) -> usize {
        let launch = self.launches;
        self.launches += 1;
        for &input in inputs {
            self.requests[input].last_use = launch;
        }
        let id = self.requests.len();
        let bytes = elements * dtype.itemsize().expect("a dtype with a width") as u64;
        let request = BufferRequest::new(id, bytes, launch, launch);
        self.requests.push(match in_place_of {
            Some(input) => request.in_place_of(input),
            None => request,
        });
        id
    }

    /// The requests, with `outputs` kept alive to the end of the program.
    fn finish(mut self, outputs: &[usize]) -> Vec<BufferRequest> {
        for &output in outputs {
            self.requests[output].last_use = self.launches - 1;
        }
        self.requests
    }
}

/// A BERT encoder forward (post-norm, as BertModel): embeddings, then per layer the q/k/v
/// projections, scores `[b, h, s, s]`, softmax in place, context, output projection, residual
/// in place, layer norm, FFN up, GELU in place, FFN down, residual in place, layer norm.
fn bert(layers: usize, batch: u64, seq: u64, hidden: u64, heads: u64, intermediate: u64) -> Vec<BufferRequest> {
    let (f32, i64) = (DType::Float32, DType::Int64);
    let tokens = batch * seq;
    let mut t = Trace::new();
    let ids = t.launch(&[], tokens, i64, None);
    let mask = t.launch(&[], batch * seq, f32, None);
    let words = t.launch(&[ids], tokens * hidden, f32, None);
    let summed = t.launch(&[words], tokens * hidden, f32, Some(words));
    let mut x = t.launch(&[summed], tokens * hidden, f32, None);
    for _ in 0..layers {
        let q = t.launch(&[x], tokens * hidden, f32, None);
        let k = t.launch(&[x], tokens * hidden, f32, None);
        let v = t.launch(&[x], tokens * hidden, f32, None);
        let scores = t.launch(&[q, k, mask], batch * heads * seq * seq, f32, None);
        let probs = t.launch(&[scores], batch * heads * seq * seq, f32, Some(scores));
        let context = t.launch(&[probs, v], tokens * hidden, f32, None);
        let projected = t.launch(&[context], tokens * hidden, f32, None);
        let residual = t.launch(&[projected, x], tokens * hidden, f32, Some(projected));
        let normed = t.launch(&[residual], tokens * hidden, f32, None);
        let up = t.launch(&[normed], tokens * intermediate, f32, None);
        let gelu = t.launch(&[up], tokens * intermediate, f32, Some(up));
        let down = t.launch(&[gelu], tokens * hidden, f32, None);
        let residual = t.launch(&[down, normed], tokens * hidden, f32, Some(down));
        x = t.launch(&[residual], tokens * hidden, f32, None);
    }
    t.finish(&[x])
}

/// Llama-style decoder blocks over a prompt (float16 activations, float32 scores): RMS norm,
/// q/k/v, RoPE on q and k in place, scores with grouped kv heads, softmax in place, context,
/// o_proj, residual in place, RMS norm, gate/up, SiLU(gate)·up in place, down, residual in place.
fn llama(blocks: usize, seq: u64, hidden: u64, heads: u64, kv_heads: u64, intermediate: u64) -> Vec<BufferRequest> {
    let (f16, f32) = (DType::Float16, DType::Float32);
    let head_dim = hidden / heads;
    let mut t = Trace::new();
    let mut x = t.launch(&[], seq * hidden, f16, None);
    let cos = t.launch(&[], seq * head_dim, f32, None);
    let sin = t.launch(&[], seq * head_dim, f32, None);
    for _ in 0..blocks {
        let normed = t.launch(&[x], seq * hidden, f16, None);
        let q = t.launch(&[normed], seq * hidden, f16, None);
        let k = t.launch(&[normed], seq * kv_heads * head_dim, f16, None);
        let v = t.launch(&[normed], seq * kv_heads * head_dim, f16, None);
        let q = t.launch(&[q, cos, sin], seq * hidden, f16, Some(q));
        let k = t.launch(&[k, cos, sin], seq * kv_heads * head_dim, f16, Some(k));
        let scores = t.launch(&[q, k], heads * seq * seq, f32, None);
        let probs = t.launch(&[scores], heads * seq * seq, f32, Some(scores));
        let context = t.launch(&[probs, v], seq * hidden, f16, None);
        let projected = t.launch(&[context], seq * hidden, f16, None);
        let h = t.launch(&[projected, x], seq * hidden, f16, Some(projected));
        let normed = t.launch(&[h], seq * hidden, f16, None);
        let gate = t.launch(&[normed], seq * intermediate, f16, None);
        let up = t.launch(&[normed], seq * intermediate, f16, None);
        let act = t.launch(&[gate, up], seq * intermediate, f16, Some(gate));
        let down = t.launch(&[act], seq * hidden, f16, None);
        x = t.launch(&[down, h], seq * hidden, f16, Some(down));
    }
    t.finish(&[x])
}

/// Plans `requests`, prints the ratio, draws the plan, and checks it is within 5% of the bound.
fn check(name: &str, requests: &[BufferRequest]) -> Plan {
    let plan = Plan::new(requests, HOST_ALIGNMENT as u64).expect("a valid trace");
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{}.svg", name.replace(' ', "_")));
    std::fs::write(&path, plan.svg(requests, name)).expect("a writable target folder");
    println!(
        "{name}: {} buffers, arena {} bytes, lower bound {} bytes, ratio {:.4} ({}), picture {}",
        requests.len(),
        plan.arena_bytes,
        plan.lower_bound,
        plan.ratio(),
        plan.order.as_str(),
        path.display()
    );
    assert!(plan.ratio() <= 1.05, "{name}: ratio {} above 1.05\n{}", plan.ratio(), plan.report(requests));
    plan
}

#[test]
fn minilm_encoder_batch_1() {
    let requests = bert(6, 1, 128, 384, 12, 1536);
    let plan = check("MiniLM encoder, batch 1, seq 128", &requests);
    // Every declared in-place pair is honoured: the trace declares them only where safe.
    let declared = requests.iter().filter(|r| r.reuse_of.is_some()).count();
    assert_eq!(plan.in_place.iter().filter(|&&h| h).count(), declared);
}

#[test]
fn minilm_encoder_batch_32() {
    let requests = bert(6, 32, 128, 384, 12, 1536);
    let plan = check("MiniLM encoder, batch 32, seq 128", &requests);
    // By hand: the peak is at a scores launch, where x (read again by the residual), q, k, v,
    // the scores and the mask are alive; at the FFN down launch only normed, the GELU output
    // and down are (with the mask). Every size is a multiple of 64.
    let (tokens, hidden, intermediate, scores) = (32 * 128u64, 384, 1536, 32 * 12 * 128 * 128u64);
    let scores_peak = 4 * (tokens * hidden * 4 + scores + tokens);
    let ffn_peak = 4 * (tokens * hidden * 2 + tokens * intermediate + tokens);
    assert_eq!(plan.lower_bound, scores_peak.max(ffn_peak));
}

#[test]
fn llama_decoder_block() {
    let plan = check("Llama block, seq 512", &llama(1, 512, 4096, 32, 8, 11008));
    // By hand: the peak is at the scores launch, where x (read again by the residual), q, k
    // and v (float16) and the float32 scores are alive; RoPE's tables were last read before.
    let (seq, hidden, kv) = (512u64, 4096, 8 * 128);
    assert_eq!(plan.lower_bound, 2 * (seq * hidden * 2 + seq * kv * 2) + 4 * 32 * seq * seq);
}

#[test]
fn llama_decoder_four_blocks() {
    check("Llama 4 blocks, seq 512", &llama(4, 512, 4096, 32, 8, 11008));
}
