//! The join of a set of dtypes: promotion computed over the whole set, so the result does not
//! depend on the order the dtypes come in.
//!
//! A binary rule that refuses some pairs cannot be folded in any order: int8 with uint64 is
//! refused, yet (uint64, float32, int8) meets in float32. The join keeps what decides the
//! result — the highest kind, the widest signed and unsigned integers, the floats no other
//! float of the set holds — and decides once at the end.

use super::ranges::{complex_holding, complex_part, holds, packed_refused};
use crate::dtype::{DType, DTypeError, Result};
use crate::facts::Kind;

/// What a set of dtypes promotes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Joined {
    /// One dtype holds every member.
    Exact(DType),
    /// Two floats of the same width meet, neither holding the other (float16 and bfloat16):
    /// the narrowest float that holds both is `holder`; a caller's precision policy may decide
    /// otherwise.
    Tied {
        /// The narrowest float of the table holding every tied float.
        holder: DType,
    },
}

/// The dtypes met so far, reduced to what decides the result.
#[derive(Clone, Debug, Default)]
pub(super) struct Join {
    any: bool,
    signed: Option<DType>,
    unsigned: Option<DType>,
    complex: bool,
    /// The floats (complex parts included) that no other float of the set holds.
    floats: Vec<DType>,
}

impl Join {
    /// Adds one dtype; a packed representation is refused by name.
    pub(super) fn add(&mut self, dtype: DType) -> Result<()> {
        self.any = true;
        match dtype.kind() {
            Kind::Bool => {}
            Kind::Int => self.signed = Some(widest(self.signed, dtype)?),
            Kind::Uint => self.unsigned = Some(widest(self.unsigned, dtype)?),
            Kind::Float => self.add_float(dtype),
            Kind::Complex => {
                self.complex = true;
                self.add_float(complex_part(dtype)?);
            }
            Kind::Packed => return Err(packed_refused(dtype)),
        }
        Ok(())
    }

    fn add_float(&mut self, float: DType) {
        if self.floats.iter().any(|&f| holds(f, float)) {
            return;
        }
        self.floats.retain(|&f| !holds(float, f));
        self.floats.push(float);
    }

    /// The dtype the set promotes to; refused by name where no dtype holds it.
    pub(super) fn resolve(&self) -> Result<Joined> {
        if !self.floats.is_empty() {
            let float = self.resolve_floats()?;
            return match (self.complex, float) {
                (false, joined) => Ok(joined),
                (true, Joined::Exact(f) | Joined::Tied { holder: f }) => Ok(Joined::Exact(complex_holding(f)?)),
            };
        }
        match (self.signed, self.unsigned) {
            (Some(s), Some(u)) => signed_holding_both(s, u).map(Joined::Exact),
            (Some(d), None) | (None, Some(d)) => Ok(Joined::Exact(d)),
            (None, None) if self.any => Ok(Joined::Exact(DType::Bool)),
            (None, None) => Err(DTypeError::Invalid("no dtypes to promote: give at least one".to_string())),
        }
    }

    fn resolve_floats(&self) -> Result<Joined> {
        if let [only] = self.floats[..] {
            return Ok(Joined::Exact(only));
        }
        let holders: Vec<DType> =
            DType::ALL.iter().copied().filter(|&h| self.floats.iter().all(|&f| holds(h, f))).collect();
        let narrowest = holders.iter().filter_map(|h| h.itemsize().ok()).min();
        let at_narrowest: Vec<DType> = holders.into_iter().filter(|h| h.itemsize().ok() == narrowest).collect();
        let mut tied = self.floats.clone();
        tied.sort();
        let names = tied.iter().map(|f| f.name()).collect::<Vec<_>>().join(" and ");
        match at_narrowest[..] {
            [holder] => Ok(Joined::Tied { holder }),
            [] => {
                Err(DTypeError::Refused(format!("{names} have no common dtype: no float of the table holds them all")))
            }
            _ => Err(DTypeError::Refused(format!(
                "{names} have no common dtype: none holds the others, and {} each hold them all; cast to one first",
                at_narrowest.iter().map(|h| h.name()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }
}

/// The wider of the integer met so far and a new one (both of the same kind).
fn widest(current: Option<DType>, new: DType) -> Result<DType> {
    match current {
        Some(c) if c.itemsize()? >= new.itemsize()? => Ok(c),
        _ => Ok(new),
    }
}

/// The narrowest signed integer holding a signed and an unsigned integer (the Array API
/// standard's mixed-sign rule), refused by name when none does.
fn signed_holding_both(signed: DType, unsigned: DType) -> Result<DType> {
    let (s_lo, s_hi) = super::integer_range(signed).unwrap_or_default();
    let (u_lo, u_hi) = super::integer_range(unsigned).unwrap_or_default();
    DType::ALL
        .iter()
        .copied()
        .filter(|&d| d.kind() == Kind::Int)
        .filter(|&d| super::integer_range(d).is_some_and(|(lo, hi)| lo <= s_lo.min(u_lo) && hi >= s_hi.max(u_hi)))
        .min_by_key(|d| d.bits())
        .ok_or_else(|| {
            DTypeError::Refused(format!(
                "{signed} and {unsigned} have no common dtype: no signed integer holds {unsigned}"
            ))
        })
}
