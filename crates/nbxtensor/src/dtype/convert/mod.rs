//! Host conversions between float formats, over slices: bfloat16, float16 and the two fp8
//! formats, to and from float32.
//!
//! numpy has no bfloat16 or fp8 dtype, so a bfloat16 array on the host is its 16-bit patterns
//! (`u16`) and an fp8 array its 8-bit patterns (`u8`). Every narrowing conversion rounds to
//! nearest, ties to even. Every slice function refuses a destination whose length differs
//! from the source's, and splits large inputs over the rayon pool; the result is the same,
//! byte for byte, as one single-threaded pass.
//!
//! ```
//! use nbxtensor::dtype::convert;
//!
//! let x = [1.0f32, 3.14159, f32::NAN];
//! let mut bits = [0u16; 3];
//! convert::f32_to_bf16_bits(&x, &mut bits)?;
//! assert_eq!(bits, [0x3F80, 0x4049, 0x7FC0]);
//! let mut back = [0f32; 3];
//! convert::bf16_bits_to_f32(&bits, &mut back)?;
//! assert_eq!(back[0], 1.0);
//! assert!(convert::f32_to_bf16_bits(&x, &mut [0u16; 2]).is_err());
//! # Ok::<(), nbxtensor::dtype::DTypeError>(())
//! ```

pub mod bf16;
mod chunks;
mod f16;
pub mod fp8;

pub use self::bf16::{bf16_bits_to_f16, bf16_bits_to_f32, f16_to_bf16_bits, f32_to_bf16_bits};
pub use self::f16::{f16_to_f32, f32_to_f16};
pub use self::fp8::{
    f32_to_fp8_e4m3fn_bits, f32_to_fp8_e5m2_bits, fp8_e4m3fn_bits_to_f32, fp8_e5m2_bits_to_f32, Fp8Format,
};
