//! What every family's checks share: the backend under test ([`Target`]), tensors made from
//! reference elements and read back into them (by this suite's own codecs, not the library's
//! cast), launches bound from the backend's own launch table, views that are not contiguous,
//! and the capture/replay check.

use crate::reference::{decode, encode, Elem};
use nbxtensor::backend::{self, LaunchTable};
use nbxtensor::kernel::{Attrs, KernelError};
use nbxtensor::memory::{Device, DeviceKind};
use nbxtensor::ops::{self, spec};
use nbxtensor::program::{self, Executable, ProgramError};
use nbxtensor::{DType, Tensor};
use std::collections::BTreeSet;

/// A backend under test: its name and the device its tensors live on.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The backend's name, as its launch table gives it.
    pub name: &'static str,
    /// The device.
    pub device: Device,
    /// Whether the device's float32 arithmetic flushes subnormals to zero, operands and
    /// results (as WGSL allows; NVIDIA's Vulkan driver does): its float elementwise results are
    /// then also accepted as computed on flushed operands and flushed. Measured by the backend
    /// (`Gpu::flushes_subnormals`); nothing else is relaxed.
    pub flushes_subnormals: bool,
}

impl Target {
    /// The CPU backend (always present).
    pub fn cpu() -> Target {
        Target { name: "cpu", device: Device::CPU, flushes_subnormals: false }
    }

    /// `cuda:0`, or `None` after printing why `test` is skipped there.
    pub fn cuda(test: &str) -> Option<Target> {
        match nbxtensor::backend::cuda::memory::driver() {
            Ok(driver) if !driver.devices.is_empty() => Some(Target {
                name: "cuda",
                device: Device { kind: DeviceKind::Cuda, index: 0 },
                flushes_subnormals: false,
            }),
            Ok(_) => {
                eprintln!("{test}: skipped on cuda: the driver loaded but reports no device");
                None
            }
            Err(why) => {
                eprintln!("{test}: skipped on cuda: {why}");
                None
            }
        }
    }

    /// `vulkan:0` (the wgpu backend), or `None` after printing why `test` is skipped there.
    pub fn vulkan(test: &str) -> Option<Target> {
        use nbxtensor::backend::wgpu::{gpu, unavailable_reason, Api};
        match unavailable_reason(Api::Vulkan) {
            None => Some(Target {
                name: "wgpu",
                device: Device { kind: DeviceKind::Vulkan, index: 0 },
                flushes_subnormals: gpu(Api::Vulkan, 0).unwrap().flushes_subnormals().unwrap(),
            }),
            // CI installs lavapipe and sets NBX_REQUIRE_VULKAN: there a missing adapter fails
            Some(why) if std::env::var_os("NBX_REQUIRE_VULKAN").is_some() => {
                panic!("{test}: NBX_REQUIRE_VULKAN is set, but vulkan is absent: {why}")
            }
            Some(why) => {
                eprintln!("{test}: skipped on vulkan: {why}");
                None
            }
        }
    }

