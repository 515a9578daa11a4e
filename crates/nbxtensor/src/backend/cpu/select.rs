//! Selection with numpy broadcasting: `where(cond, a, b)` (a where cond is true, else b) and
//! `masked_fill(x, mask, value)` (value where mask is true, else x).
//!
//! `where` dispatches on its condition (bool) and copies elements of any dtype of 1, 2, 4 or 8
//! bytes (complex128 is refused by name). `masked_fill` serves the float and integer dtypes
//! and bool; its `value` attribute is fitted to the dtype by the policy's fill rule
//! (`nbxtensor::dtype::policy::fill_value`: a float beyond the finite range clamps to it, an
//! integer clamps to the dtype's range, a fraction or NaN for an integer dtype is refused).

use super::binary::INTEGERS;
use super::broadcast::{broadcast_shape, zip2, zip3};
use super::buffers::write;
use super::flags::as_bytes;
use super::math::{Real, Stored, REALS};
use crate::backend::CapabilityTable;
use crate::dtype::policy::{fill_value, FillValue};
use crate::dtype::promotion::PyScalar;
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{AttrValue, Attrs, Cost, Kernel, KernelError, Launch, Result, TensorMeta};
use crate::tensor::{Element, Tensor};
use half::{bf16, f16};

/// The unsigned integer dtype of `dtype`'s width: elements are copied as its bit patterns.
fn bits_dtype(op: &str, dtype: DType) -> Result<DType> {
    let width = dtype.itemsize().map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    DType::ALL
        .iter()
        .copied()
        .find(|d| d.kind() == Kind::Uint && d.itemsize().ok() == Some(width))
        .ok_or_else(|| KernelError::Invalid(format!("{op}: {dtype} elements ({width} bytes) cannot be selected")))
}

struct Where;

fn select<T: Element>(launch: &Launch<'_>, bits: DType) -> Result<()> {
    let out_view = launch.outputs[0].view_dtype(bits)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&out_view)? };
    let cond = as_bytes(&launch.inputs[0])?;
    let (a, b) = (launch.inputs[1].view_dtype(bits)?, launch.inputs[2].view_dtype(bits)?);
    zip3([&cond, &a, &b], launch.outputs[0].shape(), out, |c: u8, p: T, q: T| if c != 0 { p } else { q })
}

impl Kernel for Where {
    fn key(&self) -> String {
        format!("where:{}", DType::Bool.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [cond, a, b] = inputs else {
            return Err(KernelError::Invalid(format!("where: takes three inputs (cond, a, b), got {}", inputs.len())));
        };
        if cond.dtype != DType::Bool {
            return Err(KernelError::Invalid(format!("where: the condition is {}, not bool", cond.dtype)));
        }
        if a.dtype != b.dtype {
            return Err(KernelError::Invalid(format!(
                "where: operands are {} and {}; cast them to one dtype first",
                a.dtype, b.dtype
            )));
        }
        bits_dtype("where", a.dtype)?;
        let shape = broadcast_shape("where", &[cond, a, b])?;
        let out = TensorMeta::new(a.dtype, &shape);
        let read = cond.bytes()? + a.bytes()? + b.bytes()?;
        Cost::simple(vec![out], read, 0)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        let bits = bits_dtype("where", launch.inputs[1].dtype())?;
        match bits {
            DType::Uint8 => select::<u8>(&launch, bits),
            DType::Uint16 => select::<u16>(&launch, bits),
            DType::Uint32 => select::<u32>(&launch, bits),
            DType::Uint64 => select::<u64>(&launch, bits),
            other => Err(KernelError::Invalid(format!("where: no loop for {other} elements"))),
        }
    }
}

struct MaskedFill {
    dtype: DType,
    value: FillValue,
}

fn fill<T: Element>(x: &Tensor, launch: &Launch<'_>, value: T) -> Result<()> {
    let out_view = if launch.outputs[0].dtype() == DType::Bool {
        as_bytes(&launch.outputs[0])?
    } else {
        launch.outputs[0].clone()
    };
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&out_view)? };
    let mask = as_bytes(&launch.inputs[1])?;
    zip2(x, &mask, launch.outputs[0].shape(), out, |v: T, m: u8| if m != 0 { value } else { v })
}

fn fill_float<T: Stored>(launch: &Launch<'_>, value: f64) -> Result<()> {
    fill::<T>(&launch.inputs[0], launch, T::store(<T::Compute as Real>::of(value)))
}

macro_rules! fill_int {
    ($t:ty, $launch:expr, $value:expr) => {
        fill::<$t>(
            &$launch.inputs[0],
            &$launch,
            <$t>::try_from($value).map_err(|e| KernelError::Invalid(format!("masked_fill: {e}")))?,
        )
    };
}

