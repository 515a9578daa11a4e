//! The quant family on the host (`ops::spec::quant` says what each op computes): int4 products
//! and packing (`int4.rs`), dynamically quantized int8 products and packing (`int8.rs`, their
//! AVX-512 VNNI blocks in `vnni.rs`).

mod int4;
mod int8;
mod vnni;

use crate::backend::LaunchTable;

/// Registers the family's ops.
pub fn register(table: &mut LaunchTable) {
    int4::register(table);
    int8::register(table);
}
