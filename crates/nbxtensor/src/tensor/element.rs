//! Rust types that are the element of a dtype.

use crate::dtype::DType;
use half::{bf16, f16};

/// A plain Rust type whose values are the elements of one dtype (same width and bits).
///
/// # Safety
/// `Self` must have the dtype's width, no padding, and every bit pattern of that width must
/// be a valid `Self`.
pub unsafe trait Element: Copy + Send + Sync + 'static {
    /// The dtype `Self` holds.
    const DTYPE: DType;

    /// The bytes of a slice of elements.
    fn as_bytes(values: &[Self]) -> &[u8] {
        // SAFETY: Self has no padding (trait contract), so its bytes are initialised.
        unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), std::mem::size_of_val(values)) }
    }
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(
            // SAFETY: a primitive of the dtype's width, or two of them with no padding between
            // (repr(C) of two equal floats); every bit pattern is valid.
            unsafe impl Element for $t {
                const DTYPE: DType = DType::$d;
            }
        )*
    };
}

/// A complex element: its real part, then its imaginary part, each a `T` (C's `T _Complex`
/// and numpy's layout; num-complex's type, which `gemm` takes as its c32 and c64).
/// `Complex<f32>` is the element of complex64, `Complex<f64>` of complex128.
pub use num_complex::Complex;

element!(
    Complex<f32> => Complex64, Complex<f64> => Complex128,
    f32 => Float32, f64 => Float64, f16 => Float16, bf16 => Bfloat16,
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
);
