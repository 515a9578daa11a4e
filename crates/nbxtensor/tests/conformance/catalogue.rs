//! The catalogue against the tables: every (op, dtype) a backend's table lists has a check in
//! this suite (a new op or dtype fails here by name until one is written); the CPU serves every
//! pair the specs define and another backend refuses the ones it leaves out naming op, dtype
//! and backend; a dtype an op is not defined on is refused naming the op and the dtype, by the
//! table and by an eager call on a tensor of that dtype.

use crate::harness::{assert_refused, Target};
use nbxtensor::kernel::{AttrValue, Attrs, KernelError};
use nbxtensor::ops::{self, spec};
use nbxtensor::{DType, Tensor};

/// Whether the suite has a check of `op` (of spec family `family`) on `dtype`.
fn covered(family: &str, op: &str, dtype: DType) -> Result<bool, String> {
    Ok(match family {
        "unary" => crate::unary::covers(op, dtype),
        "binary" => crate::binary::covers(op, dtype),
        "select" => crate::select::covers(op, dtype),
        "cast" => crate::cast::covers(op, dtype),
        "gather" => crate::gather::covers(op, dtype),
        "reduce" => crate::reduce::covers(op, dtype),
        "rows" => crate::rows::covers(op, dtype),
        "matmul" => crate::matmul::covers(op, dtype),
        "attention" => crate::attention::covers(op, dtype),
        "decode" => crate::decode::covers(op, dtype),
        "sample" => crate::sample::covers(op, dtype),
        "quant" => crate::quant::covers(op, dtype),
        "create" => crate::create::covers(op, dtype),
        "scan" => crate::scan::covers(op, dtype),
        "sort" => crate::sort::covers(op, dtype),
        "linalg" => crate::linalg::covers(op, dtype),
        other => return Err(format!("spec family '{other}' has no module in the conformance suite")),
    })
}

/// Every (op, dtype) of the backend's table has a check in this suite.
pub fn every_entry_has_a_check(target: &Target) {
    let mut missing = Vec::new();
    let mut pairs = 0;
    for (op, dtypes) in target.table().ops() {
        let def = spec::op(op).unwrap_or_else(|e| panic!("{}: the table lists {op}: {e}", target.name));
        for dtype in dtypes {
            pairs += 1;
            match covered(def.family, op, dtype) {
                Ok(true) => {}
                Ok(false) => missing.push(format!("({op}, {dtype})")),
                Err(why) => missing.push(format!("({op}, {dtype}): {why}")),
            }
        }
    }
    assert!(missing.is_empty(), "{} backend: no conformance check for {}", target.name, missing.join(", "));
    eprintln!("{} backend: {pairs} (op, dtype) pairs in the table, each with its checks", target.name);
}

/// The attributes an op needs to bind (its required ones given a value).
fn attrs_for(def: &spec::OpDef, dtype: DType) -> Attrs {
    def.attrs.iter().filter(|a| a.default.is_none()).fold(Attrs::new(), |attrs, a| {
        let value = match a.name {
            // a complex cast stays complex (complex to real is refused by the spec itself)
            "dtype" if crate::reference::is_complex(dtype) => AttrValue::DType(dtype),
            "dtype" => AttrValue::DType(DType::Float32),
            "value" if dtype == DType::Bool => AttrValue::Bool(false),
            _ => AttrValue::Int(0),
        };
        attrs.with(a.name, value)
    })
}

/// A one-element host tensor of `dtype`, when the dtype has a per-element width.
fn one_element(target: &Target, dtype: DType) -> Option<Tensor> {
    // a zero of every dtype is all-zero bytes
    let zero = vec![0u8; dtype.itemsize().ok()?];
    Some(Tensor::from_bytes(dtype, &[1], &zero).ok()?.to(target.device).ok()?)
}

/// The CPU serves every (op, dtype) a spec defines; another backend refuses each pair it
/// leaves out by name (op, dtype and backend), by its table and by an eager call.
pub fn every_catalogue_pair_is_served_or_refused(target: &Target) {
    let table = target.table();
    let mut unserved = Vec::new();
    for def in spec::catalogue() {
        for &dtype in def.dtypes() {
            if table.has(def.name, dtype) {
                continue;
            }
            unserved.push(format!("({}, {dtype})", def.name));
            let what = target.what(def.name, dtype, "not served");
            let bound = table.bind(def.name, dtype, &attrs_for(def, dtype)).map(drop);
            assert!(
                matches!(bound, Err(KernelError::Missing { .. })),
                "{what}: expected a missing entry, got {bound:?}"
            );
            assert_refused(&what, bound, &[def.name, dtype.name(), target.name]);
            if let Some(x) = one_element(target, dtype) {
                let eager = ops::call(def.name, &attrs_for(def, dtype), &[&x]).map(drop);
                assert_refused(&format!("{what}, eager call"), eager, &[def.name, dtype.name(), target.name]);
            }
        }
    }
    if target.name == "cpu" {
        assert!(
            unserved.is_empty(),
            "the CPU backend serves every pair the specs define; it lacks {}",
            unserved.join(", ")
        );
    } else {
        eprintln!(
            "{} backend: {} (op, dtype) pairs of the specs left out, each refused by name",
            target.name,
            unserved.len()
        );
    }
}

/// A dtype an op is not defined on (every dtype of the table, packed ones included) is
/// refused naming the op and the dtype, by the table and by an eager call.
pub fn undefined_dtypes_are_refused_by_name(target: &Target) {
    let table = target.table();
    let mut refused = 0;
    for def in spec::catalogue() {
        let defined = def.dtypes();
        for dtype in DType::ALL.into_iter().filter(|d| !defined.contains(d)) {
            assert!(
                !table.has(def.name, dtype),
                "{}: the table serves a dtype the spec does not define",
                target.what(def.name, dtype, "table")
            );
            let what = target.what(def.name, dtype, "undefined dtype");
            assert_refused(
                &what,
                table.bind(def.name, dtype, &attrs_for(def, dtype)).map(drop),
                &[def.name, dtype.name()],
            );
            if let Some(x) = one_element(target, dtype) {
                let eager = ops::call(def.name, &attrs_for(def, dtype), &[&x]).map(drop);
                assert_refused(&format!("{what}, eager call"), eager, &[def.name, dtype.name()]);
            }
            refused += 1;
        }
    }
    assert!(refused > 0, "no op refuses any dtype: the check ran on nothing");
}
