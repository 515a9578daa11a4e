//! The error of the memory layer.

/// Why memory could not be had or used.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MemoryError {
    /// A request that would pass the memory limit.
    #[error(
        "{device}: allocating {asked} bytes with {in_use} bytes in use would pass the memory limit of {limit} bytes"
    )]
    OverLimit {
        /// The device asked.
        device: String,
        /// Bytes asked for.
        asked: u64,
        /// Bytes already in use on the device.
        in_use: u64,
        /// The limit in force.
        limit: u64,
    },
    /// A request past the address space (more than `isize::MAX` bytes, or a size class that
    /// does not fit 64 bits).
    #[error("{device}: {asked} bytes is more than an address space holds")]
    TooLarge {
        /// The device asked.
        device: String,
        /// Bytes asked for.
        asked: u64,
    },
    /// The system refused an allocation under the limit.
    #[error("{device}: the system refused {asked} bytes")]
    Refused {
        /// The device asked.
        device: String,
        /// Bytes asked for.
        asked: u64,
    },
    /// A device name or kind this build does not serve.
    #[error("{0}")]
    UnknownDevice(String),
    /// A byte range outside a block, an arena or a storage.
    #[error("{0}")]
    OutOfBounds(String),
    /// The host's memory could not be read to know the limit.
    #[error(transparent)]
    Settings(#[from] crate::settings::SettingsError),
}
