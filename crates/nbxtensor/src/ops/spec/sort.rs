//! Sorting along one axis: `sort` (the values, the input's dtype) and `argsort` (the int64
//! positions that sort them), attributes `axis` (one int, negatives from the end; default
//! -1) and `descending` (default false). Every sort is stable: equal values keep their order
//! (a `stable` argument can only ask for what is always given).
//!
//! `searchsorted(sorted, values)`, attribute `right` (default false: numpy's side "left"): for
//! each of `values` (any shape, the dtype of the 1-d `sorted`), the int64 count of elements of
//! `sorted` before it — below it (left) or not above it (right) — in the sorts' order (NaN the
//! largest); `sorted` is taken as sorted ascending in that order (not checked, as numpy).
//!
//! NaN counts as larger than every number: last ascending (numpy's sort), first descending
//! (the Array API's reference, numpy's sort of the flipped input flipped back); -0.0 and 0.0
//! are equal. A 0-d input is refused (it has no axis). Backends may bound the extent along
//! the axis they sort in one piece (the GPU's, `backend/cuda/sort.rs`), refusing a longer one
//! by name.

use super::{axis_of, one_input, require_dtype, AttrDoc, OpDef, Spec, NUMBERS};
use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// A sort along one axis, of one dtype: its values (`sort`) or their positions (`argsort`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sort {
    /// Whether the output is the positions (argsort, int64) rather than the values.
    pub indices: bool,
    /// The input's dtype.
    pub dtype: DType,
    /// The axis sorted along (negatives from the end).
    pub axis: i64,
    /// Whether the largest comes first.
    pub descending: bool,
}

impl Sort {
    /// A sort (`indices`: argsort) of `dtype` along `axis`: refused for a dtype it is not
    /// defined on.
    pub fn new(indices: bool, dtype: DType, axis: i64, descending: bool) -> Result<Sort> {
        let sort = Sort { indices, dtype, axis, descending };
        require_dtype(sort.name(), dtype, &NUMBERS)?;
        Ok(sort)
    }

    /// The op's name: `sort` or `argsort`.
    pub fn name(&self) -> &'static str {
        if self.indices {
            "argsort"
        } else {
            "sort"
        }
    }

    /// The axis as an index into an input of `ndim` dims (a 0-d input refused by name).
    pub fn axis_index(&self, ndim: usize) -> Result<usize> {
        if ndim == 0 {
            return Err(KernelError::Invalid(format!("{}: a 0-d input has no axis to sort along", self.name())));
        }
        axis_of(self.name(), self.axis, ndim)
    }
}

impl Spec for Sort {
    fn op(&self) -> &'static str {
        self.name()
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("{}:{}:axis={}:descending={}", self.name(), self.dtype.launch_key(), self.axis, self.descending)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let input = one_input(self.name(), self.dtype, inputs)?;
        let axis = self.axis_index(input.shape.len())?;
        let out = TensorMeta::new(if self.indices { DType::Int64 } else { self.dtype }, &input.shape);
        // about n·log2(n) comparisons per line of n
        let n = input.numel()?;
        let per_line = u64::from(64 - (input.shape[axis].max(1) as u64).leading_zeros());
        Cost::simple(vec![out], input.bytes()?, n.saturating_mul(per_line))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &["axis", "descending"])?;
    let axis = attrs.int(name, "axis", Some(-1))?;
    let descending = attrs.bool(name, "descending", Some(false))?;
    Ok(Arc::new(Sort::new(name == "argsort", dtype, axis, descending)?))
}

/// A binary search of values in a sorted 1-d tensor, of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchSorted {
    /// The dtype of both inputs.
    pub dtype: DType,
    /// Whether equal elements count as before a value (numpy's side "right").
    pub right: bool,
}

impl SearchSorted {
    /// A search of `dtype`: refused for a dtype it is not defined on.
    pub fn new(dtype: DType, right: bool) -> Result<SearchSorted> {
        require_dtype("searchsorted", dtype, &NUMBERS)?;
        Ok(SearchSorted { dtype, right })
    }
}

