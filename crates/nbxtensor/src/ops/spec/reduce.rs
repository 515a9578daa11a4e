//! Reductions along axes: sum, prod, mean, max, min, all, any (attributes `axes`, a list of
//! ints with negatives from the end, absent for every axis; `keepdim`, default false), argmax
//! and argmin (attribute `axis`, one int, required; `keepdim`; int64 output, the first maximum
//! or minimum, a NaN counting as either, as in numpy).
//!
//! Floats (float32, float16, bfloat16, float64): sum, prod and mean accumulate in float64, then
//! round once to the dtype; max and min propagate NaN. Integers: sum and prod wrap in int64
//! (signed inputs) or uint64 (unsigned), which is their output dtype, as numpy's; max, min,
//! argmax and argmin compare exactly; mean takes the floats only. all and any take every real
//! dtype and bool, read as truth (nonzero is true, NaN too) and give bool (of no elements:
//! true and false). max, min, argmax and argmin of no elements are refused.

use super::{one_input, require_dtype, AttrDoc, OpDef, Spec};
use crate::dtype::DType;
use crate::facts::Kind;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The mean.
    Mean,
    /// The maximum.
    Max,
    /// The minimum.
    Min,
    /// The index of the first maximum.
    ArgMax,
    /// The index of the first minimum.
    ArgMin,
    /// Whether every element is true (nonzero).
    All,
    /// Whether any element is true (nonzero).
    Any,
}

const OPS: [(ReduceOp, &str, &str); 9] = [
    (ReduceOp::Sum, "sum", "the sum over axes (floats in float64; integers wrap in 64 bits)"),
    (ReduceOp::Prod, "prod", "the product over axes (floats in float64; integers wrap in 64 bits)"),
    (ReduceOp::Mean, "mean", "the mean over axes (float64 accumulation)"),
    (ReduceOp::Max, "max", "the maximum over axes; NaN when one is NaN"),
    (ReduceOp::Min, "min", "the minimum over axes; NaN when one is NaN"),
    (ReduceOp::ArgMax, "argmax", "the int64 index of the first maximum along axis"),
    (ReduceOp::ArgMin, "argmin", "the int64 index of the first minimum along axis"),
    (ReduceOp::All, "all", "whether every element over axes is nonzero (bool)"),
    (ReduceOp::Any, "any", "whether any element over axes is nonzero (bool)"),
];

impl ReduceOp {
    /// The op's name.
    pub fn name(self) -> &'static str {
        OPS.iter().find(|e| e.0 == self).map(|e| e.1).expect("every reduction has an entry")
    }

    /// Every reduction, in the catalogue's order.
    pub fn every() -> impl Iterator<Item = ReduceOp> {
        OPS.iter().map(|e| e.0)
    }

    /// The reduction of a name.
    pub fn from_name(name: &str) -> Option<ReduceOp> {
        OPS.iter().find(|e| e.1 == name).map(|e| e.0)
    }

    /// The dtypes it takes: mean the floats and the complex dtypes, sum and prod the numbers
    /// (complex included), all and any every real dtype and bool, the others the floats and the
    /// integers.
    pub fn dtypes(self) -> &'static [DType] {
        match self {
            ReduceOp::Mean => &super::INEXACT,
            ReduceOp::Sum | ReduceOp::Prod => &super::ARITHMETIC,
            ReduceOp::All | ReduceOp::Any => &super::EVERYTHING,
            _ => &super::NUMBERS,
        }
    }

    /// Whether it searches one axis for an index (argmax, argmin).
    pub fn takes_one_axis(self) -> bool {
        matches!(self, ReduceOp::ArgMax | ReduceOp::ArgMin)
    }
}

/// The reduced dims of a tensor of `ndim` dims, one flag each; `axes` of `None` is every
/// axis. An axis out of range or given twice is refused naming `op`.
pub fn normalize_axes(op: &str, axes: Option<&[i64]>, ndim: usize) -> Result<Vec<bool>> {
    let mut reduced = vec![axes.is_none(); ndim];
    for &axis in axes.unwrap_or(&[]) {
        let resolved = if axis < 0 { axis + ndim as i64 } else { axis };
        if resolved < 0 || resolved >= ndim as i64 {
            return Err(KernelError::Invalid(format!("{op}: axis {axis} is out of range for {ndim} dims")));
        }
        if std::mem::replace(&mut reduced[resolved as usize], true) {
            return Err(KernelError::Invalid(format!("{op}: axis {axis} is given twice")));
        }
    }
    Ok(reduced)
}

