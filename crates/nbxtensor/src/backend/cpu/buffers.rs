//! How CPU kernels read inputs and write outputs: typed slices of host tensors, strided
//! offsets, float conversions for half formats, and parallel loops on the library's pool.

use crate::kernel::{KernelError, Result};
use crate::settings::{threads, tiling};
use crate::tensor::{Element, HostElements, Tensor};
use half::{bf16, f16};
use rayon::prelude::*;

/// An element type kernels compute in float32: float32 itself, and the half formats
/// (widened to float32, rounded back to nearest even).
pub trait Float: Element {
    /// The value as float32.
    fn to_f32(self) -> f32;
    /// The nearest value of `Self` (ties to even).
    fn from_f32(value: f32) -> Self;
}

impl Float for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(value: f32) -> f32 {
        value
    }
}

impl Float for f16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> f16 {
        f16::from_f32(value)
    }
}

impl Float for bf16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16::to_f32(self)
    }
    #[inline(always)]
    fn from_f32(value: f32) -> bf16 {
        bf16::from_f32(value)
    }
}

/// The elements of `tensor` in row-major order: borrowed when contiguous, gathered when not
/// (into a block of the host allocator, counted against the memory limit).
pub fn read<T: Element>(tensor: &Tensor) -> Result<HostElements<'_, T>> {
    if T::DTYPE != tensor.dtype() {
        return Err(KernelError::Invalid(format!("a kernel read {} as {}", tensor.dtype(), T::DTYPE)));
    }
    Ok(tensor.host_elements::<T>()?)
}

/// The elements of an output to write (outputs are contiguous and owned by the launch).
///
/// # Safety
/// No other reference to the output's elements may be alive while the slice is used.
#[allow(clippy::mut_from_ref)]
pub unsafe fn write<T: Element>(tensor: &Tensor) -> Result<&mut [T]> {
    if T::DTYPE != tensor.dtype() || !tensor.is_contiguous() {
        return Err(KernelError::Invalid(format!(
            "a kernel wrote a {} {:?} output as contiguous {}",
            tensor.dtype(),
            tensor.shape(),
            T::DTYPE
        )));
    }
    if tensor.is_read_only() {
        return Err(KernelError::Invalid("a kernel was given a read-only output".into()));
    }
    let len = tensor.numel() as usize;
    if len == 0 {
        return Ok(&mut []);
    }
    // SAFETY: as in `read`, and the caller guarantees exclusivity.
    Ok(unsafe { std::slice::from_raw_parts_mut(tensor.data_ptr().cast::<T>(), len) })
}

/// Runs `body(start, piece)` over contiguous pieces of `out` on the pool (pieces of the
/// tiling table's `host_chunk_elements`; inline when one piece holds everything).
pub fn par_pieces<T: Send>(out: &mut [T], body: impl Fn(usize, &mut [T]) + Sync) {
    let chunk = tiling::tiling_table().host_chunk_elements.max(1);
    if out.len() <= chunk {
        body(0, out);
        return;
    }
    threads::install(|| out.par_chunks_mut(chunk).enumerate().for_each(|(i, piece)| body(i * chunk, piece)));
}

/// A raw pointer handed to the pool's threads (each thread touches its own elements).
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: the pointer is only used to reach disjoint elements from each thread.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

impl<T> SendPtr<T> {
    /// The pointer (a method, so closures capture the whole wrapper, not its field).
    fn get(self) -> *mut T {
        self.0
    }
}

/// Elements [`map_into`] maps at a time, through blocks on the stack.
const MAP_BLOCK: usize = 64;

/// Maps every element of `input` into the same position of `output` with `f`, on the
/// pool. `output` may be `input`'s own memory (a launch planned in place): every element is
/// read before the same element is written, through raw pointers, so the two never alias as
/// Rust references.
pub fn map_into<S: Element, D: Element>(input: &Tensor, output: &Tensor, f: impl Fn(S) -> D + Sync) -> Result<()> {
    if S::DTYPE != input.dtype()
        || D::DTYPE != output.dtype()
        || !output.is_contiguous()
        || input.numel() != output.numel()
    {
        return Err(KernelError::Invalid(format!(
            "map_into: {} {:?} into {} {:?}",
            input.dtype(),
            input.shape(),
            output.dtype(),
            output.shape()
        )));
    }
    let len = output.numel() as usize;
    let gathered;
    let source: *const S = if input.is_contiguous() {
        input.data_ptr().cast::<S>()
    } else {
        gathered = input.host_elements::<S>()?;
        gathered.as_ptr()
    };
    let (source, target) = (SendPtr(source as *mut S), SendPtr(output.data_ptr().cast::<D>()));
    let chunk = tiling::tiling_table().host_chunk_elements.max(1);
    let body = |start: usize| {
        let end = (start + chunk).min(len);
        // forced inline into with_simd's AVX2 function (a closure in another codegen unit
        // would be called there, compiled for the baseline)
        with_simd(
            #[inline(always)]
            || {
                // blocks copied in and out of the stack: the loop between sees no aliasing and
                // vectorizes, and every element is still read before it is written
                // SAFETY: every bit pattern, zero included, is a valid element (Element's contract).
                let (mut inputs, mut outputs) =
                    unsafe { ([std::mem::zeroed::<S>(); MAP_BLOCK], [std::mem::zeroed::<D>(); MAP_BLOCK]) };
                for first in (start..end).step_by(MAP_BLOCK) {
                    let n = MAP_BLOCK.min(end - first);
                    // SAFETY: first + n ≤ len elements of both buffers; this thread alone reads and
                    // then writes them; the stack blocks do not overlap the buffers.
                    unsafe { std::ptr::copy_nonoverlapping(source.get().add(first), inputs.as_mut_ptr(), n) };
                    // an indexed loop over the whole block: an iterator adaptor's fold is a
                    // function of its own, left out of line and compiled for the baseline (SSE2:
                    // a tenth of a MiniLM run went to gelu in four lanes)
                    for j in 0..MAP_BLOCK {
                        outputs[j] = f(inputs[j]);
                    }
                    unsafe { std::ptr::copy_nonoverlapping(outputs.as_ptr(), target.get().add(first), n) };
                }
            },
        )
    };
    if len <= chunk {
        body(0);
    } else {
        threads::install(|| (0..len.div_ceil(chunk)).into_par_iter().for_each(|piece| body(piece * chunk)));
    }
    Ok(())
}

/// Runs `work` compiled for AVX-512 where the CPU has it, else for AVX2 and FMA where it has
/// them, else for the baseline the crate is built for. The results are the same on every path:
/// Rust never contracts `a * b + c` into a fused multiply-add by itself, so only the vector
/// width changes.
#[inline(always)]
pub fn with_simd<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")]
        fn widest<R>(work: impl FnOnce() -> R) -> R {
            work()
        }
        #[target_feature(enable = "avx2,fma")]
        fn wide<R>(work: impl FnOnce() -> R) -> R {
            work()
        }
        if std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512vl")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512dq")
            && std::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has the features `widest` is compiled for.
            return unsafe { widest(work) };
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has the features `wide` is compiled for.
            return unsafe { wide(work) };
        }
    }
    work()
}
