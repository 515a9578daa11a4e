//! Tensors made from attributes alone: `iota` (attributes `n`, the count, required; `start`,
//! default 0; `step`, default 1; `dtype`, what a call by name of no inputs is dispatched on),
//! the 1-d tensor `start + step · i` for
//! `i` in `0..n` — what `arange`, `linspace`, `eye`, `tril` and `triu` are built from.
//!
//! Floats (float32, float16, bfloat16, float64): each value is computed in float64 as
//! `start + i · step` (no fused multiply-add) and rounded once to the dtype, numpy's arange
//! semantics. Integers: `start` and `step` are integers (a float is refused by name), the
//! value is computed in 64-bit wrapping arithmetic and wrapped to the dtype (its low bits).
//! An op of no inputs: a call runs on the device the caller names (the host by name).

use super::{require_dtype, AttrDoc, OpDef, Spec, NUMBERS};
use crate::dtype::DType;
use crate::kernel::{AttrValue, Attrs, Cost, KernelError, Result, TensorMeta};
use std::sync::Arc;

/// A start or a step of an iota: an integer or a float.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Term {
    /// An integer (the only kind an integer iota takes).
    Int(i64),
    /// A float (read as float64).
    Float(f64),
}

impl From<i64> for Term {
    fn from(value: i64) -> Term {
        Term::Int(value)
    }
}

impl From<i32> for Term {
    fn from(value: i32) -> Term {
        Term::Int(i64::from(value))
    }
}

impl From<f64> for Term {
    fn from(value: f64) -> Term {
        Term::Float(value)
    }
}

impl Term {
    /// The value as float64 (an integer converted to the nearest float64).
    pub fn as_f64(self) -> f64 {
        match self {
            Term::Int(v) => v as f64,
            Term::Float(v) => v,
        }
    }
}

/// `start + step · i` for `i` in `0..n`, of one dtype.
#[derive(Clone, Debug, PartialEq)]
pub struct Iota {
    /// The output's dtype.
    pub dtype: DType,
    /// The count of values.
    pub n: i64,
    /// The first value (a float for the float dtypes, an integer for the integers).
    pub start: Term,
    /// The difference of consecutive values (as `start`).
    pub step: Term,
}

impl Iota {
    /// `n` values of `dtype` from `start` by `step`: refused for a negative `n`, a dtype it
    /// is not defined on, or a float start or step of an integer dtype (by name).
    pub fn new(dtype: DType, n: i64, start: Term, step: Term) -> Result<Iota> {
        require_dtype("iota", dtype, &NUMBERS)?;
        if n < 0 {
            return Err(KernelError::Invalid(format!("iota: the count {n} is negative")));
        }
        let (start, step) = if dtype.is_float() {
            (Term::Float(start.as_f64()), Term::Float(step.as_f64()))
        } else {
            for (name, term) in [("start", start), ("step", step)] {
                if let Term::Float(v) = term {
                    return Err(KernelError::Invalid(format!(
                        "iota: an iota of {dtype} takes an integer {name}, got {v}"
                    )));
                }
            }
            (start, step)
        };
        Ok(Iota { dtype, n, start, step })
    }

    /// The float64 `(start, step)` of a float iota (an integer one's as floats).
    pub fn float_terms(&self) -> (f64, f64) {
        (self.start.as_f64(), self.step.as_f64())
    }

    /// The `(start, step)` of an integer iota (a float one's truncated: never asked for).
    pub fn int_terms(&self) -> (i64, i64) {
        let int = |t: Term| match t {
            Term::Int(v) => v,
            Term::Float(v) => v as i64,
        };
        (int(self.start), int(self.step))
    }
}

