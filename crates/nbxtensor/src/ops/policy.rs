//! Precision policies applied to op calls: the op classes of the policy table decide the
//! dtype each launch computes in, and the float inputs are cast to it first (the casts are
//! launches like any other, so a trace records them).
//!
//! Only float inputs are cast (integers, bools and index tensors keep their dtype, as
//! autocast does); an op in no class keeps its inputs. A policy is handed to the calls that
//! use it: [`call_with_policy`] for one call, [`with_policy`] for every call of a closure on
//! this thread (what `program::trace_with_policy` does while it traces).
//!
//! ```
//! use nbxtensor::dtype::policy::Policy;
//! use nbxtensor::{ops, kernel::Attrs, DType, Tensor};
//! let p = Policy::parse("params=float32,compute=bfloat16,output=float32")?;
//! let a = Tensor::from_vec(vec![1.0f32; 4], &[2, 2])?;
//! let product = ops::call_with_policy(&p, "matmul", &Attrs::new(), &[&a, &a])?.remove(0);
//! assert_eq!(product.dtype(), DType::Bfloat16);                  // a matrix product: the compute dtype
//! let s = ops::call_with_policy(&p, "softmax", &Attrs::new(), &[&product])?.remove(0);
//! assert_eq!(s.dtype(), DType::Float32);                          // a softmax: float32 whatever the policy
//! # Ok::<(), nbxtensor::Error>(())
//! ```

use crate::dtype::policy::Policy;
use crate::kernel::{AttrValue, Attrs, KernelError, Result};
use crate::tensor::Tensor;
use std::cell::Cell;

thread_local! {
    static POLICY: Cell<Option<Policy>> = const { Cell::new(None) };
}

/// The policy in force on this thread ([`with_policy`]), if any.
pub fn policy_in_force() -> Option<Policy> {
    POLICY.with(Cell::get)
}

/// Runs `f` with `policy` in force for every op call it makes on this thread, then restores
/// what was in force before (also when `f` fails or panics).
pub fn with_policy<T>(policy: Policy, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Policy>);
    impl Drop for Restore {
        fn drop(&mut self) {
            POLICY.with(|p| p.set(self.0));
        }
    }
    let _restore = Restore(POLICY.with(|p| p.replace(Some(policy))));
    f()
}

/// `inputs` with their float operands cast to the dtype `op` computes in under `policy`
/// (unchanged when every float input has that dtype already, or the op does not follow
/// policies).
pub fn cast_for(policy: &Policy, op: &str, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let floats: Vec<crate::DType> = inputs.iter().map(|t| t.dtype()).filter(|d| d.is_float()).collect();
    let follows = super::spec::op(op).map(|d| d.follows_policy).unwrap_or(false);
    if floats.is_empty() || !follows {
        return Ok(inputs.iter().map(|t| (*t).clone()).collect());
    }
    let target = policy.compute_dtype(op, &floats).map_err(|e| KernelError::Invalid(format!("{op}: {e}")))?;
    inputs
        .iter()
        .map(|t| {
            if t.dtype().is_float() && t.dtype() != target {
                let attrs = Attrs::new().with("dtype", AttrValue::DType(target));
                Ok(super::call_exact("cast", &attrs, &[t])?.remove(0))
            } else {
                Ok((*t).clone())
            }
        })
        .collect()
}

/// Calls `op` as [`super::call`] does, its float inputs first cast to the dtype the op's
/// class computes in under `policy`.
pub fn call_with_policy(policy: &Policy, op: &str, attrs: &Attrs, inputs: &[&Tensor]) -> Result<Vec<Tensor>> {
    let cast = cast_for(policy, op, inputs)?;
    let refs: Vec<&Tensor> = cast.iter().collect();
    super::call_exact(op, attrs, &refs)
}
