//! A backend's launch table: (op, dtype) → the launch of a bound [`Spec`], and optionally the
//! backend's own workspace for it. The op's meaning (its checks and cost) is the spec's; the
//! table holds only how this backend runs it.

use crate::dtype::DType;
use crate::kernel::{Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::memory::Device;
use crate::ops::spec::{self, Spec};
use crate::tensor::Tensor;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// How a backend runs a bound spec on buffers of its declared sizes.
type LaunchFn = Box<dyn Fn(&dyn Spec, Launch<'_>) -> Result<()> + Send + Sync>;

/// The workspace a backend needs for a bound spec on inputs of these metas (in place of the
/// spec's own declaration).
type WorkspaceFn = Box<dyn Fn(&dyn Spec, &[TensorMeta]) -> Result<u64> + Send + Sync>;

/// The first input a backend's launch of a bound spec cannot read in its layout.
type LayoutFn = Box<dyn Fn(&dyn Spec, &[&Tensor]) -> Option<usize> + Send + Sync>;

/// The autotune key of a backend's launch of a bound spec on inputs of these metas on a
/// device, with whether the store holds its proven choice (`None`: the launch tunes nothing).
type TuningFn = Box<dyn Fn(&dyn Spec, &[TensorMeta], Device) -> Option<(String, bool)> + Send + Sync>;

/// A backend's launch of the specs of one family: a function (or a closure that wraps one).
pub trait Launcher<S>: Fn(&S, Launch<'_>) -> Result<()> + Clone + Send + Sync + 'static {}

impl<S, F: Fn(&S, Launch<'_>) -> Result<()> + Clone + Send + Sync + 'static> Launcher<S> for F {}

/// One entry of a launch table.
pub struct Entry {
    launch: LaunchFn,
    workspace: Option<WorkspaceFn>,
    layout: Option<LayoutFn>,
    tuning: Option<TuningFn>,
}

/// Which launch serves each (op, dtype) of one backend.
pub struct LaunchTable {
    backend: &'static str,
    entries: HashMap<(&'static str, DType), Entry>,
}

impl LaunchTable {
    /// An empty table of `backend`.
    pub fn new(backend: &'static str) -> LaunchTable {
        LaunchTable { backend, entries: HashMap::new() }
    }

    /// The backend's name.
    pub fn backend(&self) -> &'static str {
        self.backend
    }

    /// Registers `launch` for `op` on each of `dtypes`, its spec the family's struct `S`.
    /// Registering an op the catalogue lacks, a dtype the op is not defined on, or an entry
    /// twice is a programming error the tests catch.
    pub fn register<S: Spec>(&mut self, op: &'static str, dtypes: &[DType], launch: impl Launcher<S>) {
        self.insert(op, dtypes, || Entry {
            launch: Self::typed(launch.clone()),
            workspace: None,
            layout: None,
            tuning: None,
        });
    }

    /// As [`LaunchTable::register`], with the backend's own workspace for the op.
    pub fn register_with_workspace<S: Spec>(
        &mut self,
        op: &'static str,
        dtypes: &[DType],
        launch: impl Launcher<S>,
        workspace: fn(&S, &[TensorMeta]) -> Result<u64>,
    ) {
        self.insert(op, dtypes, || Entry {
            launch: Self::typed(launch.clone()),
            workspace: Some(Box::new(move |spec: &dyn Spec, inputs: &[TensorMeta]| {
                workspace(spec.downcast::<S>()?, inputs)
            })),
            layout: None,
            tuning: None,
        });
    }

    /// Says which inputs the launches of `op` (already registered on `dtypes`) cannot read in
    /// their layout: `unreadable` gives the first such input, and the op call copies it to a
    /// contiguous tensor first ([`Kernel::unreadable`]).
    pub fn reads_only<S: Spec>(
        &mut self,
        op: &'static str,
        dtypes: &[DType],
        unreadable: fn(&S, &[&Tensor]) -> Option<usize>,
    ) {
        for &dtype in dtypes {
            self.registered(op, dtype).layout = Some(Box::new(move |spec: &dyn Spec, inputs: &[&Tensor]| {
                spec.downcast::<S>().ok().and_then(|s| unreadable(s, inputs))
            }));
        }
    }

    /// Says how the launches of `op` (already registered on `dtypes`) are tuned: `tuning`
    /// gives a launch's autotune key and whether its choice is proven, what a dry run records
    /// ([`Kernel::tuning`]).
    pub fn tunes<S: Spec>(
        &mut self,
        op: &'static str,
        dtypes: &[DType],
        tuning: fn(&S, &[TensorMeta], Device) -> Option<(String, bool)>,
    ) {
        for &dtype in dtypes {
            self.registered(op, dtype).tuning =
                Some(Box::new(move |spec: &dyn Spec, inputs: &[TensorMeta], device: Device| {
                    tuning(spec.downcast::<S>().ok()?, inputs, device)
                }));
        }
    }

    /// The entry of (op, dtype), registered before (a programming error the tests catch).
    fn registered(&mut self, op: &'static str, dtype: DType) -> &mut Entry {
        let backend = self.backend;
        self.entries.get_mut(&(op, dtype)).unwrap_or_else(|| panic!("{backend}: ({op}, {dtype}) is not registered"))
    }

    fn typed<S: Spec>(launch: impl Launcher<S>) -> LaunchFn {
        Box::new(move |spec: &dyn Spec, buffers: Launch<'_>| launch(spec.downcast::<S>()?, buffers))
    }

    fn insert(&mut self, op: &'static str, dtypes: &[DType], entry: impl Fn() -> Entry) {
        let def = spec::op(op).unwrap_or_else(|e| panic!("{}: {e}", self.backend));
        let defined = def.dtypes();
        for &dtype in dtypes {
            assert!(defined.contains(&dtype), "{}: {op} is not defined on {dtype}", self.backend);
            let previous = self.entries.insert((def.name, dtype), entry());
            assert!(previous.is_none(), "{}: ({op}, {dtype}) registered twice", self.backend);
        }
    }

    /// The kernel running `spec` on this backend; a missing entry names op, dtype and backend.
    pub fn kernel(&'static self, spec: Arc<dyn Spec>) -> Result<Arc<dyn Kernel>> {
        let entry = self.entries.get(&(spec.op(), spec.dtype())).ok_or_else(|| KernelError::Missing {
            op: spec.op().to_string(),
            dtype: spec.dtype().name().to_string(),
            backend: self.backend.to_string(),
        })?;
        Ok(Arc::new(BackendKernel { spec, entry }))
    }

    /// The kernel running `op` bound to `dtype` and `attrs` (see [`spec::bind`]) on this backend.
    pub fn bind(&'static self, op: &str, dtype: DType, attrs: &crate::kernel::Attrs) -> Result<Arc<dyn Kernel>> {
        self.kernel(spec::bind(op, dtype, attrs)?)
    }

    /// Whether the table serves `op` on `dtype`.
    pub fn has(&self, op: &str, dtype: DType) -> bool {
        self.entries.keys().any(|(o, d)| *o == op && *d == dtype)
    }

    /// Every op the table serves, each with its dtypes (in the dtype table's order).
    pub fn ops(&self) -> BTreeMap<&'static str, Vec<DType>> {
        let mut ops: BTreeMap<&'static str, Vec<DType>> = BTreeMap::new();
        for (op, dtype) in self.entries.keys() {
            ops.entry(*op).or_default().push(*dtype);
        }
        ops.values_mut().for_each(|dtypes| dtypes.sort());
        ops
    }
}

impl fmt::Display for LaunchTable {
    /// One line per op: the op and the dtypes it serves.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{} backend: {} ops", self.backend, self.ops().len())?;
        for (op, dtypes) in self.ops() {
            let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
            writeln!(f, "  {op:<20} {}", names.join(" "))?;
        }
        Ok(())
    }
}

/// A spec bound to a backend's launch: what op calls, programs and observers hold.
struct BackendKernel {
    spec: Arc<dyn Spec>,
    entry: &'static Entry,
}

impl Kernel for BackendKernel {
    fn key(&self) -> String {
        self.spec.key()
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let mut cost = self.spec.declare(inputs)?;
        if let Some(workspace) = &self.entry.workspace {
            cost.workspace = workspace(&*self.spec, inputs)?;
        }
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        (self.entry.launch)(&*self.spec, launch)
    }

    fn uses_matrix_unit(&self) -> bool {
        self.spec.uses_matrix_unit()
    }

    fn spec(&self) -> Option<&dyn Spec> {
        Some(&*self.spec)
    }

    fn tuning(&self, inputs: &[TensorMeta], device: Device) -> Option<(String, bool)> {
        (self.entry.tuning.as_ref()?)(&*self.spec, inputs, device)
    }

    fn unreadable(&self, inputs: &[&Tensor]) -> Option<usize> {
        let layout = self.entry.layout.as_ref()?;
        layout(&*self.spec, inputs).filter(|&i| inputs.get(i).is_some_and(|t| !t.is_contiguous()))
    }
}
