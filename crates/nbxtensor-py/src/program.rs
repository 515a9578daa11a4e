//! `nbxtensor.program`: trace a Python model function into a program, plan it, price it,
//! run it in one arena, capture it and replay it verified.

use crate::errors::{guard, to_py};
use crate::tensor::Tensor;
use nbxtensor::backend::Peaks;
use nbxtensor::program::{
    self, Executable as CoreExecutable, Program as CoreProgram, ProgramError, Replay as CoreReplay,
};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Mutex;

/// The tensors a model returned: one tensor, or a tuple or list of them.
fn returned(value: &Bound<'_, PyAny>) -> PyResult<Vec<nbxtensor::tensor::Tensor>> {
    if let Ok(tensor) = value.cast::<Tensor>() {
        return Ok(vec![tensor.get().inner.clone()]);
    }
    let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = value.cast::<PyTuple>() {
        t.iter().collect()
    } else if let Ok(l) = value.cast::<PyList>() {
        l.iter().collect()
    } else {
        return Err(PyValueError::new_err("trace: the model must return a Tensor, or a tuple or list of Tensors"));
    };
    items
        .iter()
        .map(|item| {
            item.cast::<Tensor>()
                .map(|t| t.get().inner.clone())
                .map_err(|_| PyValueError::new_err("trace: the model returned something other than a Tensor"))
        })
        .collect()
}

/// A traced model: launches over symbolic buffers.
#[pyclass(module = "nbxtensor.program", name = "Program", frozen)]
struct Program {
    inner: CoreProgram,
}

/// A program's memory plan.
#[pyclass(module = "nbxtensor.program", name = "Plan", frozen)]
struct Plan {
    inner: nbxtensor::program::ProgramPlan,
}

/// A planned program with its arena allocated. Shared between threads, its runs take turns
/// (each thread waits for its turn with the interpreter released); a capture waits for the
/// run in progress, and after it every run is refused (run the Replay).
#[pyclass(module = "nbxtensor.program", name = "Executable", frozen)]
struct Executable {
    inner: Mutex<Option<CoreExecutable>>,
}

/// A captured program, verified byte-equal to an eager run. Shared between threads, its
/// replays take turns (they share one arena).
#[pyclass(module = "nbxtensor.program", name = "Replay", frozen)]
struct Replay {
    inner: CoreReplay,
}

/// What a program costs before it runs (`Program.price()`): flops, bytes, memory and the
/// predicted seconds on a device's peak rates.
#[pyclass(module = "nbxtensor.program", name = "Price", frozen)]
struct Price {
    inner: program::Price,
    source: String,
}

#[pymethods]
impl Price {
    /// The predicted time in seconds: each launch's roofline (the longer of its flops at the
    /// dtype's peak and its bytes at the bandwidth), added.
    #[getter]
    fn seconds(&self) -> f64 {
        self.inner.seconds
    }

    /// Flops of every launch.
    #[getter]
    fn flops(&self) -> u64 {
        self.inner.flops
    }

    /// Bytes read and written by every launch.
    #[getter]
    fn bytes(&self) -> u64 {
        self.inner.bytes
    }

    /// Launches.
    #[getter]
    fn launches(&self) -> usize {
        self.inner.launches
    }

    /// The plan's arena in bytes (its peak memory, workspace included).
    #[getter]
    fn arena_bytes(&self) -> u64 {
        self.inner.arena_bytes
    }

    /// The bytes the host allocator takes for that arena: what a run allocates.
    #[getter]
    fn allocated_bytes(&self) -> u64 {
        self.inner.allocated_bytes
    }

    /// The plan's lower bound (the most bytes alive at one launch).
    #[getter]
    fn lower_bound(&self) -> u64 {
        self.inner.lower_bound
    }

    /// Where the peak rates came from (a device file, or the host CPU measured).
    #[getter]
    fn source(&self) -> &str {
        &self.source
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let p = &self.inner;
        // the seconds and the source as Python writes them
        let seconds = pyo3::types::PyFloat::new(py, p.seconds).repr()?;
        let source = pyo3::types::PyString::new(py, &self.source).repr()?;
        Ok(format!(
            "Price(seconds={seconds}, flops={}, bytes={}, launches={}, arena_bytes={}, allocated_bytes={}, lower_bound={}, source={source})",
            p.flops, p.bytes, p.launches, p.arena_bytes, p.allocated_bytes, p.lower_bound
        ))
    }
}

/// `dtype[d0, d1]`, as the reprs write a buffer.
fn meta(dtype: nbxtensor::DType, shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("{}[{}]", dtype.name(), dims.join(", "))
}

