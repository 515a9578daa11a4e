//! The memory limit a process holds to: an application's number of bytes, or the physical
//! memory of the device when none is set. Every allocator refuses what a card of that size
//! would refuse.

use super::{host_memory, SettingsError};
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

/// Refuses a host allocation of `bytes` over the limit in force (the setting, or the host's
/// memory as [`host_memory::memory_state`] reads it); `what` names the allocation.
pub fn check_host_bytes(bytes: u64, what: &str) -> Result<(), SettingsError> {
    let state = host_memory::memory_state()?;
    let limit = effective_limit(state.total);
    if bytes > limit {
        let whose = if limit < state.total { "the memory limit set" } else { "the host's memory" };
        return Err(SettingsError::OverLimit(format!("{what}: {bytes} bytes asked, over {whose} of {limit} bytes")));
    }
    Ok(())
}

/// `n` copies of `value` in a new vector, refused with an error (never an abort) over the
/// memory limit or when the host cannot give the bytes.
///
/// ```
/// use nbxtensor::settings::memory_limit::host_vec;
/// assert_eq!(host_vec(3, 7u8, "a test")?, vec![7, 7, 7]);
/// assert!(host_vec(usize::MAX / 2, 0u64, "a huge draw").unwrap_err().to_string().starts_with("a huge draw:"));
/// # Ok::<(), nbxtensor::settings::SettingsError>(())
/// ```
pub fn host_vec<T: Clone>(n: usize, value: T, what: &str) -> Result<Vec<T>, SettingsError> {
    let bytes = (n as u128) * (std::mem::size_of::<T>() as u128);
    check_host_bytes(u64::try_from(bytes).unwrap_or(u64::MAX), what)?;
    let mut values = Vec::new();
    values
        .try_reserve_exact(n)
        .map_err(|e| SettingsError::OverLimit(format!("{what}: {bytes} bytes could not be allocated: {e}")))?;
    values.resize(n, value);
    Ok(values)
}
