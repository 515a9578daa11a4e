//! Op specs: what each op means, written once above every backend.
//!
//! A spec is an op bound to the dtype it is dispatched on and to its attributes, parsed once
//! into a typed struct (their defaults are written here and nowhere else). It checks its
//! inputs and declares the launch's [`Cost`] — outputs, workspace, scratch, bytes, flops and
//! in-place pairs — before anything runs. A backend only registers a launch per (op, dtype)
//! (`backend::LaunchTable`) and may refine the workspace through a hook; it never re-derives
//! what the op means.
//!
//! The [`catalogue`] lists every op: its family, inputs, attributes and the dtypes it is
//! defined for. One file per family holds its specs:
//!
//! | file | ops |
//! | --- | --- |
//! | [`unary`] | neg, abs, exp, log, the trigonometric and hyperbolic functions, rounding, tests (isnan …), logical_not, bitwise_invert, clip, real, imag, conj … |
//! | [`binary`] | add, sub, mul, div, pow, maximum, minimum, remainder, floor_divide, atan2 …, the comparisons, the logical and bitwise ops |
//! | [`select`] | where, masked_fill |
//! | [`cast`] | cast, copy |
//! | [`gather`] | embedding, index_select, concat |
//! | [`reduce`] | sum, prod, mean, max, min, argmax, argmin, all, any |
//! | [`create`] | iota |
//! | [`scan`] | cumulative_sum, cumulative_prod |
//! | [`sort`] | sort, argsort, searchsorted |
//! | [`rows`] | softmax, log_softmax, layer_norm, rms_norm, add_rms_norm, add_layer_norm, rope |
//! | [`matmul`] | matmul, linear, pack_linear, linear_packed |
//! | [`attention`] | sdpa |
//! | [`decode`] | decode_attention, kv_cache_write |
//! | [`sample`] | sample |
//! | [`quant`] | matmul_int4, pack_int4, matmul_int8, pack_int8 |
//! | [`linalg`] | cholesky, qr, svd, svdvals, eigh, eigvalsh, solve, inv, det, slogdet |
//!
//! ```
//! use nbxtensor::ops::spec;
//! use nbxtensor::kernel::{Attrs, TensorMeta};
//! use nbxtensor::DType;
//! let softmax = spec::bind("softmax", DType::Float32, &Attrs::new())?;   // axis defaults to -1
//! let cost = softmax.declare(&[TensorMeta::new(DType::Float32, &[4, 8])])?;
//! assert_eq!(cost.outputs, vec![TensorMeta::new(DType::Float32, &[4, 8])]);
//! assert_eq!(softmax.key(), "softmax:fp32:axis=-1");
//! # Ok::<(), nbxtensor::kernel::KernelError>(())
//! ```

pub mod attention;
pub mod binary;
pub mod cast;
mod checks;
pub mod create;
pub mod decode;
pub mod gather;
pub mod linalg;
pub mod matmul;
pub mod quant;
pub mod reduce;
pub mod rows;
pub mod sample;
pub mod scan;
pub mod select;
pub mod sort;
pub mod unary;

pub use checks::{axis_of, broadcast_shape, one_input, same_dtype};

use crate::dtype::DType;
use crate::kernel::{Attrs, Cost, KernelError, Result, TensorMeta};
use std::any::Any;
use std::fmt::Debug;
use std::sync::{Arc, OnceLock};

/// An op bound to its dispatch dtype and parsed attributes: it checks inputs and declares the
/// cost of a launch. Backends downcast it to the family's struct to read the attributes.
pub trait Spec: Any + Send + Sync + Debug + SameSpec {
    /// The op's name (`"softmax"`).
    fn op(&self) -> &'static str;

    /// The dtype the launch is dispatched on (the column of the backends' launch tables).
    fn dtype(&self) -> DType;

    /// The launch key: op, dtype and attributes, as a launch observer records it.
    fn key(&self) -> String;

    /// What a launch on inputs of these shapes and dtypes costs; refused (naming the op and
    /// the operands) when the inputs do not fit the op.
    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost>;

    /// Whether its flops run on the device's matrix unit (pricing picks the matrix peak).
    fn uses_matrix_unit(&self) -> bool {
        false
    }

    /// The spec as `Any`, for a backend to read its family's attributes.
    fn as_any(&self) -> &dyn Any;
}

/// Equality across the families: whether another spec is the same struct with equal
/// attributes (what lets an op call reuse the kernel of an equal call). Every `PartialEq`
/// spec has it.
pub trait SameSpec {
    /// Whether `other` (a spec as `Any`) equals this one.
    fn same(&self, other: &dyn Any) -> bool;
}