/// The output shape: reduced dims dropped, or kept as 1 with `keepdim`.
pub fn reduced_shape(shape: &[i64], reduced: &[bool], keepdim: bool) -> Vec<i64> {
    shape
        .iter()
        .zip(reduced)
        .filter_map(|(&extent, &r)| match (r, keepdim) {
            (false, _) => Some(extent),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// A reduction on one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Reduce {
    /// The reduction.
    pub op: ReduceOp,
    /// The input's dtype.
    pub dtype: DType,
    /// The axes reduced (`None`: every axis; argmax and argmin: one).
    pub axes: Option<Vec<i64>>,
    /// Whether reduced dims stay, of extent 1.
    pub keepdim: bool,
}

impl Reduce {
    /// `op` of `dtype` over `axes` (`None`: every axis; argmax and argmin take exactly one).
    pub fn new(op: ReduceOp, dtype: DType, axes: Option<Vec<i64>>, keepdim: bool) -> Result<Reduce> {
        require_dtype(op.name(), dtype, op.dtypes())?;
        if op.takes_one_axis() && axes.as_ref().map(Vec::len) != Some(1) {
            return Err(KernelError::Invalid(format!("{}: takes one axis", op.name())));
        }
        Ok(Reduce { op, dtype, axes, keepdim })
    }

    /// The reduced dims of an input of `ndim` dims.
    pub fn reduced(&self, ndim: usize) -> Result<Vec<bool>> {
        normalize_axes(self.op.name(), self.axes.as_deref(), ndim)
    }

    /// The output's dtype: int64 for argmax, argmin and signed sums and products, uint64 for
    /// unsigned ones, bool for all and any.
    pub fn output_dtype(&self) -> DType {
        match (self.op, self.dtype.kind()) {
            (ReduceOp::ArgMax | ReduceOp::ArgMin, _) => DType::Int64,
            (ReduceOp::All | ReduceOp::Any, _) => DType::Bool,
            (ReduceOp::Sum | ReduceOp::Prod, Kind::Int) => DType::Int64,
            (ReduceOp::Sum | ReduceOp::Prod, Kind::Uint) => DType::Uint64,
            _ => self.dtype,
        }
    }
}

impl Spec for Reduce {
    fn op(&self) -> &'static str {
        self.op.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let axes = match &self.axes {
            Some(axes) => format!("{axes:?}"),
            None => "all".to_string(),
        };
        format!("{}:{}:axes={axes}:keepdim={}", self.op.name(), self.dtype.launch_key(), self.keepdim)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let name = self.op.name();
        let input = one_input(name, self.dtype, inputs)?;
        let reduced = self.reduced(input.shape.len())?;
        let shape = reduced_shape(&input.shape, &reduced, self.keepdim);
        let out = TensorMeta::new(self.output_dtype(), &shape);
        let empty = input.shape.iter().zip(&reduced).any(|(&e, &r)| r && e == 0);
        let no_identity = matches!(self.op, ReduceOp::Max | ReduceOp::Min | ReduceOp::ArgMax | ReduceOp::ArgMin);
        if empty && no_identity && out.numel()? > 0 {
            return Err(KernelError::Invalid(format!(
                "{name}: the reduced axes of shape {:?} hold no elements, and {name} has no identity",
                input.shape
            )));
        }
        Cost::simple(vec![out], input.bytes()?, super::flops_of(self.dtype, input.numel()?, 1))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let op = ReduceOp::from_name(name).ok_or_else(|| KernelError::Invalid(format!("{name}: not a reduction")))?;
    let axes = if op.takes_one_axis() {
        attrs.only(name, &["axis", "keepdim"])?;
        Some(vec![attrs.int(name, "axis", None)?])
    } else {
        attrs.only(name, &["axes", "keepdim"])?;
        match attrs.iter().any(|(n, _)| n == "axes") {
            true => Some(attrs.ints(name, "axes", None)?),
            false => None,
        }
    };
    let keepdim = attrs.bool(name, "keepdim", Some(false))?;
    Ok(Arc::new(Reduce::new(op, dtype, axes, keepdim)?))
}

/// The reductions' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const AXES: &[AttrDoc] = &[
        AttrDoc { name: "axes", meaning: "the axes reduced (negatives from the end)", default: Some("every axis") },
        AttrDoc { name: "keepdim", meaning: "whether reduced dims stay, of extent 1", default: Some("false") },
    ];
    const AXIS: &[AttrDoc] = &[
        AttrDoc { name: "axis", meaning: "the axis searched (negatives from the end)", default: None },
        AttrDoc { name: "keepdim", meaning: "whether the reduced dim stays, of extent 1", default: Some("false") },
    ];
    for &(op, name, summary) in &OPS {
        ops.push(OpDef {
            name,
            family: "reduce",
            summary,
            inputs: &["x"],
            attrs: if op.takes_one_axis() { AXIS } else { AXES },
            dtypes: |name| ReduceOp::from_name(name).map(ReduceOp::dtypes).unwrap_or_default(),
            bind,
            follows_policy: true,
        });
    }
}
