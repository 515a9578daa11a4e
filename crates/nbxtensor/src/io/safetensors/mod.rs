//! safetensors files (<https://github.com/huggingface/safetensors>): an 8-byte little-endian
//! header length, a JSON header naming each tensor's dtype code, shape and byte range, then the
//! tensors' bytes, which must tile the data section exactly.
//!
//! Dtype codes go through the dtype table ([`crate::DType::from_safetensors`],
//! [`crate::DType::safetensors_code`]): a code the table lacks (F4, F8_E8M0 …) is refused by
//! name. [`load`] maps the file and returns every tensor in file order; [`open`] reads only the
//! header and loads tensors one at a time; [`save`] writes through the `safetensors` crate.

mod header;
mod load;
mod save;

pub use header::{parse_header, Header, TensorEntry, LENGTH_BYTES, METADATA_KEY};
pub use load::{load, open, LoadedTensor, SafetensorsIndex};
pub use save::save;

#[cfg(test)]
mod tests;