impl Kernel for MaskedFill {
    fn key(&self) -> String {
        format!("masked_fill:{}", self.dtype.launch_key())
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [x, mask] = inputs else {
            return Err(KernelError::Invalid(format!("masked_fill: takes two inputs (x, mask), got {}", inputs.len())));
        };
        if x.dtype != self.dtype {
            return Err(KernelError::Invalid(format!(
                "masked_fill: x is {}, the kernel serves {}",
                x.dtype, self.dtype
            )));
        }
        if mask.dtype != DType::Bool {
            return Err(KernelError::Invalid(format!("masked_fill: the mask is {}, not bool", mask.dtype)));
        }
        let shape = broadcast_shape("masked_fill", &[x, mask])?;
        let out = TensorMeta::new(self.dtype, &shape);
        let mut cost = Cost::simple(vec![out], x.bytes()? + mask.bytes()?, 0)?;
        if x.shape == shape {
            cost.in_place = vec![(0, 0)];
        }
        Ok(cost)
    }

    fn launch(&self, launch: Launch<'_>) -> Result<()> {
        match (self.dtype, self.value) {
            (DType::Float32, FillValue::Float(v)) => fill_float::<f32>(&launch, v),
            (DType::Float16, FillValue::Float(v)) => fill_float::<f16>(&launch, v),
            (DType::Bfloat16, FillValue::Float(v)) => fill_float::<bf16>(&launch, v),
            (DType::Float64, FillValue::Float(v)) => fill_float::<f64>(&launch, v),
            (DType::Int8, FillValue::Int(v)) => fill_int!(i8, launch, v),
            (DType::Int16, FillValue::Int(v)) => fill_int!(i16, launch, v),
            (DType::Int32, FillValue::Int(v)) => fill_int!(i32, launch, v),
            (DType::Int64, FillValue::Int(v)) => fill_int!(i64, launch, v),
            (DType::Uint8, FillValue::Int(v)) => fill_int!(u8, launch, v),
            (DType::Uint16, FillValue::Int(v)) => fill_int!(u16, launch, v),
            (DType::Uint32, FillValue::Int(v)) => fill_int!(u32, launch, v),
            (DType::Uint64, FillValue::Int(v)) => fill_int!(u64, launch, v),
            (DType::Bool, FillValue::Bool(v)) => fill::<u8>(&as_bytes(&launch.inputs[0])?, &launch, u8::from(v)),
            (other, value) => Err(KernelError::Invalid(format!("masked_fill: no loop for {other} with {value:?}"))),
        }
    }
}

fn build_masked_fill(dtype: DType, attrs: &Attrs) -> Result<Box<dyn Kernel>> {
    attrs.only("masked_fill", &["value"])?;
    let scalar = match attrs.iter().find(|(name, _)| *name == "value").map(|(_, v)| v) {
        Some(AttrValue::Int(v)) => PyScalar::Int(i128::from(*v)),
        Some(AttrValue::Bool(v)) => PyScalar::Bool(*v),
        _ => PyScalar::Float(attrs.float("masked_fill", "value", None)?),
    };
    let value = fill_value("masked_fill", scalar, dtype).map_err(|e| KernelError::Invalid(e.to_string()))?;
    Ok(Box::new(MaskedFill { dtype, value }))
}

/// Registers `where` (on its bool condition) and `masked_fill` (floats, integers, bool).
pub fn register(table: &mut CapabilityTable) {
    table.register("where", &[DType::Bool], |_, attrs| {
        attrs.only("where", &[])?;
        Ok(Box::new(Where))
    });
    table.register("masked_fill", &REALS, build_masked_fill);
    table.register("masked_fill", &INTEGERS, build_masked_fill);
    table.register("masked_fill", &[DType::Bool], build_masked_fill);
}

#[cfg(test)]
mod tests {
    use crate::kernel::{AttrValue, Attrs};
    use crate::ops::call;
    use crate::tensor::Tensor;
    use crate::DType;

    fn flags(values: &[u8], shape: &[i64]) -> Tensor {
        Tensor::from_bytes(DType::Bool, shape, values).unwrap()
    }

    #[test]
    fn where_broadcasts_the_condition() {
        let cond = flags(&[1, 0], &[2, 1]);
        let a = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
        let b = Tensor::from_vec(vec![-1i64], &[1]).unwrap();
        let out = call("where", &Attrs::new(), &[&cond, &a, &b]).unwrap().remove(0);
        assert_eq!(out.to_vec::<i64>().unwrap(), vec![1, 2, 3, -1, -1, -1]);
    }

    #[test]
    fn masked_fill_fits_the_value_to_the_dtype() {
        let x = Tensor::from_vec(vec![half::f16::ONE; 2], &[2]).unwrap();
        let mask = flags(&[0, 1], &[2]);
        let attrs = Attrs::new().with("value", AttrValue::Float(-3.39e38));
        let out = call("masked_fill", &attrs, &[&x, &mask]).unwrap().remove(0).to_vec::<half::f16>().unwrap();
        assert_eq!(out, vec![half::f16::ONE, half::f16::MIN]);
        let ints = Tensor::from_vec(vec![5i32, 6], &[2]).unwrap();
        let attrs = Attrs::new().with("value", AttrValue::Float(0.5));
        let err = call("masked_fill", &attrs, &[&ints, &mask]).unwrap_err().to_string();
        assert!(err.contains("masked_fill") && err.contains("int32"), "{err}");
    }
}
