//! [`Generator`]: a seed, a stream number and an offset; every draw reads the next words of
//! its stream and advances the offset.

use super::draws::{self, Words};
use crate::dtype::DType;
use crate::settings::memory_limit::host_vec;
use crate::settings::SettingsError;
use half::{bf16, f16};

/// Why a draw was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RandomError {
    /// Bounds or parameters outside their domain (an empty range, a negative std …).
    #[error("{0}")]
    Invalid(String),
    /// A draw whose output does not fit under the memory limit.
    #[error(transparent)]
    Memory(#[from] SettingsError),
}

/// A seeded counter-based random stream (Philox4x32-10); see the module docs for the exact
/// mapping from `(seed, stream, offset)` to values.
///
/// ```
/// use nbxtensor::random::Generator;
/// let mut a = Generator::new(42);
/// let mut b = Generator::new(42);
/// assert_eq!(a.uniform_f32(5, 0.0, 1.0)?, b.uniform_f32(5, 0.0, 1.0)?);
/// assert_ne!(a.uniform_f32(5, 0.0, 1.0)?, Generator::new(42).spawn(1).uniform_f32(5, 0.0, 1.0)?);
/// # Ok::<(), nbxtensor::random::RandomError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    words: Words,
    offset: u64,
}

impl Generator {
    /// Stream 0 of `seed`, at offset 0.
    pub fn new(seed: u64) -> Generator {
        Generator { words: Words { seed, stream: 0 }, offset: 0 }
    }

    /// Stream `stream` of the same seed, at offset 0: independent of every other stream.
    pub fn spawn(&self, stream: u64) -> Generator {
        Generator { words: Words { seed: self.words.seed, stream }, offset: 0 }
    }

    /// The seed (the Philox key).
    pub fn seed(&self) -> u64 {
        self.words.seed
    }

    /// The stream number.
    pub fn stream(&self) -> u64 {
        self.words.stream
    }

    /// Words of the stream consumed so far (a multiple of 4).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Moves to a given word offset (rounded up to a block boundary, as draws start there).
    pub fn set_offset(&mut self, offset: u64) {
        self.offset = offset.next_multiple_of(4);
    }

    /// Reserves the words of a draw of `n` elements of `per_element` words; returns its start.
    /// The stream this generator draws from.
    pub fn words(&self) -> Words {
        self.words
    }

    /// Claims the words of a draw of `n` elements of `per_element` words each, as a draw on
    /// the host would (the offset moves to the next whole Philox block): the stream and the
    /// first word, for a device that computes the same draw.
    pub fn claim(&mut self, n: usize, per_element: u64) -> Result<(Words, u64), RandomError> {
        let start = self.take(n, per_element)?;
        Ok((self.words, start))
    }

    fn take(&mut self, n: usize, per_element: u64) -> Result<u64, RandomError> {
        let start = self.offset;
        let end = (n as u64)
            .checked_mul(per_element)
            .and_then(|words| words.checked_next_multiple_of(4))
            .and_then(|words| start.checked_add(words))
            .ok_or_else(|| RandomError::Invalid(format!("a draw of {n} elements passes the end of the stream")))?;
        self.offset = end;
        Ok(start)
    }

    /// `n` uniform float32 values in `[low, high)`.
    pub fn uniform_f32(&mut self, n: usize, low: f32, high: f32) -> Result<Vec<f32>, RandomError> {
        self.uniform_with_precision(n, low, high, DType::Float32)
    }

    /// `n` uniform float16 values in `[low, high]` (the affine map rounds to nearest).
    pub fn uniform_f16(&mut self, n: usize, low: f32, high: f32) -> Result<Vec<f16>, RandomError> {
        Ok(self.uniform_with_precision(n, low, high, DType::Float16)?.into_iter().map(f16::from_f32).collect())
    }

    /// `n` uniform bfloat16 values in `[low, high]` (the affine map rounds to nearest).
    pub fn uniform_bf16(&mut self, n: usize, low: f32, high: f32) -> Result<Vec<bf16>, RandomError> {
        Ok(self.uniform_with_precision(n, low, high, DType::Bfloat16)?.into_iter().map(bf16::from_f32).collect())
    }

    /// `n` uniform float64 values in `[low, high)`.
    pub fn uniform_f64(&mut self, n: usize, low: f64, high: f64) -> Result<Vec<f64>, RandomError> {
        check_bounds(low, high)?;
        let mut out = host_vec(n, 0.0, "a random draw")?;
        let start = self.take(n, 2)?;
        draws::fill_uniform_f64(self.words, start, low, high, &mut out);
        Ok(out)
    }

