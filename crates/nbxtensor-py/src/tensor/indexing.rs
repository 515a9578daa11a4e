//! `t[key]` as numpy reads a key: ints, slices of any step, `...`, `None`, and one integer
//! array or bool mask (a tensor, a numpy array or a list). Basic items make views; an array
//! item is applied last, at the dim it stood for, by the core's `take` (integer arrays) or
//! `select_mask` (bool masks), which are kernel launches.

use crate::errors::{guard, to_py};
use crate::shape::int_of;
use crate::tensor::Tensor;
use nbxtensor::facts::Kind;
use nbxtensor::ops::spec::reduce::ReduceOp;
use nbxtensor::tensor::Tensor as CoreTensor;
use nbxtensor::DType;
use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// One item of an index key.
pub enum Item {
    /// `None`: a new dim of extent 1.
    NewAxis,
    /// `...`: as many full slices as the other items leave.
    Ellipsis,
    /// `start:stop:step`.
    Slice(Option<i64>, Option<i64>, i64),
    /// An integer: the dim is removed.
    Int(i64),
    /// An integer array or a bool mask.
    Array(CoreTensor),
}

impl Item {
    /// The dims of the tensor this item consumes.
    fn consumes(&self) -> usize {
        match self {
            Item::NewAxis | Item::Ellipsis => 0,
            Item::Slice(..) | Item::Int(_) => 1,
            Item::Array(a) if a.dtype() == DType::Bool => a.ndim(),
            Item::Array(_) => 1,
        }
    }
}

fn refused(item: &Bound<'_, PyAny>) -> PyErr {
    let name = item.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    PyValueError::new_err(format!(
        "a tensor is indexed by ints, slices, ..., None, an integer array or a bool mask, not {name}"
    ))
}

/// Reads one item of a key.
fn item_of(item: &Bound<'_, PyAny>) -> PyResult<Item> {
    if item.is_none() {
        return Ok(Item::NewAxis);
    }
    if item.is_instance_of::<PyEllipsis>() {
        return Ok(Item::Ellipsis);
    }
    if let Ok(slice) = item.cast::<PySlice>() {
        let bound = |name: &str| -> PyResult<Option<i64>> {
            let value = slice.getattr(name)?;
            if value.is_none() {
                Ok(None)
            } else {
                int_of(&value.call_method0("__index__")?, &|| format!("slice {name}")).map(Some)
            }
        };
        return Ok(Item::Slice(bound("start")?, bound("stop")?, bound("step")?.unwrap_or(1)));
    }
    if item.is_instance_of::<PyBool>() {
        return Err(PyIndexError::new_err("a Python bool is not an index: use a bool tensor as a mask"));
    }
    if item.is_instance_of::<PyInt>() {
        return int_of(item, &|| "index".to_string()).map(Item::Int);
    }
    let array = if let Ok(t) = item.cast::<Tensor>() {
        t.get().inner.clone()
    } else {
        let numpy = item.py().import("numpy")?;
        let arraylike = item.is_instance(&numpy.getattr("ndarray")?)?
            || item.is_instance(&numpy.getattr("generic")?)?
            || item.is_instance_of::<PyList>()
            || item.is_instance_of::<PyTuple>();
        if !arraylike {
            return Err(refused(item));
        }
        let made = item.py().import("nbxtensor.tensor")?.call_method1("asarray", (item,))?;
        made.cast::<Tensor>()?.get().inner.clone()
    };
    match array.dtype().kind() {
        Kind::Int | Kind::Uint if array.ndim() == 0 => {
            let values = crate::tensor::habits::values(&array).map_err(to_py)?;
            match values.first() {
                Some(crate::tensor::habits::Value::Int(v)) => Ok(Item::Int(*v)),
                Some(crate::tensor::habits::Value::Uint(v)) => i64::try_from(*v)
                    .map(Item::Int)
                    .map_err(|_| PyIndexError::new_err(format!("index {v} does not fit 64 bits"))),
                _ => Err(refused(item)),
            }
        }
        Kind::Int | Kind::Uint | Kind::Bool => Ok(Item::Array(array)),
        _ => Err(PyIndexError::new_err(format!("an array index must hold integers or bools, not {}", array.dtype()))),
    }
}

/// The items of a key: a tuple's entries, or the key itself.
pub fn items_of(key: &Bound<'_, PyAny>) -> PyResult<Vec<Item>> {
    match key.cast::<PyTuple>() {
        Ok(tuple) => tuple.iter().map(|i| item_of(&i)).collect(),
        Err(_) => Ok(vec![item_of(key)?]),
    }
}

