//! The memory limit a process holds to: an application's number of bytes, or the physical
//! memory of the device when none is set. Every allocator refuses what a card of that size
//! would refuse.

use super::SettingsError;
use std::sync::atomic::{AtomicU64, Ordering};

/// 0 stands for "no limit set".
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Holds every device to a card of `bytes`; `None` goes back to the physical memory.
///
/// ```
/// use nbxtensor::settings::memory_limit::{limit, set_limit};
/// set_limit(Some(8 << 30))?;
/// assert_eq!(limit(), Some(8 << 30));
/// set_limit(None)?;
/// assert_eq!(limit(), None);
/// assert!(set_limit(Some(0)).is_err());
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn set_limit(bytes: Option<u64>) -> Result<(), SettingsError> {
    match bytes {
        Some(0) => Err(SettingsError::Invalid(
            "memory limit: 0 bytes leaves nothing to allocate; give a positive number of bytes or None".into(),
        )),
        Some(bytes) => {
            LIMIT.store(bytes, Ordering::SeqCst);
            Ok(())
        }
        None => {
            LIMIT.store(0, Ordering::SeqCst);
            Ok(())
        }
    }
}

/// The limit an application set, or `None` (the physical memory is the limit).
pub fn limit() -> Option<u64> {
    match LIMIT.load(Ordering::SeqCst) {
        0 => None,
        bytes => Some(bytes),
    }
}

/// The limit for a device whose physical memory is `physical` bytes: the smaller of the two.
pub fn effective_limit(physical: u64) -> u64 {
    limit().map_or(physical, |set| set.min(physical))
}
