//! `where` and `masked_fill` on the host (`ops::spec::select` says what they compute), with
//! numpy broadcasting: `where` selects elements as the unsigned integers of their width.

use super::broadcast::{zip2, zip3};
use super::buffers::write;
use super::flags::as_bytes;
use super::math::{Real, Stored};
use crate::backend::LaunchTable;
use crate::dtype::policy::FillValue;
use crate::dtype::DType;
use crate::kernel::{KernelError, Launch, Result};
use crate::ops::spec::select::{bits_dtype, MaskedFill, Where};
use crate::tensor::{Complex, Element, Tensor};
use half::{bf16, f16};

fn select<T: Element>(launch: &Launch<'_>, bits: DType) -> Result<()> {
    let out_view = launch.outputs[0].view_dtype(bits)?;
    // SAFETY: the output is this launch's own buffer.
    let out = unsafe { write::<T>(&out_view)? };
    let cond = as_bytes(&launch.inputs[0])?;
    let (a, b) = (launch.inputs[1].view_dtype(bits)?, launch.inputs[2].view_dtype(bits)?);
    zip3([&cond, &a, &b], launch.outputs[0].shape(), out, |c: u8, p: T, q: T| if c != 0 { p } else { q })
}

fn launch_where(_: &Where, launch: Launch<'_>) -> Result<()> {
    let bits = bits_dtype("where", launch.inputs[1].dtype())?;
    match bits {
        DType::Uint8 => select::<u8>(&launch, bits),
        DType::Uint16 => select::<u16>(&launch, bits),
        DType::Uint32 => select::<u32>(&launch, bits),
        DType::Uint64 => select::<u64>(&launch, bits),
        DType::Complex128 => select::<Complex<f64>>(&launch, bits),
        other => Err(KernelError::Invalid(format!("where: no loop for {other} elements"))),
    }
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

fn launch_masked_fill(spec: &MaskedFill, launch: Launch<'_>) -> Result<()> {
    match (spec.dtype, spec.value) {
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

/// Registers `where` (on its bool condition) and `masked_fill` (every dtype it takes).
pub fn register(table: &mut LaunchTable) {
    table.register("where", &[DType::Bool], launch_where);
    let dtypes = crate::ops::spec::op("masked_fill").map(|d| d.dtypes()).unwrap_or_default();
    table.register("masked_fill", &dtypes, launch_masked_fill);
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
