//! `nbxtensor.ops.launch_observer`: watch every kernel launch without running it.
//!
//! An observer is a `LaunchObserver` (subclass it to change what `active` or `record` do):
//! while an installed observer is active, launches are recorded instead of run. The core sees
//! the Python object through an adapter that calls its methods, so overrides are honoured.
//! The observer is a setting of the thread that installs it (it watches that thread's launches).

use nbxtensor::settings::launch_observer as core;
use pyo3::prelude::*;
use pyo3::types::PyList;
use std::cell::RefCell;
use std::sync::Arc;

/// A launch observer: `active()` says whether launches run dry, `record(tuned, key)` keeps a
/// launch, `shadow_run(key, outputs)` records a dry launch and hands back the outputs it
/// declares. The base class records every launch in `launches`.
#[pyclass(module = "nbxtensor.ops.launch_observer", name = "LaunchObserver", subclass)]
struct LaunchObserver {
    is_active: bool,
    launches: Py<PyList>,
}

#[pymethods]
impl LaunchObserver {
    /// An observer; `active=False` makes one that lets every launch run.
    #[new]
    #[pyo3(signature = (active = true))]
    fn new(py: Python<'_>, active: bool) -> Self {
        LaunchObserver { is_active: active, launches: PyList::empty(py).unbind() }
    }

    /// Whether launches run dry while this observer is installed.
    fn active(&self) -> bool {
        self.is_active
    }

    /// Records one launch: whether its settings were proven (tuned), and its key.
    fn record(&self, py: Python<'_>, tuned: bool, key: String) -> PyResult<()> {
        self.launches.bind(py).append((tuned, key))
    }

    /// A dry launch: records it (not tuned) and returns the outputs it declares, unrun.
    fn shadow_run(slf: &Bound<'_, Self>, key: String, outputs: Py<PyAny>) -> PyResult<Py<PyAny>> {
        slf.call_method1("record", (false, key))?;
        Ok(outputs)
    }

    /// The launches recorded so far, as (tuned, key) pairs (a copy).
    #[getter]
    fn launches<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        Ok(PyList::new(py, self.launches.bind(py).iter())?)
    }
}

/// The core's view of a Python observer: calls its methods (a Python error counts as inactive
/// for `active`; `record` errors are reported with the observer's repr as unraisable).
struct PythonObserver(Py<LaunchObserver>);

impl core::LaunchObserver for PythonObserver {
    fn active(&self) -> bool {
        Python::attach(|py| self.0.bind(py).call_method0("active").and_then(|a| a.is_truthy()).unwrap_or(false))
    }

    fn record(&self, tuned: bool, key: &str) {
        Python::attach(|py| {
            if let Err(error) = self.0.bind(py).call_method1("record", (tuned, key)) {
                error.write_unraisable(py, Some(self.0.bind(py).as_any()));
            }
        })
    }
}

thread_local! {
    /// The observer this thread installed (the core holds its adapter).
    static INSTALLED: RefCell<Option<Py<LaunchObserver>>> = const { RefCell::new(None) };
}

/// Installs an observer (a LaunchObserver) for this thread's launches; None removes it and
/// every launch of this thread runs. Other threads keep their own.
#[pyfunction]
fn set_launch_observer(py: Python<'_>, observer: Option<Bound<'_, LaunchObserver>>) {
    let observer = observer.map(Bound::unbind);
    let adapter = observer.as_ref().map(|o| Arc::new(PythonObserver(o.clone_ref(py))) as Arc<dyn core::LaunchObserver>);
    core::set_launch_observer(adapter);
    let previous = INSTALLED.with(|installed| installed.replace(observer));
    drop(previous);
}

/// The observer in force on this thread, or an inactive one when none is installed.
#[pyfunction]
fn launch_observer(py: Python<'_>) -> PyResult<Py<LaunchObserver>> {
    match INSTALLED.with(|installed| installed.borrow().as_ref().map(|o| o.clone_ref(py))) {
        Some(observer) => Ok(observer),
        None => Py::new(py, LaunchObserver::new(py, false)),
    }
}

/// Registers the module's functions and classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<LaunchObserver>()?;
    m.add_function(wrap_pyfunction!(set_launch_observer, m)?)?;
    m.add_function(wrap_pyfunction!(launch_observer, m)?)?;
    Ok(())
}
