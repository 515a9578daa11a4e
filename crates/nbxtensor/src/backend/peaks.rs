//! A device's peak rates, which pricing reads: FLOP/s per dtype of its vector units and of its
//! matrix unit, and its memory bandwidth. GPUs take them from their device file; the host
//! measures its own ([`crate::backend::cpu`]).

use crate::facts;
use crate::kernel::{KernelError, Result};
use std::collections::BTreeMap;

/// A device's peak rates: FLOP/s per dtype (vector units and matrix unit) and bytes/s.
#[derive(Clone, Debug, PartialEq)]
pub struct Peaks {
    /// Where the rates come from (a device file, or a measurement).
    pub source: String,
    /// FLOP/s of elementwise work, by dtype name.
    pub vector: BTreeMap<String, f64>,
    /// FLOP/s of matrix products, by dtype name.
    pub matrix: BTreeMap<String, f64>,
    /// Memory bandwidth, bytes/s.
    pub bandwidth: f64,
}

impl Peaks {
    /// The rates of a device file; a file without a bandwidth is refused by name.
    ///
    /// ```
    /// use nbxtensor::backend::Peaks;
    /// let h200 = Peaks::of_device("nvidia", "h200")?;
    /// assert!(h200.bandwidth > 4e12 && h200.matrix.contains_key("bfloat16"));
    /// # Ok::<(), nbxtensor::kernel::KernelError>(())
    /// ```
    pub fn of_device(vendor: &str, name: &str) -> Result<Peaks> {
        let file = facts::device_file(vendor, name).map_err(|e| KernelError::Invalid(e.to_string()))?;
        let bandwidth = file.memory.bandwidth_bytes_per_s.ok_or_else(|| {
            KernelError::Invalid(format!(
                "device {vendor}/{name} has no memory bandwidth in its file: it cannot be priced"
            ))
        })?;
        Ok(Peaks {
            source: format!("device file {vendor}/{name}"),
            vector: file.peak.vector.clone(),
            matrix: file.peak.matrix.clone(),
            bandwidth,
        })
    }
}