    fn uniform_with_precision(
        &mut self,
        n: usize,
        low: f32,
        high: f32,
        format: DType,
    ) -> Result<Vec<f32>, RandomError> {
        check_bounds(f64::from(low), f64::from(high))?;
        let precision =
            format.float_format().map(|f| f.mantissa_bits + 1).map_err(|e| RandomError::Invalid(e.to_string()))?;
        let mut out = host_vec(n, 0.0, "a random draw")?;
        let start = self.take(n, 1)?;
        draws::fill_uniform_f32(self.words, start, low, high, precision, &mut out);
        Ok(out)
    }

    /// `n` normal float64 values.
    pub fn normal_f64(&mut self, n: usize, mean: f64, std: f64) -> Result<Vec<f64>, RandomError> {
        check_normal(mean, std)?;
        let mut out = host_vec(n, 0.0, "a random draw")?;
        let start = self.take(n + n % 2, 1)?;
        draws::fill_normal_f64(self.words, start, mean, std, &mut out);
        Ok(out)
    }

    /// `n` normal values rounded to float32.
    pub fn normal_f32(&mut self, n: usize, mean: f64, std: f64) -> Result<Vec<f32>, RandomError> {
        check_normal(mean, std)?;
        let mut out = host_vec(n, 0.0, "a random draw")?;
        let start = self.take(n + n % 2, 1)?;
        draws::fill_normal_f32(self.words, start, mean, std, &mut out);
        Ok(out)
    }

    /// `n` normal values rounded to float16 (through float32).
    pub fn normal_f16(&mut self, n: usize, mean: f64, std: f64) -> Result<Vec<f16>, RandomError> {
        Ok(self.normal_f32(n, mean, std)?.into_iter().map(f16::from_f32).collect())
    }

    /// `n` normal values rounded to bfloat16 (through float32).
    pub fn normal_bf16(&mut self, n: usize, mean: f64, std: f64) -> Result<Vec<bf16>, RandomError> {
        Ok(self.normal_f32(n, mean, std)?.into_iter().map(bf16::from_f32).collect())
    }

    /// `n` uniform values of a float `dtype` (float32, float64, float16, bfloat16).
    pub fn uniform(&mut self, n: usize, low: f64, high: f64, dtype: DType) -> Result<FloatDraw, RandomError> {
        Ok(match dtype {
            DType::Float32 => FloatDraw::Float32(self.uniform_f32(n, low as f32, high as f32)?),
            DType::Float64 => FloatDraw::Float64(self.uniform_f64(n, low, high)?),
            DType::Float16 => FloatDraw::Float16(self.uniform_f16(n, low as f32, high as f32)?),
            DType::Bfloat16 => FloatDraw::Bfloat16(self.uniform_bf16(n, low as f32, high as f32)?),
            other => return Err(not_drawn("uniform", other)),
        })
    }

    /// `n` normal values of a float `dtype` (float32, float64, float16, bfloat16).
    pub fn normal(&mut self, n: usize, mean: f64, std: f64, dtype: DType) -> Result<FloatDraw, RandomError> {
        Ok(match dtype {
            DType::Float32 => FloatDraw::Float32(self.normal_f32(n, mean, std)?),
            DType::Float64 => FloatDraw::Float64(self.normal_f64(n, mean, std)?),
            DType::Float16 => FloatDraw::Float16(self.normal_f16(n, mean, std)?),
            DType::Bfloat16 => FloatDraw::Bfloat16(self.normal_bf16(n, mean, std)?),
            other => return Err(not_drawn("normal", other)),
        })
    }

    /// `n` integers in `[low, high)`.
    ///
    /// ```
    /// use nbxtensor::random::Generator;
    /// let dice = Generator::new(1).integers(1000, 1, 7)?;
    /// assert!(dice.iter().all(|d| (1..7).contains(d)));
    /// assert!(Generator::new(1).integers(3, 5, 5).is_err());
    /// # Ok::<(), nbxtensor::random::RandomError>(())
    /// ```
    pub fn integers(&mut self, n: usize, low: i64, high: i64) -> Result<Vec<i64>, RandomError> {
        if low >= high {
            return Err(RandomError::Invalid(format!("integers: the range [{low}, {high}) is empty")));
        }
        let mut out = host_vec(n, 0, "a random draw")?;
        let start = self.take(n, 2)?;
        draws::fill_integers(self.words, start, low, high, &mut out);
        Ok(out)
    }