impl Spec for Iota {
    fn op(&self) -> &'static str {
        "iota"
    }

    fn dtype(&self) -> DType {
        self.dtype
    }

    fn key(&self) -> String {
        let term = |t: Term| match t {
            Term::Int(v) => v.to_string(),
            Term::Float(v) => format!("{v:?}"),
        };
        format!("iota:{}:n={}:start={}:step={}", self.dtype.launch_key(), self.n, term(self.start), term(self.step))
    }

    fn declare(&self, inputs: &[TensorMeta]) -> Result<Cost> {
        if !inputs.is_empty() {
            return Err(KernelError::Invalid(format!("iota: takes no inputs, got {}", inputs.len())));
        }
        let out = TensorMeta::new(self.dtype, &[self.n]);
        // checked: the count's bytes must fit 64 bits
        out.bytes()?;
        // a multiply and an add per value
        Cost::simple(vec![out], 0, (self.n as u64).saturating_mul(2))
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A start or step attribute: an int or a float; `default` when absent.
fn term(attrs: &Attrs, name: &str, default: i64) -> Result<Term> {
    match attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| v) {
        None => Ok(Term::Int(default)),
        Some(AttrValue::Int(v)) => Ok(Term::Int(*v)),
        Some(AttrValue::Float(v)) => Ok(Term::Float(*v)),
        Some(other) => {
            Err(KernelError::Invalid(format!("iota: attribute '{name}' must be an int or a float, got {other:?}")))
        }
    }
}

fn bind(name: &'static str, dtype: DType, attrs: &Attrs) -> Result<Arc<dyn Spec>> {
    attrs.only(name, &["n", "start", "step", "dtype"])?;
    // the attribute dispatches a call of no inputs; bound to a dtype, it may only repeat it
    if attrs.iter().any(|(n, _)| n == "dtype") {
        let named = attrs.dtype(name, "dtype")?;
        if named != dtype {
            return Err(KernelError::Invalid(format!(
                "iota: attribute 'dtype' is {named}, the op was bound to {dtype}"
            )));
        }
    }
    let n = attrs.int(name, "n", None)?;
    Ok(Arc::new(Iota::new(dtype, n, term(attrs, "start", 0)?, term(attrs, "step", 1)?)?))
}

/// The creation ops' entries in the catalogue.
pub(super) fn define(ops: &mut Vec<OpDef>) {
    const ATTRS: &[AttrDoc] = &[
        AttrDoc { name: "n", meaning: "the count of values", default: None },
        AttrDoc {
            name: "start",
            meaning: "the first value (an int, or a float for the float dtypes)",
            default: Some("0"),
        },
        AttrDoc { name: "step", meaning: "the difference of consecutive values", default: Some("1") },
        AttrDoc {
            name: "dtype",
            meaning: "the output's dtype: what a call of no inputs is dispatched on",
            default: Some("the dtype the op is bound to"),
        },
    ];
    ops.push(OpDef {
        name: "iota",
        family: "create",
        summary: "start + step * i for i in 0..n (floats computed in float64, rounded once)",
        inputs: &[],
        attrs: ATTRS,
        dtypes: |_| &NUMBERS,
        bind,
        follows_policy: false,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iota_declares_its_values_and_refuses_bad_terms_by_name() {
        let spec = Iota::new(DType::Float16, 5, Term::Int(1), Term::Float(0.5)).unwrap();
        assert_eq!(spec.float_terms(), (1.0, 0.5));
        let cost = spec.declare(&[]).unwrap();
        assert_eq!(
            (cost.outputs, cost.bytes_written, cost.flops),
            (vec![TensorMeta::new(DType::Float16, &[5])], 10, 10)
        );
        assert_eq!(spec.key(), "iota:fp16:n=5:start=1.0:step=0.5");
        let err = Iota::new(DType::Int32, 3, Term::Float(0.5), Term::Int(1)).unwrap_err().to_string();
        assert!(err.contains("integer start, got 0.5"), "{err}");
        assert!(Iota::new(DType::Int8, -1, Term::Int(0), Term::Int(1)).unwrap_err().to_string().contains("negative"));
        assert!(Iota::new(DType::Bool, 1, Term::Int(0), Term::Int(1)).is_err());
        let huge = Iota::new(DType::Int64, i64::MAX, Term::Int(0), Term::Int(1)).unwrap();
        assert!(huge.declare(&[]).is_err(), "bytes past 64 bits are refused");
        let attrs = Attrs::new().with("n", AttrValue::Int(2)).with("dtype", AttrValue::DType(DType::Int8));
        assert!(bind("iota", DType::Int16, &attrs).unwrap_err().to_string().contains("bound to int16"));
    }
}
