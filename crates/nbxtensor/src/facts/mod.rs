//! The facts layer: the tables compiled into the crate, parsed once, and the host CPU measured
//! at run time.
//!
//! A width, a code or a limit is written in exactly one of these tables and read from there
//! everywhere else. The tables are validated when the crate is built (`build.rs`) and again by
//! the tests, so reading them at run time cannot fail.

mod device_file;
mod devices;
mod dtype_table;
mod error;
mod host_cpu;
mod policy_table;

pub use device_file::{Compute, DeviceFile, FactValue, MatrixUnit, Memory, Peak, PEAK_DTYPES};
pub use devices::{
    arch_string, computes_float64, device_description, device_facts, device_file, device_names, devices, fact,
    recognise, shares_host_memory, vendors, HOST_CPU_NAME, HOST_CPU_VENDOR,
};
pub use dtype_table::{ChannelWord, DTypeEntry, DlpackType, FloatFormat, Group, Kind, Packed};
pub use error::{FactsError, Result};
pub use host_cpu::{host_cpu, CpuCache, HostCpu, CACHE_DIR, CPUINFO};
pub use policy_table::{FusedOps, OpClass, OpList, PolicyTable};

use std::sync::OnceLock;

/// The text of `data/dtypes.yml`, as compiled into the crate.
pub const DTYPES_YML: &str = include_str!("../../data/dtypes.yml");

/// The dtype table, in code order (entry `i` is the dtype whose code is `i`).
///
/// ```
/// let table = nbxtensor::facts::dtype_table();
/// assert_eq!(table[1].name, "bfloat16");
/// ```
pub fn dtype_table() -> &'static [DTypeEntry] {
    static TABLE: OnceLock<Vec<DTypeEntry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        dtype_table::parse_dtype_table(DTYPES_YML)
            .expect("dtypes.yml was validated by build.rs when this crate was compiled")
    })
}

/// The text of `data/policy.yml`, as compiled into the crate.
pub const POLICY_YML: &str = include_str!("../../data/policy.yml");

/// The op classes of a precision policy (PyTorch's CUDA autocast lists).
///
/// ```
/// use nbxtensor::facts::{policy_table, OpClass};
/// assert_eq!(policy_table().class_of("rsqrt"), Some(OpClass::Float32));
/// ```
pub fn policy_table() -> &'static PolicyTable {
    static TABLE: OnceLock<PolicyTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        policy_table::parse_policy_table(POLICY_YML)
            .expect("policy.yml is compiled in and checked by the crate's tests, so it parses here")
    })
}