/// `tensor[key]`: basic items as views, then the one array item (if any) at its dim.
pub fn index(py: Python<'_>, tensor: &CoreTensor, key: &Bound<'_, PyAny>) -> PyResult<CoreTensor> {
    let items = items_of(key)?;
    let consumed: usize = items.iter().map(Item::consumes).sum();
    if consumed > tensor.ndim() {
        return Err(PyIndexError::new_err(format!(
            "too many indices: {consumed} for a tensor of {} dims",
            tensor.ndim()
        )));
    }
    if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
        return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
    }
    let arrays = items.iter().filter(|i| matches!(i, Item::Array(_))).count();
    if arrays > 1 {
        if items.iter().any(|i| matches!(i, Item::Array(a) if a.dtype() == DType::Bool)) {
            return Err(PyIndexError::new_err(
                "a bool mask beside other arrays in one key is not supported: index by the mask alone",
            ));
        }
        return by_arrays(py, tensor, items);
    }
    let mut view = tensor.clone();
    let mut dim = 0i64;
    let mut array: Option<(i64, &CoreTensor)> = None;
    for item in &items {
        match item {
            Item::NewAxis => {
                view = view.unsqueeze(dim).map_err(to_py)?;
                dim += 1;
            }
            Item::Ellipsis => dim += (tensor.ndim() - consumed) as i64,
            Item::Slice(start, stop, step) => {
                view = view.slice(dim, *start, *stop, *step).map_err(to_py)?;
                dim += 1;
            }
            Item::Int(index) => {
                view = view.select(dim, *index).map_err(|e| PyIndexError::new_err(e.to_string()))?;
            }
            Item::Array(a) => {
                array = Some((dim, a));
                dim += item.consumes() as i64;
            }
        }
    }
    let Some((at, a)) = array else {
        return Ok(view);
    };
    let a = a.clone();
    let added = if a.dtype() == DType::Bool { 1 } else { a.ndim() };
    let run = move || if a.dtype() == DType::Bool { view.select_mask(&a, at) } else { view.take(&a, at) };
    let on_gpu = !nbxtensor::backend::of(tensor.device()).host_addressable();
    let picked = {
        let guarded = || guard(|| run().map_err(|e| PyIndexError::new_err(e.to_string())));
        if on_gpu { guarded() } else { py.detach(guarded) }?
    };
    // numpy's rule: ints count as array indices beside an array; when a slice, `...` or None
    // stands between them, the array's dims go first
    let advanced: Vec<usize> =
        items.iter().enumerate().filter(|(_, i)| matches!(i, Item::Int(_) | Item::Array(_))).map(|(p, _)| p).collect();
    let adjacent = advanced.last().zip(advanced.first()).is_none_or(|(last, first)| last - first + 1 == advanced.len());
    if adjacent || at == 0 {
        return Ok(picked);
    }
    let at = at as usize;
    let order: Vec<i64> = (at..at + added).chain(0..at).chain(at + added..picked.ndim()).map(|d| d as i64).collect();
    picked.permute(&order).map_err(to_py)
}

/// `tensor[key]` for a key of several integer arrays (and ints, which count as arrays beside
/// them, numpy's rule): the arrays broadcast together and pick one element of the dims they
/// stand for per position, as numpy's advanced indexing does. The basic items make a view;
/// the indexed dims move to the front and merge into one, the arrays' indices (negatives from
/// the end, each checked against its dim's extent) combine into flat positions there, and one
/// gather takes them; the gathered dims go where the first array stood when the arrays and
/// ints are adjacent in the key, else first.
fn by_arrays(py: Python<'_>, tensor: &CoreTensor, items: Vec<Item>) -> PyResult<CoreTensor> {
    let consumed: usize = items.iter().map(Item::consumes).sum();
    let positions: Vec<usize> =
        items.iter().enumerate().filter(|(_, i)| matches!(i, Item::Int(_) | Item::Array(_))).map(|(p, _)| p).collect();
    let adjacent =
        positions.last().zip(positions.first()).is_none_or(|(last, first)| last - first + 1 == positions.len());
    // the basic items as a view, each advanced item as a whole dim, whose place is kept
    let mut view = tensor.clone();
    let (mut dim, mut dims, mut picks) = (0i64, Vec::new(), Vec::new());
    for item in items {
        match item {
            Item::NewAxis => {
                view = view.unsqueeze(dim).map_err(to_py)?;
                dim += 1;
            }
            Item::Ellipsis => dim += (tensor.ndim() - consumed) as i64,
            Item::Slice(start, stop, step) => {
                view = view.slice(dim, start, stop, step).map_err(to_py)?;
                dim += 1;
            }
            Item::Int(index) => {
                let index = CoreTensor::from_vec(vec![index], &[]).map_err(to_py)?;
                dims.push(dim as usize);
                picks.push(index);
                dim += 1;
            }
            Item::Array(a) => {
                dims.push(dim as usize);
                picks.push(a);
                dim += 1;
            }
        }
    }
    let extents: Vec<i64> = dims.iter().map(|&d| view.shape()[d]).collect();
    let run = move || -> nbxtensor::Result<CoreTensor> {
        let device = view.device();
        let mut flat: Option<CoreTensor> = None;
        for (pick, &extent) in picks.iter().zip(&extents) {
            let pick = pick.to(device)?.cast(DType::Int64)?;
            let wrapped = pick.lt(0)?.if_else(&pick.add(extent)?, &pick)?;
            let outside = wrapped.lt(0)?.logical_or(&wrapped.ge(extent)?)?;
            if outside.numel() > 0
                && outside.cast(DType::Uint8)?.reduce(ReduceOp::Max, None, false)?.to_bytes()?[0] != 0
            {
                return Err(nbxtensor::tensor::TensorError::Invalid(format!(
                    "an index array holds an index outside a dim of extent {extent}"
                ))
                .into());
            }
            flat = Some(match flat {
                None => wrapped,
                Some(f) => f.mul(extent)?.add(&wrapped)?,
            });
        }
        let flat = flat.expect("two arrays or more");
        // the indexed dims first, merged into one
        let rest: Vec<usize> = (0..view.ndim()).filter(|d| !dims.contains(d)).collect();
        let order: Vec<i64> = dims.iter().chain(&rest).map(|&d| d as i64).collect();
        let moved = view.permute(&order)?;
        let mut merged_shape = vec![extents.iter().product::<i64>()];
        merged_shape.extend(rest.iter().map(|&d| view.shape()[d]));
        let merged = match moved.reshape(&merged_shape) {
            Ok(v) => v,
            Err(_) => moved.contiguous()?.reshape(&merged_shape)?,
        };
        let picked = merged.take(&flat, 0)?;
        // numpy's place for the gathered dims: where the first array stood, when adjacent
        let before = if adjacent { rest.iter().filter(|&&d| d < dims[0]).count() } else { 0 };
        if before == 0 {
            return Ok(picked);
        }
        let gathered = flat.ndim();
        let order: Vec<i64> = (gathered..gathered + before)
            .chain(0..gathered)
            .chain(gathered + before..picked.ndim())
            .map(|d| d as i64)
            .collect();
        Ok(picked.permute(&order)?)
    };
    let on_gpu = !nbxtensor::backend::of(tensor.device()).host_addressable();
    let guarded = || guard(|| run().map_err(|e| PyIndexError::new_err(e.to_string())));
    if on_gpu {
        guarded()
    } else {
        py.detach(guarded)
    }
}

