//! Whether a planned amount of memory can ever be had on a device: the check a plan passes
//! before anything is allocated.

use super::{Device, DeviceKind, MemoryError};
use crate::backend;

/// Refuses `bytes` (one planned block, `what` names it) over the limit in force on `device`:
/// the limit set, or the device's own memory when none is set (a GPU that is not present is
/// held to the limit set alone, so a dry run plans without it). The refusal is the same
/// [`MemoryError::OverLimit`] an allocation of that size would meet, raised before anything
/// is allocated.
///
/// ```
/// use nbxtensor::memory::{check_fits, Device};
/// check_fits(Device::CPU, 1 << 20, "a small arena")?;
/// let err = check_fits(Device::CPU, 2 << 50, "a 2 PiB arena").unwrap_err().to_string();
/// assert!(err.contains("a 2 PiB arena") && err.contains("memory limit"), "{err}");
/// # Ok::<(), nbxtensor::memory::MemoryError>(())
/// ```
pub fn check_fits(device: Device, bytes: u64, what: &str) -> Result<(), MemoryError> {
    let backend = backend::of(device);
    let (limit, in_use) = match backend.limit() {
        Ok(limit) => (limit, backend.in_use()),
        // a GPU plan made without the device (a dry run): only a limit set can refuse it
        Err(_) if device.kind != DeviceKind::Cpu => match crate::settings::memory_limit::limit() {
            Some(limit) => (limit, 0),
            None => return Ok(()),
        },
        Err(e) => return Err(e),
    };
    if bytes > limit {
        return Err(MemoryError::OverLimit { device: format!("{device} ({what})"), asked: bytes, in_use, limit });
    }
    Ok(())
}
