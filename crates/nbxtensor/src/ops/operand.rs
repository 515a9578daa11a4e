//! Operands of the typed API: a tensor or a scalar, and the promotion that brings them to one
//! dtype — the Array API's rules between tensors, weak scalars (a scalar takes the tensor's
//! dtype when it fits its kind, NEP 50), both decided by `dtype::promotion`.

use crate::dtype::promotion::{binary_result, scalar_result, PyScalar};
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{AttrValue, Attrs, KernelError, Result};
use crate::memory::Device;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// A scalar operand, weak in promotion: the dtype layer's Python scalar (bool, int, float or
/// complex).
pub type Scalar = PyScalar;

/// An operand of a binary op: a tensor, or a weak scalar.
#[derive(Clone, Debug)]
pub enum Operand<'a> {
    /// A tensor.
    Tensor(&'a Tensor),
    /// A scalar, weak in promotion.
    Scalar(Scalar),
}

impl<'a> From<&'a Tensor> for Operand<'a> {
    fn from(t: &'a Tensor) -> Operand<'a> {
        Operand::Tensor(t)
    }
}

impl From<f64> for Operand<'_> {
    fn from(v: f64) -> Self {
        Operand::Scalar(PyScalar::Float(v))
    }
}

impl From<f32> for Operand<'_> {
    fn from(v: f32) -> Self {
        Operand::Scalar(PyScalar::Float(f64::from(v)))
    }
}

impl From<i64> for Operand<'_> {
    fn from(v: i64) -> Self {
        Operand::Scalar(PyScalar::Int(i128::from(v)))
    }
}

impl From<i32> for Operand<'_> {
    fn from(v: i32) -> Self {
        Operand::Scalar(PyScalar::Int(i128::from(v)))
    }
}

impl From<bool> for Operand<'_> {
    fn from(v: bool) -> Self {
        Operand::Scalar(PyScalar::Bool(v))
    }
}

impl From<PyScalar> for Operand<'_> {
    fn from(v: PyScalar) -> Self {
        Operand::Scalar(v)
    }
}

fn dtype_error(op: &str, e: impl std::fmt::Display) -> KernelError {
    KernelError::Invalid(format!("{op}: {e}"))
}

/// The dtype `operands` promote to: the tensors' common dtype, then each scalar weak against
/// it. At least one operand must be a tensor.
pub fn result_dtype(op: &str, operands: &[Operand<'_>]) -> Result<DType> {
    let mut tensors = operands.iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(t.dtype()),
        Operand::Scalar(_) => None,
    });
    let first =
        tensors.next().ok_or_else(|| KernelError::Invalid(format!("{op}: at least one operand must be a tensor")))?;
    let mut dtype = first;
    for d in tensors {
        dtype = binary_result(dtype, d).map_err(|e| dtype_error(op, e))?;
    }
    for o in operands {
        if let Operand::Scalar(s) = o {
            dtype = scalar_result(dtype, *s).map_err(|e| dtype_error(op, e))?;
        }
    }
    Ok(dtype)
}

/// The device of the tensors among `operands` (they must share one).
fn device_of(op: &str, operands: &[Operand<'_>]) -> Result<Device> {
    let mut devices = operands.iter().filter_map(|o| match o {
        Operand::Tensor(t) => Some(t.device()),
        Operand::Scalar(_) => None,
    });
    let first = devices.next().unwrap_or(Device::CPU);
    if let Some(other) = devices.find(|d| *d != first) {
        return Err(KernelError::Invalid(format!(
            "{op}: an input lives on {other}, another on {first}: move them to one device first"
        )));
    }
    Ok(first)
}

/// `t` cast to `dtype` (itself when it has it already).
pub fn cast_to(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    Ok(super::call("cast", &Attrs::new().with("dtype", AttrValue::DType(dtype)), &[t])?.remove(0))
}

/// A 0-d tensor of `dtype` holding `value` on `device`: integers written exactly (the caller
/// checked that they fit), floats and complex rounded by the cast op (as a cast of a float64
/// tensor rounds).
///
/// For another device than the host the value is made on the host eagerly (even inside a
/// trace or a dry run, whose cast would be a symbolic tensor with nothing to move) and moved:
/// a constant of the program being traced.
pub fn scalar_tensor(op: &str, value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
    if device != Device::CPU {
        return super::eagerly(|| scalar_tensor(op, value, dtype, Device::CPU))?.to(device).map_err(Into::into);
    }
    let host = match (value, dtype.kind()) {
        (PyScalar::Bool(b), Kind::Bool) => Tensor::from_bytes(DType::Bool, &[], &[u8::from(b)])?,
        (PyScalar::Bool(b), _) => cast_to(&Tensor::from_vec(vec![f64::from(u8::from(b))], &[])?, dtype)?,
        (PyScalar::Int(v), Kind::Int | Kind::Uint) => {
            let width = dtype.itemsize().map_err(|e| dtype_error(op, e))?;
            Tensor::from_bytes(dtype, &[], &v.to_le_bytes()[..width])?
        }
        (PyScalar::Int(v), _) => cast_to(&Tensor::from_vec(vec![v as f64], &[])?, dtype)?,
        (PyScalar::Float(v), _) => cast_to(&Tensor::from_vec(vec![v], &[])?, dtype)?,
        (PyScalar::Complex { re, im }, _) => {
            let bytes: Vec<u8> = re.to_le_bytes().into_iter().chain(im.to_le_bytes()).collect();
            cast_to(&Tensor::from_bytes(DType::Complex128, &[], &bytes)?, dtype)?
        }
    };
    Ok(host.to(device)?)
}

/// `operands` as tensors of their promoted dtype on their tensors' device (scalars made into
/// 0-d tensors of it); a tensor that has the dtype already is borrowed.
pub fn promote<'a>(op: &str, operands: &[Operand<'a>]) -> Result<Vec<Cow<'a, Tensor>>> {
    let dtype = result_dtype(op, operands)?;
    let device = device_of(op, operands)?;
    operands
        .iter()
        .map(|o| match o {
            Operand::Tensor(t) if t.dtype() == dtype => Ok(Cow::Borrowed(*t)),
            Operand::Tensor(t) => cast_to(t, dtype).map(Cow::Owned),
            Operand::Scalar(s) => scalar_tensor(op, *s, dtype, device).map(Cow::Owned),
        })
        .collect()
}
