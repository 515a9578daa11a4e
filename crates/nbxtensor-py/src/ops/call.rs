//! `nbxtensor.ops` calls: any op of the capability table, by name, on tensors.

use crate::errors::{guard, to_py};
use crate::tensor::Tensor;
use nbxtensor::backend::{cpu::cpu, Backend};
use nbxtensor::kernel::{AttrValue, Attrs};
use nbxtensor::DType;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

/// An attribute from Python: bool, int, float, a sequence of ints, or a dtype (a name, an
/// NBXDtype or a numpy dtype).
fn attr_value(op: &str, name: &str, value: &Bound<'_, PyAny>) -> PyResult<AttrValue> {
    if value.is_instance_of::<PyBool>() {
        return Ok(AttrValue::Bool(value.extract()?));
    }
    if value.is_instance_of::<PyInt>() {
        return value
            .extract()
            .map(AttrValue::Int)
            .map_err(|_| PyValueError::new_err(format!("{op}: attribute '{name}' does not fit 64 bits")));
    }
    if value.is_instance_of::<PyFloat>() {
        return Ok(AttrValue::Float(value.extract()?));
    }
    if value.is_instance_of::<PyString>() {
        return DType::parse(&value.extract::<String>()?).map(AttrValue::DType).map_err(to_py);
    }
    if let Ok(ints) = value.extract::<Vec<i64>>() {
        return Ok(AttrValue::Ints(ints));
    }
    crate::dtype::dtype_arg(value, op).map(AttrValue::DType).map_err(|_| {
        PyValueError::new_err(format!("{op}: attribute '{name}' must be a bool, an int, a float, ints or a dtype"))
    })
}

/// The attributes of a call, from Python keywords.
fn parse_attrs(op: &str, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<Attrs> {
    let mut parsed = Attrs::new();
    for (name, value) in attrs.into_iter().flat_map(|d| d.iter()) {
        let name: String = name.extract()?;
        parsed = parsed.with(&name, attr_value(op, &name, &value)?);
    }
    Ok(parsed)
}

/// Runs `op` on `inputs`: a CPU op computes before it returns, so other Python threads run
/// meanwhile; a GPU op only queues its launch, which costs less than giving the interpreter
/// lock away and back.
fn run(py: Python<'_>, op: &str, attrs: &Attrs, inputs: &[&nbxtensor::tensor::Tensor]) -> PyResult<Vec<Tensor>> {
    let on_gpu = inputs.first().is_some_and(|t| !nbxtensor::backend::of(t.device()).host_addressable());
    let outputs = computed(py, on_gpu, || nbxtensor::ops::call(op, attrs, inputs))?;
    Ok(outputs.into_iter().map(Tensor::wrap).collect())
}

/// Calls `op` on `inputs` with keyword attributes; returns the list of outputs.
#[pyfunction]
#[pyo3(signature = (op, inputs, attrs = None))]
fn call(
    py: Python<'_>,
    op: &str,
    inputs: Vec<PyRef<'_, Tensor>>,
    attrs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Tensor>> {
    let parsed = parse_attrs(op, attrs)?;
    let tensors: Vec<&nbxtensor::tensor::Tensor> = inputs.iter().map(|t| &t.inner).collect();
    run(py, op, &parsed, &tensors)
}

/// Calls an op of one input and one output (the unary ops, casts, reductions): as `call`,
/// without the lists.
#[pyfunction]
#[pyo3(signature = (op, x, attrs = None))]
fn call_one(py: Python<'_>, op: &str, x: PyRef<'_, Tensor>, attrs: Option<&Bound<'_, PyDict>>) -> PyResult<Tensor> {
    let parsed = parse_attrs(op, attrs)?;
    let mut outputs = run(py, op, &parsed, &[&x.inner])?;
    match outputs.len() {
        1 => Ok(outputs.remove(0)),
        n => Err(PyValueError::new_err(format!("{op}: gives {n} outputs, call_one takes ops of one"))),
    }
}

/// A binary operand from Python: a tensor, a Python scalar (weak in promotion), or anything
/// numpy reads (a numpy scalar or array: strong, its own dtype), made a tensor on the host.
pub enum PyOperand {
    /// A tensor.
    Tensor(nbxtensor::Tensor),
    /// A Python bool, int, float or complex.
    Scalar(nbxtensor::ops::Scalar),
}

impl PyOperand {
    /// `value` as an operand; `None` for what no operand can be (the caller's `NotImplemented`).
    pub fn of(value: &Bound<'_, PyAny>) -> PyResult<Option<PyOperand>> {
        if let Ok(t) = value.cast::<Tensor>() {
            return Ok(Some(PyOperand::Tensor(t.get().inner.clone())));
        }
        if let Ok(scalar) = crate::dtype::promotion::py_scalar(value, true) {
            return Ok(Some(PyOperand::Scalar(scalar)));
        }
        let numpy = value.py().import("numpy")?;
        let is_numpy =
            value.is_instance(&numpy.getattr("generic")?)? || value.is_instance(&numpy.getattr("ndarray")?)?;
        if is_numpy || value.hasattr("__dlpack__")? {
            let tensor = value.py().import("nbxtensor.tensor")?.call_method1("asarray", (value,))?;
            return Ok(Some(PyOperand::Tensor(tensor.cast::<Tensor>()?.get().inner.clone())));
        }
        Ok(None)
    }

    /// The core's operand.
    pub fn as_operand(&self) -> nbxtensor::ops::Operand<'_> {
        match self {
            PyOperand::Tensor(t) => nbxtensor::ops::Operand::Tensor(t),
            PyOperand::Scalar(s) => nbxtensor::ops::Operand::Scalar(*s),
        }
    }

    fn on_gpu(&self) -> bool {
        matches!(self, PyOperand::Tensor(t) if !nbxtensor::backend::of(t.device()).host_addressable())
    }
}

fn operand(op: &str, value: &Bound<'_, PyAny>) -> PyResult<PyOperand> {
    PyOperand::of(value)?.ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "{op}: an operand must be a tensor, a number or an array, got {}",
            value.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })
}