    /// The backend's launch table.
    pub fn table(&self) -> &'static LaunchTable {
        backend::of(self.device).launches()
    }

    /// Every (op, dtype) the table serves whose op belongs to spec family `family`.
    pub fn entries(&self, family: &str) -> Vec<(&'static str, DType)> {
        let mut entries = Vec::new();
        for (op, dtypes) in self.table().ops() {
            let def = spec::op(op).unwrap_or_else(|e| panic!("{}: the table lists {op}: {e}", self.name));
            if def.family == family {
                entries.extend(dtypes.into_iter().map(|d| (op, d)));
            }
        }
        entries
    }

    /// Whether the table serves `op` on `dtype`.
    pub fn has(&self, op: &str, dtype: DType) -> bool {
        self.table().has(op, dtype)
    }

    /// A contiguous tensor of `dtype` and `shape` on this device holding `values`.
    pub fn tensor(&self, dtype: DType, shape: &[i64], values: &[Elem]) -> Tensor {
        let count: i64 = shape.iter().product();
        assert_eq!(count as usize, values.len(), "{shape:?} takes {count} elements");
        let host = Tensor::from_bytes(dtype, shape, &encode(dtype, values)).unwrap();
        host.to(self.device).unwrap_or_else(|e| panic!("{}: moving a tensor there: {e}", self.name))
    }

    /// Runs `op` bound to `dtype` and `attrs` by this backend's table on `inputs`.
    pub fn run(&self, op: &str, dtype: DType, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>, KernelError> {
        let kernel = self.table().bind(op, dtype, attrs)?;
        ops::call_kernel(&kernel, inputs)
    }

    /// As [`Target::run`], output 0, panicking with the op, dtype and backend named.
    pub fn run1(&self, op: &str, dtype: DType, attrs: &Attrs, inputs: &[&Tensor]) -> Tensor {
        let out = self
            .run(op, dtype, attrs, inputs)
            .unwrap_or_else(|e| panic!("{op} on {dtype} ({} backend): {e}", self.name))
            .remove(0);
        assert_eq!(out.device(), self.device, "{op} on {dtype}: the output lives on the inputs' device");
        out
    }

    /// A label for messages: op, dtype, backend and case.
    pub fn what(&self, op: &str, dtype: DType, case: &str) -> String {
        format!("{op} on {dtype} ({} backend, {case})", self.name)
    }
}

/// The elements of `t` (any device, any layout), read back as reference elements.
pub fn read(t: &Tensor) -> Vec<Elem> {
    let bytes = t.to(Device::CPU).unwrap().to_bytes().unwrap();
    decode(t.dtype(), &bytes)
}

/// How a test input is laid out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Row-major without gaps.
    Contiguous,
    /// The last two dims swapped in memory (a transposed view).
    Transposed,
    /// Every other element of a wider last dim, from an offset, rows apart (a strided view).
    Strided,
    /// The first dim expanded from extent 1 (stride 0): every row the same.
    Broadcast,
}

/// Every layout.
pub const LAYOUTS: [Layout; 4] = [Layout::Contiguous, Layout::Transposed, Layout::Strided, Layout::Broadcast];

impl Target {
    /// A tensor of logical `shape` (at least 1-d) laid out as `layout`, with its logical
    /// elements taken from `values` (the broadcast layout repeats row 0 of them): returns the
    /// view and its logical elements in row-major order. Padding the view does not see holds
    /// `poison`.
    pub fn view(
        &self,
        dtype: DType,
        shape: &[i64],
        layout: Layout,
        values: &[Elem],
        poison: Elem,
    ) -> (Tensor, Vec<Elem>) {
        let raw: Vec<Vec<u8>> = values.iter().map(|v| encode(dtype, &[*v])).collect();
        let (view, logical) = self.view_raw(dtype, shape, layout, &raw, &encode(dtype, &[poison]));
        (view, logical.iter().map(|b| decode(dtype, b)[0]).collect())
    }