/// The peak rates `Program.price` uses: a device file `"vendor/name"`, else those of the
/// program's device as its backend gives them (the host CPU measures its own; a GPU reads the
/// device file of the model found there).
fn peaks(py: Python<'_>, program: &CoreProgram, device_file: Option<&str>) -> PyResult<Peaks> {
    match device_file {
        Some(spelling) => {
            let (vendor, name) = spelling.split_once('/').ok_or_else(|| {
                PyValueError::new_err(format!(
                    "price: device_file is 'VENDOR/NAME' (such as 'nvidia/h200'), given '{spelling}'"
                ))
            })?;
            Peaks::of_device(vendor, name).map_err(to_py)
        }
        None => {
            let device = program.device;
            py.detach(move || nbxtensor::backend::of(device).peaks()).map_err(to_py)
        }
    }
}

fn cores(inputs: &Bound<'_, PyTuple>) -> PyResult<Vec<nbxtensor::tensor::Tensor>> {
    inputs
        .iter()
        .map(|t| {
            t.cast::<Tensor>()
                .map(|t| t.get().inner.clone())
                .map_err(|_| PyValueError::new_err("inputs must be Tensors"))
        })
        .collect()
}

/// Runs `model(*inputs)` with every op recorded instead of launched, and returns the
/// program it formed; tensors the model uses that are not inputs (weights) are constants.
#[pyfunction]
#[pyo3(signature = (model, *inputs))]
fn trace(py: Python<'_>, model: &Bound<'_, PyAny>, inputs: &Bound<'_, PyTuple>) -> PyResult<Program> {
    let inputs = cores(inputs)?;
    let mut failure: Option<PyErr> = None;
    let traced = program::trace(&inputs, |stand_ins| {
        let args = PyTuple::new(py, stand_ins.iter().map(|t| Tensor::wrap(t.clone())))
            .and_then(|args| model.call1(args))
            .and_then(|value| returned(&value));
        args.map_err(|e| {
            let message = e.to_string();
            failure = Some(e);
            ProgramError::Invalid(message)
        })
    });
    match (traced, failure) {
        (Ok(inner), _) => Ok(Program { inner }),
        (Err(_), Some(error)) => Err(error),
        (Err(error), None) => Err(to_py(error)),
    }
}

#[pymethods]
impl Program {
    /// The launch keys in order (what a dry run lists).
    fn keys(&self) -> Vec<String> {
        self.inner.keys()
    }

    /// The number of launches.
    fn __len__(&self) -> usize {
        self.inner.steps.len()
    }

    /// Flops of every launch, added.
    fn flops(&self) -> u64 {
        self.inner.flops()
    }

    /// Bytes read and written by every launch, added.
    fn bytes_moved(&self) -> u64 {
        self.inner.bytes_moved()
    }

    /// The memory plan (refused before anything is allocated when it passes the memory limit).
    fn plan(&self) -> PyResult<Plan> {
        guard(|| self.inner.plan().map(|inner| Plan { inner }).map_err(to_py))
    }

    /// Plans the program and allocates its arena (one allocation).
    fn executable(&self) -> PyResult<Executable> {
        guard(|| {
            let plan = self.inner.plan().map_err(to_py)?;
            let exec = CoreExecutable::new(self.inner.clone(), plan).map_err(to_py)?;
            Ok(Executable { inner: Mutex::new(Some(exec)) })
        })
    }

    /// The price before anything runs (what `nbx price` prints): on the peak rates of the
    /// device file `device_file` (`"nvidia/h200"`), else on the host CPU's, measured once per
    /// process. A launch of a dtype the rates lack is refused by name.
    #[pyo3(signature = (device_file = None))]
    fn price(&self, py: Python<'_>, device_file: Option<&str>) -> PyResult<Price> {
        let peaks = peaks(py, &self.inner, device_file)?;
        let inner = self.inner.price(&peaks).map_err(to_py)?;
        Ok(Price { inner, source: peaks.source })
    }

    fn __repr__(&self) -> String {
        let p = &self.inner;
        let inputs: Vec<String> = p.inputs.iter().map(|&id| meta(p.buffers[id].dtype, &p.buffers[id].shape)).collect();
        let outputs: Vec<String> = p.outputs.iter().map(|o| meta(o.dtype, &o.shape)).collect();
        format!(
            "Program(launches={}, device='{}', inputs=[{}], outputs=[{}], flops={}, bytes_moved={})",
            p.steps.len(),
            p.device,
            inputs.join(", "),
            outputs.join(", "),
            p.flops(),
            p.bytes_moved()
        )
    }
}

#[pymethods]
impl Plan {
    /// The arena's bytes: the program's peak memory, workspace included.
    #[getter]
    fn arena_bytes(&self) -> u64 {
        self.inner.arena_bytes()
    }

