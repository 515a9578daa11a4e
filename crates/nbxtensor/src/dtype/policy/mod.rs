//! Precision policies: plain, immutable data saying which dtype parameters are held in, which
//! dtype ops compute in, and which dtype outputs are given in (JAX jmp's three dtypes).
//!
//! The op classes are PyTorch's CUDA autocast lists (`data/policy.yml`): an op of class
//! `lower_precision` computes in the policy's compute dtype, one of class `float32` in float32
//! whatever the policy, one of class `promote` in the widest of its inputs; an op in no class
//! keeps its inputs' dtype (their promotion), as it does outside autocast.

mod fill;

use crate::dtype::promotion::common_dtype;
use crate::dtype::{DType, DTypeError, Result};
use crate::facts::{policy_table, OpClass};

pub use fill::{fill_value, FillValue};

/// One of a policy's three dtypes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PolicyField {
    /// The dtype parameters are held in.
    Params,
    /// The dtype lower-precision ops compute in.
    Compute,
    /// The dtype outputs are given in.
    Output,
}

impl PolicyField {
    /// Every field, in the policy's order.
    pub const ALL: [PolicyField; 3] = [PolicyField::Params, PolicyField::Compute, PolicyField::Output];

    /// The field's name (`"params"`, `"compute"`, `"output"`).
    pub fn name(self) -> &'static str {
        match self {
            PolicyField::Params => "params",
            PolicyField::Compute => "compute",
            PolicyField::Output => "output",
        }
    }

    /// The field of a name; refused by name when there is none.
    pub fn from_name(name: &str) -> Result<PolicyField> {
        PolicyField::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            DTypeError::Invalid(format!("unknown policy field '{name}': the fields are params, compute and output"))
        })
    }

    /// The field of a key of jmp's spelling: the name or its first letter (`p`, `c`, `o`).
    fn from_key(key: &str) -> Result<PolicyField> {
        PolicyField::ALL.into_iter().find(|f| f.name() == key || f.name()[..1] == *key).ok_or_else(|| {
            DTypeError::Invalid(format!(
                "unknown policy key '{key}': the keys are params (p), compute (c) and output (o)"
            ))
        })
    }
}

/// A precision policy: the dtypes of parameters, computation and outputs. Immutable: every
/// change makes a new policy.
///
/// ```
/// use nbxtensor::DType;
/// use nbxtensor::dtype::policy::{Policy, PolicyField};
/// let p = Policy::parse("params=float32,compute=float16,output=float32")?;
/// assert_eq!(p.compute_dtype("mm", &[DType::Float32, DType::Float32])?, DType::Float16);
/// assert_eq!(p.compute_dtype("softmax", &[DType::Float16])?, DType::Float32);
/// assert_eq!(p.compute_dtype("addcmul", &[DType::Float16, DType::Float32, DType::Float16])?, DType::Float32);
/// assert_eq!(p.replace(PolicyField::Compute, DType::Bfloat16)?.compute(), DType::Bfloat16);
/// assert_eq!(p.to_string(), "params=float32,compute=float16,output=float32");
/// # Ok::<(), nbxtensor::dtype::DTypeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Policy {
    params: DType,
    compute: DType,
    output: DType,
}

impl Policy {
    /// A policy of three float dtypes; another kind is refused by name.
    pub fn new(params: DType, compute: DType, output: DType) -> Result<Policy> {
        for (field, dtype) in PolicyField::ALL.into_iter().zip([params, compute, output]) {
            if !dtype.is_float() {
                return Err(DTypeError::Invalid(format!(
                    "a policy's {} dtype is a float: '{dtype}' is {}",
                    field.name(),
                    dtype.kind().as_str()
                )));
            }
        }
        Ok(Policy { params, compute, output })
    }

