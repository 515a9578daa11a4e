//! Attributes of an op (axis, eps, a fill value …): plain data, read by each kernel's
//! constructor, which refuses a missing or mistyped attribute by name.

use super::{KernelError, Result};
use crate::dtype::DType;
use std::collections::BTreeMap;

/// One attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrValue {
    /// An integer (an axis, a count).
    Int(i64),
    /// A float (eps, a scale, a fill value).
    Float(f64),
    /// A flag.
    Bool(bool),
    /// A list of integers (axes, a shape).
    Ints(Vec<i64>),
    /// A dtype (a cast's target).
    DType(DType),
}

/// The attributes of one op call, by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Attrs(BTreeMap<String, AttrValue>);

impl Attrs {
    /// No attributes.
    pub fn new() -> Attrs {
        Attrs::default()
    }

    /// These attributes with `name` set to `value`.
    pub fn with(mut self, name: &str, value: AttrValue) -> Attrs {
        self.0.insert(name.to_string(), value);
        self
    }

    /// Every attribute, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &AttrValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    fn get(&self, op: &str, name: &str) -> Result<&AttrValue> {
        self.0.get(name).ok_or_else(|| KernelError::Invalid(format!("{op}: missing attribute '{name}'")))
    }

    fn mistyped(op: &str, name: &str, wanted: &str, got: &AttrValue) -> KernelError {
        KernelError::Invalid(format!("{op}: attribute '{name}' must be {wanted}, got {got:?}"))
    }

    /// An integer attribute; `default` when absent (None: required).
    pub fn int(&self, op: &str, name: &str, default: Option<i64>) -> Result<i64> {
        match (self.0.get(name), default) {
            (None, Some(d)) => Ok(d),
            _ => match self.get(op, name)? {
                AttrValue::Int(v) => Ok(*v),
                other => Err(Self::mistyped(op, name, "an int", other)),
            },
        }
    }

    /// A float attribute (an int is read as a float); `default` when absent.
    pub fn float(&self, op: &str, name: &str, default: Option<f64>) -> Result<f64> {
        match (self.0.get(name), default) {
            (None, Some(d)) => Ok(d),
            _ => match self.get(op, name)? {
                AttrValue::Float(v) => Ok(*v),
                AttrValue::Int(v) => Ok(*v as f64),
                other => Err(Self::mistyped(op, name, "a float", other)),
            },
        }
    }

    /// A flag; `default` when absent.
    pub fn bool(&self, op: &str, name: &str, default: Option<bool>) -> Result<bool> {
        match (self.0.get(name), default) {
            (None, Some(d)) => Ok(d),
            _ => match self.get(op, name)? {
                AttrValue::Bool(v) => Ok(*v),
                other => Err(Self::mistyped(op, name, "a bool", other)),
            },
        }
    }

    /// A list of integers (a single int is read as a list of one); `default` when absent.
    pub fn ints(&self, op: &str, name: &str, default: Option<Vec<i64>>) -> Result<Vec<i64>> {
        match (self.0.get(name), default) {
            (None, Some(d)) => Ok(d),
            _ => match self.get(op, name)? {
                AttrValue::Ints(v) => Ok(v.clone()),
                AttrValue::Int(v) => Ok(vec![*v]),
                other => Err(Self::mistyped(op, name, "a list of ints", other)),
            },
        }
    }

    /// A dtype attribute (required).
    pub fn dtype(&self, op: &str, name: &str) -> Result<DType> {
        match self.get(op, name)? {
            AttrValue::DType(d) => Ok(*d),
            other => Err(Self::mistyped(op, name, "a dtype", other)),
        }
    }

    /// Refuses attributes the op does not know (a typo must not be ignored silently).
    pub fn only(&self, op: &str, known: &[&str]) -> Result<()> {
        match self.0.keys().find(|k| !known.contains(&k.as_str())) {
            Some(unknown) => {
                Err(KernelError::Invalid(format!("{op}: unknown attribute '{unknown}' (known: {})", known.join(", "))))
            }
            None => Ok(()),
        }
    }
}
