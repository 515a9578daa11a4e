//! Llama-family decoders (Hugging Face `LlamaForCausalLM`, `MistralForCausalLM`,
//! `Qwen2ForCausalLM` checkpoints) built from nbxtensor ops, on the CPU or a GPU in float32,
//! bfloat16 or float16, with greedy or sampled generation over a KV cache held in place: a
//! prefill program per prompt-length bucket, one decode program captured once and replayed
//! for every token.

mod config;
mod generate;
mod model;
mod price;
mod weights;

pub use config::{Family, Llama3Scaling, LlamaConfig};
pub use generate::{bucket, Capture, Generation, Generator, GeneratorMemory, Step, MIN_BUCKET};
pub use model::{DecodeState, Llama, Sampling};
pub use price::{GenerationPrice, PricedProgram};
pub use weights::{Allocation, LayerWeights, LlamaWeights, Placement, Projection, Weight};