    /// A policy from JAX jmp's spelling: `"params=float32,compute=float16,output=float32"`, keys
    /// `p`/`params`, `c`/`compute`, `o`/`output`; params default to float32, compute follows
    /// params and output follows compute. A single dtype (`"half"`, `"bf16"`) sets all three.
    /// Dtypes are read with [`DType::parse`], so the table's aliases are accepted.
    ///
    /// ```
    /// use nbxtensor::DType;
    /// use nbxtensor::dtype::policy::Policy;
    /// let p = Policy::parse("c=bf16")?;
    /// assert_eq!((p.params(), p.compute(), p.output()), (DType::Float32, DType::Bfloat16, DType::Bfloat16));
    /// assert_eq!(Policy::parse("half")?.output(), DType::Float16);
    /// assert!(Policy::parse("compute=float16,x=float32").unwrap_err().to_string().contains("'x'"));
    /// # Ok::<(), nbxtensor::dtype::DTypeError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Policy> {
        let read = |spelling: &str| {
            DType::parse(spelling.trim()).map_err(|e| DTypeError::Invalid(format!("policy '{text}': {e}")))
        };
        if !text.contains('=') {
            let dtype = read(text)?;
            return Policy::new(dtype, dtype, dtype);
        }
        let mut given: [Option<DType>; 3] = [None; 3];
        for part in text.split(',') {
            let (key, value) = part
                .split_once('=')
                .ok_or_else(|| DTypeError::Invalid(format!("policy '{text}': '{part}' is not key=dtype")))?;
            let field = PolicyField::from_key(key.trim())?;
            let slot = &mut given[field as usize];
            if slot.is_some() {
                return Err(DTypeError::Invalid(format!("policy '{text}': {} is given twice", field.name())));
            }
            *slot = Some(read(value)?);
        }
        let params = given[0].unwrap_or(DType::Float32);
        let compute = given[1].unwrap_or(params);
        let output = given[2].unwrap_or(compute);
        Policy::new(params, compute, output)
    }

    /// The dtype parameters are held in.
    pub fn params(&self) -> DType {
        self.params
    }

    /// The dtype lower-precision ops compute in.
    pub fn compute(&self) -> DType {
        self.compute
    }

    /// The dtype outputs are given in.
    pub fn output(&self) -> DType {
        self.output
    }

    /// One field's dtype.
    pub fn get(&self, field: PolicyField) -> DType {
        match field {
            PolicyField::Params => self.params,
            PolicyField::Compute => self.compute,
            PolicyField::Output => self.output,
        }
    }

    /// A new policy with one field changed (this one is unchanged).
    pub fn replace(&self, field: PolicyField, dtype: DType) -> Result<Policy> {
        let mut dtypes = PolicyField::ALL.map(|f| self.get(f));
        dtypes[field as usize] = dtype;
        Policy::new(dtypes[0], dtypes[1], dtypes[2])
    }

    /// The dtype `op` computes in under this policy, given its inputs' dtypes (see the module
    /// documentation). An op of class `promote` or of no class needs at least one input.
    pub fn compute_dtype(&self, op: &str, inputs: &[DType]) -> Result<DType> {
        match policy_table().class_of(op) {
            Some(OpClass::LowerPrecision) => Ok(self.compute),
            Some(OpClass::Float32) => Ok(DType::Float32),
            Some(OpClass::Promote) | None if inputs.is_empty() => Err(DTypeError::Invalid(format!(
                "'{op}' computes in the promotion of its inputs: give at least one input dtype"
            ))),
            Some(OpClass::Promote) | None => common_dtype(inputs),
        }
    }

    /// A fill value (a mask sentinel) made to fit `dtype`; see [`fill_value`]. It depends on the
    /// dtype filled, not on the policy's dtypes.
    pub fn fill_value(&self, op: &str, value: crate::dtype::promotion::PyScalar, dtype: DType) -> Result<FillValue> {
        fill_value(op, value, dtype)
    }
}

impl std::fmt::Display for Policy {
    /// jmp's spelling, which [`Policy::parse`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "params={},compute={},output={}", self.params, self.compute, self.output)
    }
}

#[cfg(test)]
mod tests;