impl<S: PartialEq + Any> SameSpec for S {
    fn same(&self, other: &dyn Any) -> bool {
        other.downcast_ref::<S>() == Some(self)
    }
}

impl dyn Spec {
    /// The spec as the family's struct `S`; refused (naming the op) when it is another one
    /// (a backend registered a launch for the wrong family).
    pub fn downcast<S: Spec>(&self) -> Result<&S> {
        self.as_any().downcast_ref::<S>().ok_or_else(|| {
            KernelError::Invalid(format!(
                "{}: the launch expected a {} spec (a backend registered it for the wrong family)",
                self.op(),
                std::any::type_name::<S>()
            ))
        })
    }
}

/// One attribute of an op, as documented: its name, what it holds and its default (`None`:
/// required).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AttrDoc {
    /// The attribute's name.
    pub name: &'static str,
    /// What it holds.
    pub meaning: &'static str,
    /// Its default, as text (`None`: the attribute is required).
    pub default: Option<&'static str>,
}

/// An op of the catalogue: its name, family, inputs, attributes, the dtypes it is defined
/// for (its dispatch dtype: the first input's), and how a call's attributes bind it.
pub struct OpDef {
    /// The op's name.
    pub name: &'static str,
    /// The spec family (the file under `ops/spec/`).
    pub family: &'static str,
    /// What it computes, in one line.
    pub summary: &'static str,
    /// The inputs, by role, in order (a trailing `?` marks an optional one, `*` a list).
    pub inputs: &'static [&'static str],
    /// Its attributes.
    pub attrs: &'static [AttrDoc],
    /// The dtypes it is defined for (given the op's name: a family's function serves its ops).
    pub dtypes: fn(&'static str) -> &'static [DType],
    /// Binds the op to a dispatch dtype and a call's attributes (unknown or mistyped ones
    /// refused by name).
    pub bind: fn(&'static str, DType, &Attrs) -> Result<Arc<dyn Spec>>,
    /// Whether a precision policy casts its float inputs (false where the op's inputs have
    /// dtypes of their own, as a packed weight's scales).
    pub follows_policy: bool,
}

impl std::fmt::Debug for OpDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpDef").field("name", &self.name).field("family", &self.family).finish()
    }
}

/// Every op, in the order of the families.
pub fn catalogue() -> &'static [OpDef] {
    static CATALOGUE: OnceLock<Vec<OpDef>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        let mut ops = Vec::new();
        unary::define(&mut ops);
        binary::define(&mut ops);
        select::define(&mut ops);
        cast::define(&mut ops);
        gather::define(&mut ops);
        reduce::define(&mut ops);
        create::define(&mut ops);
        scan::define(&mut ops);
        sort::define(&mut ops);
        rows::define(&mut ops);
        matmul::define(&mut ops);
        attention::define(&mut ops);
        decode::define(&mut ops);
        sample::define(&mut ops);
        quant::define(&mut ops);
        linalg::define(&mut ops);
        ops
    })
}

/// The op named `name`; an unknown name is refused, listing none but saying where to look.
pub fn op(name: &str) -> Result<&'static OpDef> {
    catalogue().iter().find(|d| d.name == name).ok_or_else(|| {
        KernelError::Invalid(format!("unknown op '{name}': the ops are listed by ops::spec::catalogue()"))
    })
}

impl OpDef {
    /// The dtypes the op is defined for.
    pub fn dtypes(&self) -> &'static [DType] {
        (self.dtypes)(self.name)
    }
}

/// `name` bound to `dtype` and `attrs`: refused when the op is unknown, is not defined for
/// `dtype`, or is given an unknown or mistyped attribute.
pub fn bind(name: &str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    let def = op(name)?;
    (def.bind)(def.name, dtype, attrs)
}

/// Refuses `dtype` for `op` when it is not in `dtypes` (the op's dtype rule).
pub fn require_dtype(op: &str, dtype: DType, dtypes: &[DType]) -> Result<()> {
    if dtypes.contains(&dtype) {
        return Ok(());
    }
    let names: Vec<&str> = dtypes.iter().map(|d| d.name()).collect();
    Err(KernelError::Invalid(format!("{op} is not defined on {dtype} (it takes {})", names.join(", "))))
}

/// The float dtypes of the arithmetic ops: float32, float16, bfloat16 (computed in float32)
/// and float64 (computed in float64).
pub const REALS: [DType; 4] = [DType::Float32, DType::Float16, DType::Bfloat16, DType::Float64];

/// The float dtypes stored in their dtype and computed in float32.
pub const FLOATS: [DType; 3] = [DType::Float32, DType::Float16, DType::Bfloat16];

/// The signed integer dtypes.
pub const SIGNED: [DType; 4] = [DType::Int8, DType::Int16, DType::Int32, DType::Int64];