/// Runs `f` (a call into the core) without the interpreter lock on the host; on a GPU (which
/// only queues) with it. Its error becomes the Python exception the spec gives it, and a panic
/// an `InternalError` (see [`guard`]).
pub fn computed<T: Send, E: Into<nbxtensor::Error>>(
    py: Python<'_>,
    on_gpu: bool,
    f: impl FnOnce() -> Result<T, E> + Send,
) -> PyResult<T> {
    let guarded = || guard(|| f().map_err(to_py));
    if on_gpu {
        guarded()
    } else {
        py.detach(guarded)
    }
}

/// `op` of the binary ops on `a` and `b` (tensors, Python scalars, numpy scalars or arrays),
/// promoted as the core decides.
pub fn binary_of(py: Python<'_>, op: &str, a: &PyOperand, b: &PyOperand) -> PyResult<Tensor> {
    let which = nbxtensor::ops::spec::binary::BinaryOp::from_name(op)
        .ok_or_else(|| PyValueError::new_err(format!("binary: '{op}' is not a binary op")))?;
    let on_gpu = a.on_gpu() || b.on_gpu();
    computed(py, on_gpu, || nbxtensor::ops::binary(which, a.as_operand(), b.as_operand())).map(Tensor::wrap)
}

/// A binary op by name on two operands (tensors or numbers), promoted as the Array API says
/// (Python scalars weak).
#[pyfunction]
fn binary(py: Python<'_>, op: &str, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    binary_of(py, op, &operand(op, a)?, &operand(op, b)?)
}

/// A unary op by name (a float-only op reads integers and bool as float32).
#[pyfunction]
fn unary(py: Python<'_>, op: &str, x: PyRef<'_, Tensor>) -> PyResult<Tensor> {
    let which = nbxtensor::ops::spec::unary::UnaryOp::from_name(op)
        .ok_or_else(|| PyValueError::new_err(format!("unary: '{op}' is not a unary op")))?;
    let on_gpu = !nbxtensor::backend::of(x.inner.device()).host_addressable();
    let x = &x.inner;
    computed(py, on_gpu, || nbxtensor::ops::unary(which, x)).map(Tensor::wrap)
}

/// `a` where `cond` is true, else `b` (a and b tensors or numbers, promoted).
#[pyfunction]
#[pyo3(name = "where")]
fn where_(py: Python<'_>, cond: PyRef<'_, Tensor>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let (a, b) = (operand("where", a)?, operand("where", b)?);
    let on_gpu = !nbxtensor::backend::of(cond.inner.device()).host_addressable();
    let cond = &cond.inner;
    computed(py, on_gpu, || cond.if_else(a.as_operand(), b.as_operand())).map(Tensor::wrap)
}