    /// As [`Target::view`], over raw element bytes (NaN payloads and all).
    pub fn view_raw(
        &self,
        dtype: DType,
        shape: &[i64],
        layout: Layout,
        values: &[Vec<u8>],
        poison: &[u8],
    ) -> (Tensor, Vec<Vec<u8>>) {
        let nd = shape.len();
        assert!(nd >= 1, "a view needs a dim");
        let count: usize = shape.iter().product::<i64>() as usize;
        assert_eq!(values.len(), count);
        let make = |shape: &[i64], elements: &[Vec<u8>]| {
            let host = Tensor::from_bytes(dtype, shape, &elements.concat()).unwrap();
            host.to(self.device).unwrap_or_else(|e| panic!("{}: moving a tensor there: {e}", self.name))
        };
        match layout {
            Layout::Contiguous => (make(shape, values), values.to_vec()),
            Layout::Transposed => {
                // memory holds the logical tensor with its last two dims swapped
                let (rows, cols) =
                    if nd >= 2 { (shape[nd - 2] as usize, shape[nd - 1] as usize) } else { (1, shape[0] as usize) };
                let mut stored_shape = shape.to_vec();
                if nd >= 2 {
                    stored_shape.swap(nd - 2, nd - 1);
                }
                let plane = rows * cols;
                let mut stored = values.to_vec();
                for p in 0..count / plane.max(1) {
                    for r in 0..rows {
                        for c in 0..cols {
                            stored[p * plane + c * rows + r] = values[p * plane + r * cols + c].clone();
                        }
                    }
                }
                let base = make(&stored_shape, &stored);
                let view = if nd >= 2 { base.transpose(-1, -2).unwrap() } else { base };
                (view, values.to_vec())
            }
            Layout::Strided => {
                // memory: each element of the last dim after a padding element, each row one
                // pair longer; the view selects the second of each pair (stride 2, offset 1)
                // and narrows the row (a gap between rows)
                let n = shape[nd - 1] as usize;
                let rows = count / n.max(1);
                let mut stored = vec![poison.to_vec(); rows * (n + 1) * 2];
                for r in 0..rows {
                    for c in 0..n {
                        stored[(r * (n + 1) + c) * 2 + 1] = values[r * n + c].clone();
                    }
                }
                let mut stored_shape = shape.to_vec();
                stored_shape[nd - 1] = n as i64 + 1;
                stored_shape.push(2);
                let base = make(&stored_shape, &stored);
                let view = base.select(-1, 1).unwrap().narrow(-1, 0, n as i64).unwrap();
                assert_eq!(view.shape(), shape);
                (view, values.to_vec())
            }
            Layout::Broadcast => {
                let inner: usize = shape[1..].iter().product::<i64>() as usize;
                let mut one = shape.to_vec();
                one[0] = 1;
                let base = make(&one, &values[..inner]);
                let view = base.expand(shape).unwrap();
                let logical = (0..count).map(|i| values[i % inner.max(1)].clone()).collect();
                (view, logical)
            }
        }
    }
}

/// The raw bytes of `t` (any device, any layout), gathered in row-major order.
pub fn read_bytes(t: &Tensor) -> Vec<u8> {
    t.to(Device::CPU).unwrap().to_bytes().unwrap()
}

/// Row-major index of each element of `out_shape` into a tensor of `in_shape` broadcast to it
/// (numpy's rules: trailing dims aligned, extent 1 repeated).
pub fn broadcast_index(out_shape: &[i64], in_shape: &[i64]) -> Vec<usize> {
    let count: i64 = out_shape.iter().product();
    let offset = out_shape.len() - in_shape.len();
    let mut strides = vec![0i64; out_shape.len()];
    let mut step = 1i64;
    for d in (0..in_shape.len()).rev() {
        strides[d + offset] = if in_shape[d] == 1 { 0 } else { step };
        step *= in_shape[d];
    }
    (0..count)
        .map(|mut i| {
            let mut at = 0i64;
            for d in (0..out_shape.len()).rev() {
                let e = out_shape[d];
                at += (i % e) * strides[d];
                i /= e;
            }
            at as usize
        })
        .collect()
}

/// numpy's broadcast shape of `shapes`.
pub fn broadcast_shape(shapes: &[&[i64]]) -> Vec<i64> {
    let nd = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    (0..nd)
        .map(|d| {
            let extents: Vec<i64> = shapes.iter().filter_map(|s| (d + s.len()).checked_sub(nd).map(|k| s[k])).collect();
            let big = extents.iter().copied().filter(|&e| e != 1).max().unwrap_or(1);
            assert!(extents.iter().all(|&e| e == 1 || e == big), "{shapes:?} do not broadcast");
            big
        })
        .collect()
}

/// The model a capture check traces: the launches of one op (or a few) on its inputs.
pub type Model<'a> = &'a dyn Fn(&[Tensor]) -> Result<Vec<Tensor>, KernelError>;

