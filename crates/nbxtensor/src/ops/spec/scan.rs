//! Running sums and products along one axis: `cumulative_sum` and `cumulative_prod`
//! (attributes `axis`, one int with negatives from the end, required; `include_initial`,
//! default false: the output starts with the identity, 0 or 1, and is one longer along the
//! axis — the Array API 2024.12's semantics).
//!
//! The output dtype is the sum's (`ops::spec::reduce`): floats keep theirs, each output the
//! running float64 value rounded once; signed integers give int64, unsigned uint64, wrapping.
//! A 0-d input is refused (it has no axis).

use super::{axis_of, one_input, require_dtype, AttrDoc, OpDef, Spec, NUMBERS};
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// A running reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOp {
    /// The running sum.
    Sum,
    /// The running product.
    Prod,
}

const OPS: [(ScanOp, &str, &str); 2] = [
    (ScanOp::Sum, "cumulative_sum", "the running sum along axis (floats in float64; integers wrap in 64 bits)"),
    (ScanOp::Prod, "cumulative_prod", "the running product along axis (floats in float64; integers wrap in 64 bits)"),
];

impl ScanOp {
    /// The op's name.
    pub fn name(self) -> &'static str {
        OPS.iter().find(|e| e.0 == self).map(|e| e.1).expect("every scan has an entry")
    }

    /// The scan of a name.
    pub fn from_name(name: &str) -> Option<ScanOp> {
        OPS.iter().find(|e| e.1 == name).map(|e| e.0)
    }

    /// Every scan, in the catalogue's order.
    pub fn every() -> impl Iterator<Item = ScanOp> {
        OPS.iter().map(|e| e.0)
    }
}

/// `(outer, extent, inner)` of a contiguous `shape` seen as `[outer, extent, inner]` around
/// dim `axis`; the products checked (refused naming `op` past 64 bits).
pub fn lines_of(op: &str, shape: &[i64], axis: usize) -> Result<(i64, i64, i64)> {
    let product = |dims: &[i64]| crate::shape::numel(dims).map_err(|e| KernelError::Invalid(format!("{op}: {e}")));
    Ok((product(&shape[..axis])?, shape[axis], product(&shape[axis + 1..])?))
}

/// A running reduction along one axis, on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Scan {
    /// The running reduction.
    pub op: ScanOp,
    /// The input's dtype.
    pub dtype: DType,
    /// The axis (negatives from the end).
    pub axis: i64,
    /// Whether the output starts with the identity (one longer along the axis).
    pub include_initial: bool,
}

impl Scan {
    /// `op` of `dtype` along `axis`: refused for a dtype it is not defined on.
    pub fn new(op: ScanOp, dtype: DType, axis: i64, include_initial: bool) -> Result<Scan> {
        require_dtype(op.name(), dtype, &NUMBERS)?;
        Ok(Scan { op, dtype, axis, include_initial })
    }

    /// The output's dtype: the sum's (int64 for signed integers, uint64 for unsigned).
    pub fn output_dtype(&self) -> DType {
        match self.dtype.kind() {
            Kind::Int => DType::Int64,
            Kind::Uint => DType::Uint64,
            _ => self.dtype,
        }
    }

    /// The axis as an index into an input of `ndim` dims (a 0-d input refused by name).
    pub fn axis_index(&self, ndim: usize) -> Result<usize> {
        if ndim == 0 {
            return Err(KernelError::Invalid(format!("{}: a 0-d input has no axis to run along", self.op.name())));
        }
        axis_of(self.op.name(), self.axis, ndim)
    }
}

impl Spec for Scan {
    fn op(&self) -> &'static str {
        self.op.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!(
            "{}:{}:axis={}:include_initial={}",
            self.op.name(),
            self.dtype.launch_key(),
            self.axis,
            self.include_initial
        )
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = one_input(self.op.name(), self.dtype, inputs)?;
        let axis = self.axis_index(input.shape.len())?;
        let mut shape = input.shape.clone();
        if self.include_initial {
            shape[axis] = shape[axis]
                .checked_add(1)
                .ok_or_else(|| KernelError::Invalid(format!("{}: the axis's extent overflows", self.op.name())))?;
        }
        let out = TensorMeta::new(self.output_dtype(), &shape);
        // one add or multiply per element read
        Cost::simple(vec![out], input.bytes()?, input.numel()?)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = ScanOp::from_name(name).ok_or_else(|| KernelError::Invalid(format!("{name}: not a scan")))?;
    attrs.only(name, &["axis", "include_initial"])?;
    let axis = attrs.int(name, "axis", None)?;
    let include_initial = attrs.bool(name, "include_initial", Some(false))?;
    Ok(Arc::new(Scan::new(op, dtype, axis, include_initial)?))
}

/// The scans' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "axis", meaning: "the axis run along (negatives from the end)", default: None },
        AttrDoc {
            name: "include_initial",
            meaning: "whether the output starts with the identity (one longer along axis)",
            default: Some("false"),
        },
    ];
    for &(_, name, summary) in &OPS {
        ops.push(OpDef {
            name,
            family: "scan",
            summary,
            inputs: &["x"],
            attrs: ATTRS,
            dtypes: |_| &NUMBERS,
            bind,
            follows_policy: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_declare_the_sums_dtype_and_a_longer_axis_with_the_initial_value() {
        let spec = Scan::new(ScanOp::Prod, DType::Uint8, -1, true).unwrap();
        let cost = spec.declare(&[TensorMeta::new(DType::Uint8, &[2, 3])]).unwrap();
        assert_eq!((cost.outputs, cost.bytes_read, cost.flops), (vec![TensorMeta::new(DType::Uint64, &[2, 4])], 6, 6));
        assert_eq!(spec.key(), "cumulative_prod:u8:axis=-1:include_initial=true");
        let sum = Scan::new(ScanOp::Sum, DType::Float16, 0, false).unwrap();
        assert_eq!(sum.declare(&[TensorMeta::new(DType::Float16, &[5])]).unwrap().outputs[0].shape, vec![5]);
        let err = sum.declare(&[TensorMeta::new(DType::Float16, &[])]).unwrap_err().to_string();
        assert!(err.contains("cumulative_sum: a 0-d input has no axis"), "{err}");
        let err = Scan::new(ScanOp::Sum, DType::Float32, 2, false).unwrap();
        assert!(err
            .declare(&[TensorMeta::new(DType::Float32, &[2, 2])])
            .unwrap_err()
            .to_string()
            .contains("out of range"));
        assert!(Scan::new(ScanOp::Sum, DType::Bool, 0, false).is_err());
        assert_eq!(lines_of("x", &[2, 3, 4, 5], 1).unwrap(), (2, 3, 20));
    }
}
