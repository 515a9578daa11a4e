//! A Llama decoder quantized to int4-g128-asym at load (`Placement::int4`): on the CPU it
//! decodes exactly as the same decoder with every projection replaced by its dequantized matrix
//! (greedy tokens equal, prompt logits within float32 rounding), holds what its price said
//! before loading, and a model whose projections are not whole groups of 128 is refused by name.
//! Where a GPU is present, the quantized decoder on CUDA gives the CPU's greedy tokens. The
//! checkpoint is written here: hidden 128, feed-forward 256, so that every projection quantizes.

use nbxtensor::backend;
use nbxtensor::memory::{Device, DeviceKind};
use nbxtensor::tensor::Tensor;
use nbxtensor::DType;
use nbxtensor_models::llama::{Generator, Llama, Placement, Projection, Weight};
use std::path::{Path, PathBuf};

const HIDDEN: usize = 128;
const FEED: usize = 256;
const LAYERS: usize = 2;
const VOCAB: usize = 96;

/// A seeded xorshift: weights of about 0.05 (norms near 1).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
    }
}

/// Writes `config.json` and `model.safetensors` (float32, untied head, q/k/v biases as Qwen2
/// has them) into a fresh folder.
fn checkpoint(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nbx-int4-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (heads, kv_heads, head_dim) = (4, 2, 32);
    let mut tensors: Vec<(String, Vec<usize>)> =
        vec![("model.embed_tokens.weight".into(), vec![VOCAB, HIDDEN]), ("model.norm.weight".into(), vec![HIDDEN])];
    tensors.push(("lm_head.weight".into(), vec![VOCAB, HIDDEN]));
    for l in 0..LAYERS {
        let p = format!("model.layers.{l}");
        for (part, shape) in [
            ("input_layernorm.weight", vec![HIDDEN]),
            ("post_attention_layernorm.weight", vec![HIDDEN]),
            ("self_attn.q_proj.weight", vec![heads * head_dim, HIDDEN]),
            ("self_attn.q_proj.bias", vec![heads * head_dim]),
            ("self_attn.k_proj.weight", vec![kv_heads * head_dim, HIDDEN]),
            ("self_attn.k_proj.bias", vec![kv_heads * head_dim]),
            ("self_attn.v_proj.weight", vec![kv_heads * head_dim, HIDDEN]),
            ("self_attn.v_proj.bias", vec![kv_heads * head_dim]),
            ("self_attn.o_proj.weight", vec![HIDDEN, heads * head_dim]),
            ("mlp.gate_proj.weight", vec![FEED, HIDDEN]),
            ("mlp.up_proj.weight", vec![FEED, HIDDEN]),
            ("mlp.down_proj.weight", vec![HIDDEN, FEED]),
        ] {
            tensors.push((format!("{p}.{part}"), shape));
        }
    }
    let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
    let mut header = serde_json::Map::new();
    let mut data = Vec::new();
    for (name, shape) in &tensors {
        let count: usize = shape.iter().product();
        let norm = name.ends_with("norm.weight");
        let start = data.len();
        for _ in 0..count {
            let value = if norm { 1.0 + draw.next() } else { draw.next() };
            data.extend_from_slice(&value.to_le_bytes());
        }
        header.insert(
            name.clone(),
            serde_json::json!({"dtype": "F32", "shape": shape, "data_offsets": [start, data.len()]}),
        );
    }
    let mut text = serde_json::Value::Object(header).to_string();
    while text.len() % 8 != 0 {
        text.push(' ');
    }
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&data);
    std::fs::write(dir.join("model.safetensors"), file).unwrap();
    let config = serde_json::json!({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": HIDDEN,
        "intermediate_size": FEED, "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "num_hidden_layers": LAYERS, "vocab_size": VOCAB, "max_position_embeddings": 64,
        "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "tie_word_embeddings": false,
        "torch_dtype": "float32", "hidden_act": "silu"
    });
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    dir
}

/// The dense matrix a packed one stands for: `I · dequant(W)ᵀ`, transposed.
fn dequantized(weight: &Weight) -> Tensor {
    let Weight::Int4 { packed, scales, minima, inputs } = weight else { panic!("a quantized projection") };
    let n = *inputs as usize;
    let eye: Vec<f32> = (0..n * n).map(|i| if i / n == i % n { 1.0 } else { 0.0 }).collect();
    let identity = Tensor::from_vec(eye, &[n as i64, n as i64]).unwrap();
    identity.matmul_int4(packed, scales, minima).unwrap().transpose(0, 1).unwrap().contiguous().unwrap()
}

fn dense(p: &Projection) -> Projection {
    Projection { weight: Weight::Dense(dequantized(&p.weight)), bias: p.bias.clone() }
}

/// The same decoder with every projection its dequantized matrix (no joined products).
fn dequantized_model(quantized: &Llama) -> Llama {
    let mut weights = quantized.weights.clone();
    for layer in &mut weights.layers {
        for p in
            [&mut layer.q, &mut layer.k, &mut layer.v, &mut layer.o, &mut layer.gate, &mut layer.up, &mut layer.down]
        {
            *p = dense(p);
        }
        layer.qkv = None;
        layer.gate_up = None;
    }
    Llama { config: quantized.config.clone(), weights }
}