    /// The most bytes alive at one launch: no placement needs less.
    #[getter]
    fn lower_bound(&self) -> u64 {
        self.inner.plan.lower_bound
    }

    /// arena / lower bound.
    #[getter]
    fn ratio(&self) -> f64 {
        self.inner.plan.ratio()
    }

    /// The report: arena, bound, ratio, one line per buffer.
    fn report(&self) -> String {
        self.inner.report()
    }

    /// The plan as an SVG picture (time across, address up, one rectangle per buffer).
    #[pyo3(signature = (title = "memory plan"))]
    fn svg(&self, title: &str) -> String {
        self.inner.svg(title)
    }

    fn __repr__(&self) -> String {
        format!(
            "Plan(arena_bytes={}, lower_bound={}, ratio={:.4})",
            self.inner.arena_bytes(),
            self.inner.plan.lower_bound,
            self.inner.plan.ratio()
        )
    }
}

fn outputs(tensors: Vec<nbxtensor::tensor::Tensor>) -> Vec<Tensor> {
    tensors.into_iter().map(Tensor::wrap).collect()
}

#[pymethods]
impl Executable {
    /// Runs the program on new inputs (the traced dtypes and shapes); returns copies of its outputs.
    #[pyo3(signature = (*inputs))]
    fn run(&self, py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Vec<Tensor>> {
        let inputs = cores(inputs)?;
        let refs: Vec<&nbxtensor::tensor::Tensor> = inputs.iter().collect();
        // the interpreter is released before the lock is taken: a thread waiting for its turn
        // never holds what the thread running needs to finish
        py.detach(|| {
            guard(|| {
                let held = self.inner.lock().unwrap_or_else(|e| e.into_inner());
                let exec = held
                    .as_ref()
                    .ok_or_else(|| PyValueError::new_err("this executable was captured: run the Replay"))?;
                exec.run(&refs).map_err(to_py)
            })
        })
        .map(outputs)
    }

    /// Bytes of the arena (the run's one allocation).
    #[getter]
    fn arena_bytes(&self, py: Python<'_>) -> PyResult<usize> {
        py.detach(|| {
            let held = self.inner.lock().unwrap_or_else(|e| e.into_inner());
            held.as_ref().map(|e| e.arena_bytes()).ok_or_else(|| PyValueError::new_err("this executable was captured"))
        })
    }

    /// Captures the launch list on `inputs`: an eager run, then a first replay compared byte
    /// for byte; a difference refuses the capture, naming the first differing launch.
    #[pyo3(signature = (*inputs))]
    fn capture(&self, py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Replay> {
        let inputs = cores(inputs)?;
        let refs: Vec<&nbxtensor::tensor::Tensor> = inputs.iter().collect();
        py.detach(|| {
            guard(|| {
                // waits for the run in progress (with the interpreter released), then takes the
                // executable: later runs are refused by name
                let exec = self
                    .inner
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .ok_or_else(|| PyValueError::new_err("this executable was already captured"))?;
                exec.capture(&refs).map(|inner| Replay { inner }).map_err(to_py)
            })
        })
    }

    fn __repr__(&self) -> String {
        let guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            Some(e) => format!(
                "Executable(launches={}, device='{}', arena_bytes={})",
                e.program().steps.len(),
                e.program().device,
                e.arena_bytes()
            ),
            None => "Executable(captured: run its Replay)".to_string(),
        }
    }
}

#[pymethods]
impl Replay {
    /// Replays the verified launches on new inputs; returns copies of the outputs.
    #[pyo3(signature = (*inputs))]
    fn run(&self, py: Python<'_>, inputs: &Bound<'_, PyTuple>) -> PyResult<Vec<Tensor>> {
        let inputs = cores(inputs)?;
        let refs: Vec<&nbxtensor::tensor::Tensor> = inputs.iter().collect();
        py.detach(|| guard(|| self.inner.run(&refs).map_err(to_py))).map(outputs)
    }

    fn __repr__(&self) -> String {
        let e = self.inner.executable();
        format!(
            "Replay(launches={}, device='{}', arena_bytes={}, cuda_graph={})",
            e.program().steps.len(),
            e.program().device,
            e.arena_bytes(),
            if self.inner.graph().is_some() { "True" } else { "False" }
        )
    }
}

/// Registers the module's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Program>()?;
    m.add_class::<Plan>()?;
    m.add_class::<Executable>()?;
    m.add_class::<Replay>()?;
    m.add_class::<Price>()?;
    m.add_function(wrap_pyfunction!(trace, m)?)?;
    Ok(())
}
