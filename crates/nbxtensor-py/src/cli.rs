//! `nbxtensor._core.cli`: the `nbx` command line (crates/nbx) inside the extension, so that the
//! console script `pip install` writes (`nbxtensor._cli:main`) runs the same program as the
//! `nbx` binary.

use pyo3::prelude::*;

/// Runs `nbx` with the command line `args` (without the program's name), the interpreter
/// lock released; returns the exit status (0; 2 for a bad command line; 1 for a failure after it).
#[pyfunction]
fn main(py: Python<'_>, args: Vec<String>) -> u8 {
    py.detach(|| nbx_cli::run(&args))
}

/// Registers the module's function.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)
}
