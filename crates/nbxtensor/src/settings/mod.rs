//! The settings layer: what the library reads of the machine by itself, and what an
//! application may set with plain data (`None` restores the default). Process-wide.
//!
//! - [`threads`]: the CPU pool (size measured, or set);
//! - [`work_split`]: inline or split, by thresholds measured once per kind of work;
//! - [`host_memory`]: the host's memory, bounded by a cgroup limit;
//! - [`memory_limit`]: the card size every allocator holds to;
//! - [`tiling`]: the tiling table (`data/tiling.yml`, or a table set whole);
//! - [`autotune_store`]: where proven kernel settings are kept;
//! - [`autotune`]: the proven settings themselves: a kernel's choice for a device and a shape
//!   class, measured once and kept in the store;
//! - [`launch_observer`]: a watcher that makes launches run dry;
//! - [`host`]: the services an application may pass in (device description, operand
//!   decisions, where GPU builds are cached).

pub mod autotune;
pub mod autotune_store;
pub mod host;
pub mod host_memory;
pub mod launch_observer;
pub mod memory_limit;
pub mod threads;
pub mod tiling;
pub mod work_split;

/// Why a setting was refused or a machine fact could not be read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// A value outside the setting's domain (zero threads, a zero limit, a bad table …).
    #[error("{0}")]
    Invalid(String),
    /// A machine file that could not be read or parsed.
    #[error("{0}")]
    Unreadable(String),
    /// An allocation over the memory limit, or one the host refused.
    #[error("{0}")]
    OverLimit(String),
    /// A directory the library must write to and cannot.
    #[error("{0}")]
    Unwritable(String),
    /// A candidate's measurement that failed or gave no time.
    #[error("{0}")]
    Measurement(String),
}

/// Serialises the unit tests that change process-wide settings, so they do not see each
/// other's values.
#[cfg(test)]
pub(crate) fn test_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
