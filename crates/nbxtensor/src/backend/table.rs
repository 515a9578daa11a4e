//! The capability table of a backend: op × dtype → the constructor of a kernel.

use crate::dtype::DType;
use crate::kernel::{Attrs, Kernel, KernelError};
use std::collections::BTreeMap;
use std::fmt;

/// Builds a kernel for an op on a dtype, with the call's attributes (refusing bad ones by
/// name).
pub type KernelFactory = fn(DType, &Attrs) -> Result<Box<dyn Kernel>, KernelError>;

/// Which kernel serves each (op, dtype) of one backend.
pub struct CapabilityTable {
    backend: &'static str,
    entries: BTreeMap<(String, DType), KernelFactory>,
}

impl CapabilityTable {
    /// An empty table of `backend`.
    pub fn new(backend: &'static str) -> CapabilityTable {
        CapabilityTable { backend, entries: BTreeMap::new() }
    }

    /// Registers `factory` for `op` on each of `dtypes`. Registering an entry twice is a
    /// programming error the tests catch (the first registration would be lost).
    pub fn register(&mut self, op: &str, dtypes: &[DType], factory: KernelFactory) {
        for &dtype in dtypes {
            let previous = self.entries.insert((op.to_string(), dtype), factory);
            assert!(previous.is_none(), "{}: ({op}, {dtype}) registered twice", self.backend);
        }
    }

    /// The kernel for `op` on `dtype` with `attrs`; a missing entry names op, dtype and backend.
    pub fn kernel(&self, op: &str, dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>, KernelError> {
        let factory = self.entries.get(&(op.to_string(), dtype)).ok_or_else(|| KernelError::Missing {
            op: op.to_string(),
            dtype: dtype.name().to_string(),
            backend: self.backend.to_string(),
        })?;
        factory(dtype, attrs)
    }

    /// Whether the table serves `op` on `dtype`.
    pub fn has(&self, op: &str, dtype: DType) -> bool {
        self.entries.contains_key(&(op.to_string(), dtype))
    }

    /// Every op the table serves, each with its dtypes.
    pub fn ops(&self) -> BTreeMap<&str, Vec<DType>> {
        let mut ops: BTreeMap<&str, Vec<DType>> = BTreeMap::new();
        for (op, dtype) in self.entries.keys() {
            ops.entry(op.as_str()).or_default().push(*dtype);
        }
        ops
    }
}

impl fmt::Display for CapabilityTable {
    /// One line per op: the op and the dtypes it serves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} backend: {} ops", self.backend, self.ops().len())?;
        for (op, dtypes) in self.ops() {
            let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
            writeln!(f, "  {op:<16} {}", names.join(" "))?;
        }
        Ok(())
    }
}