/// A reduction by name over `axes` (None: every axis; argmax: one axis), as the typed API
/// reads its input (mean reads integers as float32).
#[pyfunction]
#[pyo3(signature = (op, x, axes = None, keepdim = false))]
fn reduce(py: Python<'_>, op: &str, x: PyRef<'_, Tensor>, axes: Option<Vec<i64>>, keepdim: bool) -> PyResult<Tensor> {
    let on_gpu = !nbxtensor::backend::of(x.inner.device()).host_addressable();
    let which = nbxtensor::ops::spec::reduce::ReduceOp::from_name(op)
        .ok_or_else(|| PyValueError::new_err(format!("reduce: '{op}' is not a reduction")))?;
    let x = &x.inner;
    computed(py, on_gpu, || x.reduce(which, axes.as_deref(), keepdim)).map(Tensor::wrap)
}

/// A running reduction by name (`cumulative_sum`, `cumulative_prod`) along `axis`, as the typed
/// API reads its input (bool as int64).
#[pyfunction]
#[pyo3(signature = (op, x, axis, include_initial = false))]
fn scan(py: Python<'_>, op: &str, x: PyRef<'_, Tensor>, axis: i64, include_initial: bool) -> PyResult<Tensor> {
    let on_gpu = !nbxtensor::backend::of(x.inner.device()).host_addressable();
    let which = nbxtensor::ops::spec::scan::ScanOp::from_name(op)
        .ok_or_else(|| PyValueError::new_err(format!("scan: '{op}' is not a running reduction")))?;
    let x = &x.inner;
    computed(py, on_gpu, || x.scan(which, axis, include_initial)).map(Tensor::wrap)
}

/// The solution X of A·X = B, as the typed API solves it: the two promoted to one dtype, the
/// batches broadcast, a 1-d `b` one vector for every A; a singular A refused by name.
#[pyfunction]
fn solve(py: Python<'_>, a: PyRef<'_, Tensor>, b: PyRef<'_, Tensor>) -> PyResult<Tensor> {
    let on_gpu = !nbxtensor::backend::of(a.inner.device()).host_addressable();
    let (a, b) = (&a.inner, &b.inner);
    computed(py, on_gpu, || a.solve(b)).map(Tensor::wrap)
}

/// A start or step of `iota` from Python: an int (of 64 bits) or a float; a bool or anything
/// else refused by name.
fn iota_term(name: &str, value: &Bound<'_, PyAny>) -> PyResult<nbxtensor::ops::spec::create::Term> {
    use nbxtensor::ops::spec::create::Term;
    if value.is_instance_of::<PyBool>() {
        return Err(PyValueError::new_err(format!("iota: {name} must be an int or a float, got a bool")));
    }
    if value.is_instance_of::<PyInt>() {
        return value
            .extract()
            .map(Term::Int)
            .map_err(|_| PyValueError::new_err(format!("iota: {name} does not fit 64 bits")));
    }
    value
        .extract::<f64>()
        .map(Term::Float)
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("iota: {name} must be an int or a float")))
}

/// The 1-d tensor `start + step * i` for `i` in `0..n`, of `dtype`, on `device` (the host when
/// absent): floats computed in float64 and rounded once, integers wrapping in 64 bits.
#[pyfunction]
#[pyo3(signature = (n, start, step, dtype, device = None))]
fn iota(
    py: Python<'_>,
    n: i64,
    start: &Bound<'_, PyAny>,
    step: &Bound<'_, PyAny>,
    dtype: &Bound<'_, PyAny>,
    device: Option<&str>,
) -> PyResult<Tensor> {
    let (start, step) = (iota_term("start", start)?, iota_term("step", step)?);
    let dtype = crate::dtype::dtype_arg(dtype, "iota")?;
    let device =
        device.map_or(Ok(nbxtensor::memory::Device::CPU), |d| nbxtensor::memory::Device::parse(d).map_err(to_py))?;
    let on_gpu = !nbxtensor::backend::of(device).host_addressable();
    computed(py, on_gpu, || nbxtensor::Tensor::iota(n, start, step, dtype, device)).map(Tensor::wrap)
}

/// The CPU backend's launch table, printed (one line per op and its dtypes).
#[pyfunction]
fn capability_table() -> String {
    cpu().launches().to_string()
}

/// Registers the module's functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(call, m)?)?;
    m.add_function(wrap_pyfunction!(call_one, m)?)?;
    m.add_function(wrap_pyfunction!(capability_table, m)?)?;
    m.add_function(wrap_pyfunction!(binary, m)?)?;
    m.add_function(wrap_pyfunction!(unary, m)?)?;
    m.add_function(wrap_pyfunction!(where_, m)?)?;
    m.add_function(wrap_pyfunction!(reduce, m)?)?;
    m.add_function(wrap_pyfunction!(iota, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(solve, m)?)?;
    Ok(())
}