/// The value of `t[key] = value` as a tensor: a tensor as it is, anything else (a Python or
/// numpy scalar, a numpy array, a sequence) made into one of the destination's dtype.
fn value_of(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<CoreTensor> {
    if let Ok(t) = value.cast::<Tensor>() {
        return Ok(t.get().inner.clone());
    }
    let made = value.py().import("nbxtensor.tensor")?.call_method1("asarray", (value, dtype.name()))?;
    Ok(made.cast::<Tensor>()?.get().inner.clone())
}

/// `tensor[key] = value`, in place, by the core's `assign` kernel: a basic key (ints, slices
/// of any step, `...`, `None`) writes through the view it selects; a bool mask of the
/// tensor's own shape (or of its leading dims) as the whole key writes a scalar or 0-d value
/// where the mask is true (the kept elements are written back unchanged: one `where` and one
/// `assign`). The value is broadcast to what the key selects and converted to the tensor's
/// dtype; integer-array keys are refused by name (the standard leaves them out of writes).
pub fn assign(py: Python<'_>, tensor: &CoreTensor, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let items = items_of(key)?;
    let value = value_of(value, tensor.dtype())?;
    let on_gpu = !nbxtensor::backend::of(tensor.device()).host_addressable();
    let mask = match items.as_slice() {
        [Item::Array(mask)] if mask.dtype() == DType::Bool => Some(mask.clone()),
        _ if items.iter().any(|i| matches!(i, Item::Array(_))) => {
            return Err(PyIndexError::new_err(
                "t[key] = value: a key with an integer array (or a mask beside other items) is not supported; \
                 write through basic indexing or one bool mask as the whole key",
            ))
        }
        _ => None,
    };
    let (target, value) = match mask {
        None => (index(py, tensor, key)?, value),
        Some(mask) => {
            let covered = tensor.shape().get(..mask.ndim());
            if covered != Some(mask.shape()) {
                return Err(PyIndexError::new_err(format!(
                    "t[mask] = value: a mask of shape {:?} does not cover the leading dims of a tensor of shape {:?}",
                    mask.shape(),
                    tensor.shape()
                )));
            }
            if value.numel() != 1 {
                return Err(PyIndexError::new_err(format!(
                    "t[mask] = value: the value must be one element (a scalar or a 0-d tensor), got shape {:?}",
                    value.shape()
                )));
            }
            let mut wide = mask.shape().to_vec();
            wide.resize(tensor.ndim(), 1);
            let (mask, kept) = (mask.to(tensor.device()).map_err(to_py)?, tensor.clone());
            let value = value.reshape(&[]).map_err(to_py)?;
            let run = move || -> nbxtensor::Result<CoreTensor> {
                let mask = mask.contiguous()?.reshape(&wide)?;
                let value = value.to(kept.device())?.cast(kept.dtype())?;
                Ok(mask.if_else(&value, &kept)?)
            };
            let merged =
                if on_gpu { guard(|| run().map_err(to_py))? } else { py.detach(|| guard(|| run().map_err(to_py)))? };
            (tensor.clone(), merged)
        }
    };
    let write = move || guard(|| target.assign(&value).map_err(to_py));
    if on_gpu {
        write()
    } else {
        py.detach(write)
    }
}
