//! The error of the facts layer: a device or a fact that the files do not hold.

/// Why a device description could not be read. Each message lists what exists.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FactsError {
    /// A vendor with no directory of device files.
    #[error("unknown device vendor '{vendor}': the vendors are {known}")]
    UnknownVendor {
        /// The vendor as given.
        vendor: String,
        /// The known vendors, comma-separated.
        known: String,
    },
    /// A device name with no file under its vendor.
    #[error("unknown device '{name}' of vendor '{vendor}': its devices are {known}")]
    UnknownDevice {
        /// The vendor as given.
        vendor: String,
        /// The device file name as given.
        name: String,
        /// The vendor's devices, comma-separated.
        known: String,
    },
    /// A device name (as a driver prints it) that no file's `names` recognise.
    #[error("no device file recognises the device name '{name}': the known devices are {known}")]
    UnrecognisedName {
        /// The name as given.
        name: String,
        /// Every recognised name with its key, comma-separated.
        known: String,
    },
    /// A fact a device file does not hold (the vendor does not publish it).
    #[error("device '{device}' has no {fact} in its file (data/devices/{device}.yml)")]
    MissingFact {
        /// `vendor/name` of the device file.
        device: String,
        /// The fact asked for, as a dotted path (`memory.l2_cache_bytes`, `peak.matrix.float16`).
        fact: String,
    },
}

/// A result whose error is [`FactsError`].
pub type Result<T, E = FactsError> = std::result::Result<T, E>;