fn relative(a: &[f32], b: &[f32]) -> f32 {
    let diff = a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max);
    diff / b.iter().map(|x| x.abs()).fold(f32::MIN_POSITIVE, f32::max)
}

const INT4_ON_CPU: Placement = Placement { device: Device::CPU, dtype: None, int4: true };

fn an_int4_decoder_decodes_as_its_dequantized_matrices_do() {
    let dir = checkpoint("decode");
    let prompt: Vec<i64> = vec![3, 17, 42, 8, 91, 5, 60];
    let steps = 24;
    let quantized = Llama::open_as(&dir, INT4_ON_CPU).unwrap();
    let layer = &quantized.weights.layers[0];
    assert!(matches!(layer.qkv.as_ref().map(|p| &p.weight), Some(Weight::Int4 { .. })), "q/k/v joined and packed");
    assert!(matches!(layer.down.weight, Weight::Int4 { .. }) && matches!(layer.gate_up, Some(Weight::Int4 { .. })));
    assert_eq!(quantized.weights.lm_head.dtype(), DType::Float32, "the head stays in the float dtype");
    let reference = dequantized_model(&quantized);
    let dense_bytes = reference.weights.bytes().unwrap();
    assert!(quantized.weights.bytes().unwrap() * 2 < dense_bytes, "the packed layers hold far fewer bytes");
    assert_eq!(quantized.weights.parameters(), reference.weights.parameters());

    let mut g = Generator::new(quantized, prompt.len() + steps, None).unwrap();
    let ours = g.generate(&prompt, steps, false, |_| {}).unwrap();
    let mut r = Generator::new(reference, prompt.len() + steps, None).unwrap();
    let theirs = r.generate(&prompt, steps, false, |_| {}).unwrap();
    assert_eq!(ours.generated_ids, theirs.generated_ids);
    let error = relative(&ours.prefill_last_logits, &theirs.prefill_last_logits);
    assert!(error < 1e-5, "prompt logits {error:e} apart");
    // the quantization is lossy: a float32 decoder of the checkpoint's own weights differs
    let float = Generator::new(Llama::open(&dir).unwrap(), prompt.len() + steps, None)
        .unwrap()
        .generate(&prompt, steps, false, |_| {})
        .unwrap();
    let lossy = relative(&ours.prefill_last_logits, &float.prefill_last_logits);
    // uniform random weights keep 4 bits of 16 levels: about a tenth of their size in noise
    assert!(lossy > 1e-4 && lossy < 0.5, "int4 against float32: {lossy:e}");
    println!("int4 vs dequantized {error:e}, vs float32 {lossy:e}");

    match nbxtensor::backend::cuda::memory::driver() {
        Ok(_) => {
            let device = Device::parse("cuda").unwrap();
            assert_eq!(device.kind, DeviceKind::Cuda);
            let placement = Placement { device, dtype: Some(DType::Float32), int4: true };
            let on_gpu = Generator::new(Llama::open_as(&dir, placement).unwrap(), prompt.len() + steps, None)
                .unwrap()
                .generate(&prompt, steps, false, |_| {})
                .unwrap();
            assert_eq!(on_gpu.generated_ids, ours.generated_ids, "CUDA int4 = CPU int4");
            let apart = relative(&on_gpu.prefill_last_logits, &ours.prefill_last_logits);
            assert!(apart < 1e-4, "CUDA int4 logits {apart:e} from the CPU's");
        }
        Err(why) => eprintln!("the CUDA half skipped: no CUDA ({why})"),
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// One test (the host allocator's accounting is process-wide): the decode, then the price.
#[test]
fn int4_at_load() {
    an_int4_decoder_decodes_as_its_dequantized_matrices_do();
    an_int4_generation_holds_its_price_and_whole_groups_are_asked();
}

fn an_int4_generation_holds_its_price_and_whole_groups_are_asked() {
    let dir = checkpoint("price");
    let host = backend::of(Device::CPU);
    let prompt: Vec<i64> = (0..9).collect();
    let before = host.in_use();
    let (priced, allocated) = Llama::open_priced(&dir, INT4_ON_CPU).unwrap();
    let price = priced.price(allocated, prompt.len() + 6, prompt.len(), None).unwrap();
    drop(priced);
    let llama = Llama::open_as(&dir, INT4_ON_CPU).unwrap();
    assert_eq!(llama.weights.bytes().unwrap(), price.weight_bytes);
    let mut g = Generator::new(llama, prompt.len() + 6, None).unwrap();
    g.generate(&prompt, 6, false, |_| {}).unwrap();
    assert_eq!(host.in_use() - before, price.held_bytes(), "what the run holds");
    drop(g);
    std::fs::remove_dir_all(dir).unwrap();

    // hidden 64: the projections' rows are half a group
    let tiny = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/llama/llama3-tiny");
    for err in [Llama::open_as(&tiny, INT4_ON_CPU).err(), Llama::open_priced(&tiny, INT4_ON_CPU).err()] {
        let text = err.expect("refused").to_string();
        assert!(text.contains("not a whole number of int4 groups of 128") && text.contains("q_proj"), "{text}");
    }
}
