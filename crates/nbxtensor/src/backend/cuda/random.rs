//! Random draws on the GPU with the same bits as on the CPU: Philox4x32-10 words of a
//! generator's stream (`kernels/philox.cu`), and uniform float32 draws computed as the host
//! computes them. The generator's offset moves as a host draw would move it, so host and device
//! draws interleave in one stream.

use super::grid::{elementwise_grid, THREADS};
use super::{function, Args};
use crate::dtype::DType;
use crate::kernel::{KernelError, Result};
use crate::memory::Device;
use crate::random::{Generator, RandomError};
use crate::tensor::Tensor;

pub use super::source::PHILOX as SOURCE;

fn claimed(generator: &mut Generator, n: usize, per_element: u64) -> Result<(crate::random::Words, u64)> {
    generator.claim(n, per_element).map_err(|e: RandomError| KernelError::Invalid(e.to_string()))
}

/// The next `n` words of `generator`'s stream, as a uint32 tensor on `device`.
///
/// ```no_run
/// use nbxtensor::{backend::cuda::random_words, memory::Device, random::Generator};
/// let mut host = Generator::new(5);
/// let mut gpu = Generator::new(5);
/// let on_gpu = random_words(Device::parse("cuda")?, &mut gpu, 10)?;
/// let mut words = [0u32; 10];
/// host.words().fill(0, &mut words);
/// assert_eq!(on_gpu.to(Device::CPU)?.to_vec::<u32>()?, words);
/// # Ok::<(), nbxtensor::Error>(())
/// ```
pub fn random_words(device: Device, generator: &mut Generator, n: usize) -> Result<Tensor> {
    let out = Tensor::for_output(device, DType::Uint32, &[n as i64])?;
    let (words, start) = claimed(generator, n, 1)?;
    let f = function(device, &SOURCE, format_args!("philox_words"))?;
    let mut args = Args::new();
    args.i64(words.seed as i64).i64(words.stream as i64).i64(start as i64).ptr(out.data_ptr() as u64).i64(n as i64);
    f.launch(elementwise_grid(f.context(), n as i64), [THREADS, 1, 1], 0, &mut args)?;
    Ok(out)
}

/// `n` uniform float32 values in `[low, high)` on `device`: bit for bit
/// `generator.uniform_f32(n, low, high)` on the host.
pub fn random_uniform_f32(device: Device, generator: &mut Generator, n: usize, low: f32, high: f32) -> Result<Tensor> {
    crate::random::check_bounds(f64::from(low), f64::from(high)).map_err(|e| KernelError::Invalid(e.to_string()))?;
    let precision = DType::Float32.float_format().map_err(|e| KernelError::Invalid(e.to_string()))?.mantissa_bits + 1;
    let out = Tensor::for_output(device, DType::Float32, &[n as i64])?;
    let (words, start) = claimed(generator, n, 1)?;
    let f = function(device, &SOURCE, format_args!("philox_uniform_f32"))?;
    let mut args = Args::new();
    args.i64(words.seed as i64).i64(words.stream as i64).i64(start as i64);
    args.f32(low).f32(high - low).i32(precision as i32).f32((-(precision as f32)).exp2());
    args.ptr(out.data_ptr() as u64).i64(n as i64);
    f.launch(elementwise_grid(f.context(), n as i64), [THREADS, 1, 1], 0, &mut args)?;
    Ok(out)
}
