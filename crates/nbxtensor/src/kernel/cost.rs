//! The cost declaration: outputs, workspace, scratch with lifetimes, bytes moved, flops.

use super::{KernelError, Result};
use crate::dtype::DType;
use crate::shape;

/// The shape and dtype of a tensor, without its data (outputs are contiguous).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorMeta {
    /// The dtype.
    pub dtype: DType,
    /// The extents.
    pub shape: Vec<i64>,
}

impl TensorMeta {
    /// A meta of `dtype` and `shape`.
    pub fn new(dtype: DType, shape: &[i64]) -> TensorMeta {
        TensorMeta { dtype, shape: shape.to_vec() }
    }

    /// The number of elements.
    pub fn numel(&self) -> Result<u64> {
        Ok(shape::numel(&self.shape).map_err(|e| KernelError::Invalid(e.to_string()))? as u64)
    }

    /// The bytes of a contiguous tensor of this meta.
    pub fn bytes(&self) -> Result<u64> {
        let itemsize = self.dtype.itemsize().map_err(|e| KernelError::Invalid(e.to_string()))? as u64;
        self.numel()?
            .checked_mul(itemsize)
            .ok_or_else(|| KernelError::Invalid(format!("{self:?} overflows 64-bit bytes")))
    }
}

/// How long a scratch buffer lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lifetime {
    /// This launch only (the same as workspace).
    Launch,
    /// From the program's first run to its end.
    Program,
    /// As long as the process (caches of prepared weights …).
    Persistent,
}

/// What a launch costs, declared before it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cost {
    /// The outputs the launch writes (contiguous).
    pub outputs: Vec<TensorMeta>,
    /// Bytes needed during the launch only.
    pub workspace: u64,
    /// Scratch buffers and how long each lives.
    pub scratch: Vec<(u64, Lifetime)>,
    /// Bytes read from memory.
    pub bytes_read: u64,
    /// Bytes written to memory.
    pub bytes_written: u64,
    /// Floating-point (or integer) operations.
    pub flops: u64,
    /// `(input, output)` pairs where the output may take over the input's memory (the
    /// kernel reads each element before it writes the same element).
    pub in_place: Vec<(usize, usize)>,
    /// Inputs the launch writes in place, with no output standing for them (state that
    /// outlives the launch: a KV cache). The launch writes only the elements it declares in
    /// `bytes_written`; in a program such an input must be a tensor the model holds, never an
    /// arena buffer, so that every run and replay updates the same bytes.
    pub updates: Vec<usize>,
}

impl Cost {
    /// A cost with these outputs, reading `bytes_read`, and `flops`; writes counted from the
    /// outputs; no workspace, scratch, in-place pair or updated input.
    pub fn simple(outputs: Vec<TensorMeta>, bytes_read: u64, flops: u64) -> Result<Cost> {
        let bytes_written = total_bytes(&outputs)?;
        Ok(Cost {
            outputs,
            workspace: 0,
            scratch: Vec::new(),
            bytes_read,
            bytes_written,
            flops,
            in_place: Vec::new(),
            updates: Vec::new(),
        })
    }
}

/// The bytes of `metas` together (each checked as [`TensorMeta::bytes`]), saturating at
/// `u64::MAX`: a declaration's traffic of broadcast inputs may count more bytes than 64 bits
/// hold (each is a view; the count is an estimate for pricing, never an allocation).
pub fn total_bytes(metas: &[TensorMeta]) -> Result<u64> {
    metas.iter().try_fold(0u64, |sum, m| Ok(sum.saturating_add(m.bytes()?)))
}

/// The product of `factors`, saturating at `u64::MAX` (flop counts of broadcast inputs).
///
/// ```
/// use nbxtensor::kernel::saturating_product;
/// assert_eq!(saturating_product(&[2, 3, 7]), 42);
/// assert_eq!(saturating_product(&[1 << 62, 7]), u64::MAX);
/// assert_eq!(saturating_product(&[u64::MAX, 0]), 0);
/// ```
pub fn saturating_product(factors: &[u64]) -> u64 {
    if factors.contains(&0) {
        return 0;
    }
    factors.iter().fold(1u64, |p, &f| p.saturating_mul(f))
}
