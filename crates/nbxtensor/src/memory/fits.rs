//! Whether a planned amount of memory can ever be had on a device: the check a plan passes
//! before anything is allocated.

use super::cuda::cuda_allocator;
use super::{host_allocator, Device, DeviceKind, MemoryError};

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
    let (limit, in_use) = match device.kind {
        DeviceKind::Cpu => {
            let host = host_allocator();
            (host.limit()?, super::Allocator::in_use(host))
        }
        DeviceKind::Cuda => {
            match cuda_allocator(device.index).and_then(|c| Ok((c.limit()?, super::Allocator::in_use(c)))) {
                Ok(known) => known,
                // a plan made without the device (a dry run): only a limit set can refuse it
                Err(_) => match crate::settings::memory_limit::limit() {
                    Some(limit) => (limit, 0),
                    None => return Ok(()),
                },
            }
        }
    };
    if bytes > limit {
        return Err(MemoryError::OverLimit { device: format!("{device} ({what})"), asked: bytes, in_use, limit });
    }
    Ok(())
}