/// The integer dtypes, signed then unsigned.
pub const INTEGERS: [DType; 8] =
    [DType::Int8, DType::Int16, DType::Int32, DType::Int64, DType::Uint8, DType::Uint16, DType::Uint32, DType::Uint64];

/// The dtypes of index tensors.
pub const INDEX_DTYPES: [DType; 2] = [DType::Int32, DType::Int64];

/// The real numbers: the floats, then the integers.
pub const NUMBERS: [DType; 12] = joined(&[&REALS, &INTEGERS]);

/// The integers and bool (the bitwise ops' dtypes).
pub const BITS: [DType; 9] = joined(&[&INTEGERS, &[DType::Bool]]);

/// The floats, the integers and bool.
pub const EVERYTHING: [DType; 13] = joined(&[&REALS, &INTEGERS, &[DType::Bool]]);

/// The complex dtypes: complex64 (two float32 parts) and complex128 (two float64 parts).
pub const COMPLEX: [DType; 2] = [DType::Complex64, DType::Complex128];

/// The floats and the complex dtypes (the ops of floating-point arithmetic).
pub const INEXACT: [DType; 6] = joined(&[&REALS, &COMPLEX]);

/// The real numbers and the complex ones.
pub const ARITHMETIC: [DType; 14] = joined(&[&NUMBERS, &COMPLEX]);

/// The floats, the integers, bool and the complex dtypes.
pub const EVERY_NUMBER: [DType; 15] = joined(&[&EVERYTHING, &COMPLEX]);

/// How many operations of its part one operation on a complex element counts in a declared
/// cost (a complex product is four real products and two sums).
pub const COMPLEX_OPS: u64 = 4;

/// The declared operations of `per_element` operations on each of `count` elements of
/// `dtype` (a complex element counts [`COMPLEX_OPS`] times as many).
pub fn flops_of(dtype: DType, count: u64, per_element: u64) -> u64 {
    let scale = if dtype.kind() == crate::facts::Kind::Complex { COMPLEX_OPS } else { 1 };
    count.saturating_mul(per_element).saturating_mul(scale)
}

/// Every dtype a tensor can hold elements of (a per-element width).
pub fn sized() -> &'static [DType] {
    static SIZED: OnceLock<Vec<DType>> = OnceLock::new();
    SIZED.get_or_init(|| DType::ALL.into_iter().filter(|d| d.itemsize().is_ok()).collect())
}

/// `lists` one after the other, in a list of `N` (a compile-time error when `N` is not their
/// total length).
const fn joined<const N: usize>(lists: &[&[DType]]) -> [DType; N] {
    let mut out = [DType::Bool; N];
    let (mut at, mut list) = (0, 0);
    while list < lists.len() {
        let mut i = 0;
        while i < lists[list].len() {
            out[at] = lists[list][i];
            at += 1;
            i += 1;
        }
        list += 1;
    }
    assert!(at == N, "the lists' lengths add up to N");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_is_named_once_and_binds_on_each_of_its_dtypes() {
        let mut names: Vec<&str> = catalogue().iter().map(|d| d.name).collect();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "an op is defined twice");
        for def in catalogue() {
            for &dtype in (def.dtypes)(def.name) {
                // ops with required attributes are bound with a value for them
                let attrs = def.attrs.iter().filter(|a| a.default.is_none()).fold(Attrs::new(), |attrs, a| {
                    let value = match a.name {
                        "dtype" => crate::kernel::AttrValue::DType(dtype),
                        "value" if dtype == DType::Bool => crate::kernel::AttrValue::Bool(false),
                        _ => crate::kernel::AttrValue::Int(0),
                    };
                    attrs.with(a.name, value)
                });
                let spec = (def.bind)(def.name, dtype, &attrs).unwrap_or_else(|e| panic!("{}: {e}", def.name));
                assert_eq!((spec.op(), spec.dtype()), (def.name, dtype));
            }
        }
    }

    #[test]
    fn unknown_ops_dtypes_and_attributes_are_named() {
        let err = bind("softmaxx", DType::Float32, &Attrs::new()).unwrap_err().to_string();
        assert!(err.contains("unknown op 'softmaxx'"), "{err}");
        let err = bind("softmax", DType::Int8, &Attrs::new()).unwrap_err().to_string();
        assert!(err.contains("softmax") && err.contains("int8"), "{err}");
        let attrs = Attrs::new().with("axes", crate::kernel::AttrValue::Int(0));
        let err = bind("softmax", DType::Float32, &attrs).unwrap_err().to_string();
        assert!(err.contains("unknown attribute 'axes'"), "{err}");
    }
}