    /// A random permutation of `0..n`.
    pub fn permutation(&mut self, n: usize) -> Result<Vec<i64>, RandomError> {
        let keyed = host_vec(n, (0, 0), "a random permutation")?;
        let start = self.take(n, 2)?;
        Ok(draws::permutation(self.words, start, keyed))
    }
}

/// The values of a float draw, in the dtype asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum FloatDraw {
    /// float32 values.
    Float32(Vec<f32>),
    /// float64 values.
    Float64(Vec<f64>),
    /// float16 values.
    Float16(Vec<f16>),
    /// bfloat16 values.
    Bfloat16(Vec<bf16>),
}

fn not_drawn(draw: &str, dtype: DType) -> RandomError {
    RandomError::Invalid(format!(
        "{draw}: dtype '{dtype}' is not drawn; draws give float32, float64, float16 and bfloat16"
    ))
}

/// Refuses bounds that are not a finite, non-empty range.
pub fn check_bounds(low: f64, high: f64) -> Result<(), RandomError> {
    if !(low.is_finite() && high.is_finite() && low < high) {
        return Err(RandomError::Invalid(format!("uniform: need finite low < high, got [{low}, {high})")));
    }
    Ok(())
}

fn check_normal(mean: f64, std: f64) -> Result<(), RandomError> {
    if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
        return Err(RandomError::Invalid(format!(
            "normal: need a finite mean and a finite std ≥ 0, got mean {mean}, std {std}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_advance_by_whole_blocks_and_draws_do_not_overlap() {
        let mut g = Generator::new(9);
        let a = g.uniform_f32(3, 0.0, 1.0).unwrap();
        assert_eq!(g.offset(), 4);
        let b = g.uniform_f32(3, 0.0, 1.0).unwrap();
        assert_eq!(g.offset(), 8);
        let mut together = Generator::new(9);
        let both = together.uniform_f32(8, 0.0, 1.0).unwrap();
        assert_eq!(a[..], both[..3]);
        assert_eq!(b[..], both[4..7]);
        g.set_offset(0);
        assert_eq!(g.uniform_f32(3, 0.0, 1.0).unwrap(), a);
    }

    #[test]
    fn moments_of_large_draws_are_within_bounds() {
        let n = 1_000_000;
        let u = Generator::new(3).uniform_f64(n, 0.0, 1.0).unwrap();
        let mean = u.iter().sum::<f64>() / n as f64;
        let var = u.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // standard errors: 1/sqrt(12 n) ≈ 2.9e-4 for the mean, ≈ 8.9e-5 for the variance
        assert!((mean - 0.5).abs() < 5.0 * 2.9e-4, "uniform mean {mean}");
        assert!((var - 1.0 / 12.0).abs() < 5.0 * 8.9e-5, "uniform variance {var}");
        let z = Generator::new(3).normal_f64(n, 2.0, 3.0).unwrap();
        let mean = z.iter().sum::<f64>() / n as f64;
        let var = z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // standard errors: 3/sqrt(n) = 3e-3 for the mean, 9*sqrt(2/n) ≈ 1.27e-2 for the variance
        assert!((mean - 2.0).abs() < 5.0 * 3e-3, "normal mean {mean}");
        assert!((var - 9.0).abs() < 5.0 * 1.27e-2, "normal variance {var}");
    }

    #[test]
    fn half_precision_uniforms_use_the_formats_significand() {
        let values = Generator::new(5).uniform_bf16(10_000, 0.0, 1.0).unwrap();
        // 8 significant bits: every value is a multiple of 2^-8
        assert!(values.iter().all(|v| (v.to_f32() * 256.0).fract() == 0.0 && v.to_f32() < 1.0));
        let values = Generator::new(5).uniform_f16(10_000, 0.0, 1.0).unwrap();
        assert!(values.iter().all(|v| (v.to_f32() * 2048.0).fract() == 0.0 && v.to_f32() < 1.0));
    }

    #[test]
    fn bad_parameters_are_refused_by_name() {
        let mut g = Generator::new(0);
        assert!(g.uniform_f32(1, 1.0, 1.0).unwrap_err().to_string().contains("low < high"));
        assert!(g.uniform_f64(1, 0.0, f64::INFINITY).is_err());
        assert!(g.normal_f32(1, 0.0, -1.0).unwrap_err().to_string().contains("std"));
        assert!(g.integers(usize::MAX, 0, 2).is_err());
        assert_eq!(g.offset(), 0, "a refused draw consumes nothing");
    }
}