impl Spec for SearchSorted {
    fn op(&self) -> &'static str {
        "searchsorted"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        format!("searchsorted:{}:right={}", self.dtype.launch_key(), self.right)
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        let [sorted, values] = inputs else {
            return Err(KernelError::Invalid(format!(
                "searchsorted: takes 2 inputs (sorted, values), got {}",
                inputs.len()
            )));
        };
        super::same_dtype("searchsorted", self.dtype, &[sorted, values])?;
        if sorted.shape.len() != 1 {
            return Err(KernelError::Invalid(format!(
                "searchsorted: the sorted input must be 1-d, got shape {:?}",
                sorted.shape
            )));
        }
        let out = TensorMeta::new(DType::Int64, &values.shape);
        // about log2(n) + 1 probes of the sorted input per value
        let probes = u64::from(64 - (sorted.shape[0] as u64).leading_zeros()) + 1;
        let count = values.numel()?;
        let itemsize = values.bytes()? / count.max(1);
        let read = values.bytes()?.saturating_add(count.saturating_mul(probes).saturating_mul(itemsize));
        Cost::simple(vec![out], read, count.saturating_mul(probes))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

fn bind_search(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &["right"])?;
    Ok(Arc::new(SearchSorted::new(dtype, attrs.bool(name, "right", Some(false))?)?))
}

/// The sorts' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "axis", meaning: "the axis sorted along (negatives from the end)", default: Some("-1") },
        AttrDoc { name: "descending", meaning: "whether the largest comes first", default: Some("false") },
    ];
    for (name, summary) in [
        ("sort", "the values sorted along axis, stable; NaN counts as the largest"),
        ("argsort", "the int64 positions that sort the values along axis, stable; NaN counts as the largest"),
    ] {
        ops.push(OpDef {
            name,
            family: "sort",
            summary,
            inputs: &["x"],
            attrs: ATTRS,
            dtypes: |_| &NUMBERS,
            bind,
            follows_policy: false,
        });
    }
    ops.push(OpDef {
        name: "searchsorted",
        family: "sort",
        summary: "the int64 positions where values would enter a sorted 1-d tensor (binary search)",
        inputs: &["sorted", "values"],
        attrs: &[AttrDoc {
            name: "right",
            meaning: "whether equal elements count as before a value (numpy's side 'right')",
            default: Some("false"),
        }],
        dtypes: |_| &NUMBERS,
        bind: bind_search,
        follows_policy: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_declare_their_outputs_and_refuse_a_missing_axis() {
        let spec = Sort::new(true, DType::Float16, 0, true).unwrap();
        let cost = spec.declare(&[TensorMeta::new(DType::Float16, &[8, 3])]).unwrap();
        assert_eq!((cost.outputs, cost.bytes_read, cost.flops), (vec![TensorMeta::new(DType::Int64, &[8, 3])], 48, 96));
        assert_eq!(spec.key(), "argsort:fp16:axis=0:descending=true");
        let sort = Sort::new(false, DType::Int8, -1, false).unwrap();
        assert_eq!(sort.declare(&[TensorMeta::new(DType::Int8, &[0])]).unwrap().outputs[0].dtype, DType::Int8);
        assert!(sort
            .declare(&[TensorMeta::new(DType::Int8, &[])])
            .unwrap_err()
            .to_string()
            .contains("sort: a 0-d input"));
        assert!(Sort::new(false, DType::Bool, 0, false)
            .unwrap_err()
            .to_string()
            .contains("sort is not defined on bool"));
    }

    #[test]
    fn searchsorted_declares_one_index_per_value_and_refuses_a_sorted_input_of_two_dims() {
        let spec = SearchSorted::new(DType::Int32, true).unwrap();
        let cost =
            spec.declare(&[TensorMeta::new(DType::Int32, &[7]), TensorMeta::new(DType::Int32, &[2, 5])]).unwrap();
        // 7 elements: 3 halvings and a last probe, per value
        assert_eq!((cost.outputs, cost.flops), (vec![TensorMeta::new(DType::Int64, &[2, 5])], 40));
        assert_eq!(cost.bytes_read, 40 + 40 * 4);
        let err = spec.declare(&[TensorMeta::new(DType::Int32, &[2, 2]), TensorMeta::new(DType::Int32, &[3])]);
        assert!(err.unwrap_err().to_string().contains("must be 1-d"));
        let err = spec.declare(&[TensorMeta::new(DType::Int32, &[2]), TensorMeta::new(DType::Int64, &[3])]);
        assert!(err.unwrap_err().to_string().contains("searchsorted: operands are int32 and int64"));
        assert_eq!(spec.key(), "searchsorted:i32:right=true");
    }
}
