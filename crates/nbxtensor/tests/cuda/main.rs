//! The CUDA backend's tests, one binary (it travels to the GPU machine): every op against the
//! CPU backend and a float64 reference, matrix products, programs and CUDA graphs, and the
//! concurrency suite on the GPU. Each test that needs a device skips, saying so, where there
//! is none.

mod attention;
mod common;
mod concurrency;
mod create;
mod decode;
mod elementwise;
mod fused_attention;
mod gather;
#[path = "../harness/mod.rs"]
mod harness;
mod program;
mod quant;
mod rows;
mod scan;
mod unary;