/// Traces `model` on `first`, plans it, allocates its arena, captures it on `first`, then
/// replays it on `fresh` and asserts every output is byte-equal to an eager run of `model` on
/// `fresh` (dtype and shape included).
pub fn assert_replay_matches(what: &str, first: &[Tensor], fresh: &[Tensor], model: Model<'_>) {
    let traced = program::trace(first, |t| model(t).map_err(ProgramError::from))
        .unwrap_or_else(|e| panic!("{what}: trace: {e}"));
    let plan = traced.plan().unwrap_or_else(|e| panic!("{what}: plan: {e}"));
    let executable = Executable::new(traced, plan).unwrap_or_else(|e| panic!("{what}: executable: {e}"));
    let refs: Vec<&Tensor> = first.iter().collect();
    let replay = executable.capture(&refs).unwrap_or_else(|e| panic!("{what}: capture: {e}"));
    let refs: Vec<&Tensor> = fresh.iter().collect();
    let replayed = replay.run(&refs).unwrap_or_else(|e| panic!("{what}: replay: {e}"));
    let eager = model(fresh).unwrap_or_else(|e| panic!("{what}: eager run: {e}"));
    assert_eq!(replayed.len(), eager.len(), "{what}: output count");
    for (k, (r, e)) in replayed.iter().zip(&eager).enumerate() {
        assert_eq!((r.dtype(), r.shape()), (e.dtype(), e.shape()), "{what}: output {k}'s dtype and shape");
        let (rb, eb) = (r.to(Device::CPU).unwrap().to_bytes().unwrap(), e.to(Device::CPU).unwrap().to_bytes().unwrap());
        if let Some(byte) = rb.iter().zip(&eb).position(|(a, b)| a != b) {
            panic!("{what}: output {k}: the replay differs from the eager run at byte {byte}");
        }
    }
}

/// Records which (op, dtype) pairs of a family a check exercised, and asserts at the end that
/// they are exactly the table's pairs of that family: an op or dtype added to the table without
/// a check fails here, by name.
pub struct Coverage {
    target: Target,
    family: &'static str,
    aspect: &'static str,
    only: Vec<&'static str>,
    seen: BTreeSet<(&'static str, DType)>,
}

impl Coverage {
    /// An empty record of `aspect` (values, replay …) over `family` on `target`.
    pub fn new(target: &Target, family: &'static str, aspect: &'static str) -> Coverage {
        Coverage { target: *target, family, aspect, only: Vec::new(), seen: BTreeSet::new() }
    }

    /// The same record, over the family's ops named by `only` calls alone.
    pub fn only(mut self, op: &'static str) -> Coverage {
        self.only.push(op);
        self
    }

    /// Marks `(op, dtype)` exercised.
    pub fn saw(&mut self, op: &'static str, dtype: DType) {
        self.seen.insert((op, dtype));
    }

    /// Asserts every (op, dtype) of the family in the table was exercised.
    pub fn assert_complete(self) {
        let wanted: BTreeSet<(&'static str, DType)> = self
            .target
            .entries(self.family)
            .into_iter()
            .filter(|(op, _)| self.only.is_empty() || self.only.contains(op))
            .collect();
        let missing: Vec<String> = wanted.difference(&self.seen).map(|(op, d)| format!("({op}, {d})")).collect();
        assert!(
            missing.is_empty(),
            "{} backend, family {}: no {} check ran for {}",
            self.target.name,
            self.family,
            self.aspect,
            missing.join(", ")
        );
    }
}

/// Asserts that `result` is an error whose message names every one of `words`.
pub fn assert_refused<T>(what: &str, result: Result<T, KernelError>, words: &[&str]) {
    match result {
        Ok(_) => panic!("{what}: accepted, the spec refuses it"),
        Err(e) => {
            let message = e.to_string();
            for word in words {
                assert!(message.contains(word), "{what}: the error does not name '{word}': {message}");
            }
        }
    }
}
