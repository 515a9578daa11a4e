//! The shape of `data/policy.yml`: PyTorch's CUDA autocast op classes, and the checks the
//! table passes.

use serde::Deserialize;
use std::collections::BTreeMap;

/// How a precision policy decides the dtype an op computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpClass {
    /// The policy's compute dtype (matrix products, convolutions).
    LowerPrecision,
    /// float32, whatever the policy (reductions, softmax, exp, norms, losses).
    Float32,
    /// The widest of the op's inputs.
    Promote,
}

impl OpClass {
    /// The class's spelling in `policy.yml` (`"lower_precision"`, `"float32"`, `"promote"`).
    pub fn as_str(self) -> &'static str {
        match self {
            OpClass::LowerPrecision => "lower_precision",
            OpClass::Float32 => "float32",
            OpClass::Promote => "promote",
        }
    }
}

/// One class of the table: where its list comes from and the ops it holds.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpList {
    /// The section of the source the list is copied from.
    pub source: String,
    /// The ops, by the source's names.
    pub ops: Vec<String>,
}

/// The library's fused ops, each mapped to the op it ends in (whose class it takes).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FusedOps {
    /// What the mapping is.
    pub source: String,
    /// Fused op -> the op it ends in.
    pub ops: BTreeMap<String, String>,
}

/// The op classes of a precision policy.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyTable {
    /// Where the lists come from (document and version).
    pub source: String,
    /// Ops that compute in the policy's compute dtype.
    pub lower_precision: OpList,
    /// Ops that compute in float32 whatever the policy.
    pub float32: OpList,
    /// Ops that compute in the widest of their inputs.
    pub promote: OpList,
    /// The library's fused ops, classed as the op each ends in.
    pub fused: FusedOps,
}

impl PolicyTable {
    /// The classes with their lists, in the table's order.
    pub fn classes(&self) -> [(OpClass, &OpList); 3] {
        [
            (OpClass::LowerPrecision, &self.lower_precision),
            (OpClass::Float32, &self.float32),
            (OpClass::Promote, &self.promote),
        ]
    }

    /// The class of an op (a fused op's: that of the op it ends in), or `None` when the op is
    /// in no class.
    ///
    /// ```
    /// use nbxtensor::facts::{policy_table, OpClass};
    /// assert_eq!(policy_table().class_of("mm"), Some(OpClass::LowerPrecision));
    /// assert_eq!(policy_table().class_of("softmax"), Some(OpClass::Float32));
    /// assert_eq!(policy_table().class_of("add_layer_norm"), Some(OpClass::Float32));
    /// assert_eq!(policy_table().class_of("relu"), None);
    /// ```
    pub fn class_of(&self, op: &str) -> Option<OpClass> {
        let op = self.fused.ops.get(op).map_or(op, String::as_str);
        self.classes().into_iter().find(|(_, list)| list.ops.iter().any(|o| o == op)).map(|(class, _)| class)
    }
}

/// Parses the table text and checks it; the error names the op or field at fault.
pub fn parse_policy_table(text: &str) -> Result<PolicyTable, String> {
    let table: PolicyTable = serde_saphyr::from_str(text).map_err(|e| format!("policy.yml does not parse: {e}"))?;
    if table.source.trim().is_empty() {
        return Err("policy.yml: no source".to_string());
    }
    let mut seen: BTreeMap<&str, OpClass> = BTreeMap::new();
    for (class, list) in table.classes() {
        if list.source.trim().is_empty() || list.ops.is_empty() {
            return Err(format!("policy.yml class '{}': needs a source and at least one op", class.as_str()));
        }
        for op in &list.ops {
            if op.trim().is_empty() || op.trim() != op {
                return Err(format!("policy.yml class '{}': op name {op:?} is empty or padded", class.as_str()));
            }
            if let Some(first) = seen.insert(op, class) {
                return Err(format!("policy.yml: op '{op}' is in both '{}' and '{}'", first.as_str(), class.as_str()));
            }
        }
    }
    if table.fused.source.trim().is_empty() {
        return Err("policy.yml: the fused ops need a source".to_string());
    }
    for (fused, ends_in) in &table.fused.ops {
        if let Some(class) = seen.get(fused.as_str()) {
            return Err(format!("policy.yml: fused op '{fused}' is also in class '{}'", class.as_str()));
        }
        if table.fused.ops.contains_key(ends_in) || ends_in.trim().is_empty() {
            return Err(format!("policy.yml: fused op '{fused}' must end in an op that is not fused, got {ends_in:?}"));
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_table_passes_its_checks() {
        let table = parse_policy_table(super::super::POLICY_YML).unwrap();
        assert_eq!(table.class_of("addcmul"), Some(OpClass::Promote));
        assert_eq!(table.class_of("LSTMCell"), Some(OpClass::LowerPrecision));
        assert!(table.source.contains("amp"));
    }

    #[test]
    fn a_fused_op_takes_the_class_of_the_op_it_ends_in_and_is_checked() {
        let table = parse_policy_table(super::super::POLICY_YML).unwrap();
        assert_eq!(table.class_of("add_layer_norm"), table.class_of("layer_norm"));
        assert_eq!(table.class_of("add_rms_norm"), None);
        let head = "source: s\nlower_precision: {source: a, ops: [mm]}\nfloat32: {source: b, ops: [exp]}\npromote: {source: c, ops: [dot]}\n";
        let also_classed = format!("{head}fused: {{source: f, ops: {{exp: mm}}}}\n");
        let err = parse_policy_table(&also_classed).unwrap_err();
        assert!(err.contains("'exp'") && err.contains("float32"), "{err}");
        let chained = format!("{head}fused: {{source: f, ops: {{a: b, b: exp}}}}\n");
        let err = parse_policy_table(&chained).unwrap_err();
        assert!(err.contains("'a'") && err.contains("not fused"), "{err}");
    }

    #[test]
    fn an_op_in_two_classes_is_refused_by_name() {
        let text = "source: s\nlower_precision: {source: a, ops: [mm]}\nfloat32: {source: b, ops: [exp, mm]}\npromote: {source: c, ops: [dot]}\nfused: {source: f, ops: {}}\n";
        let err = parse_policy_table(text).unwrap_err();
        assert!(err.contains("'mm'") && err.contains("lower_precision") && err.contains("float32"), "{err}");
    }

    #[test]
    fn an_empty_class_or_an_unknown_field_is_refused() {
        let empty = "source: s\nlower_precision: {source: a, ops: []}\nfloat32: {source: b, ops: [exp]}\npromote: {source: c, ops: [dot]}\nfused: {source: f, ops: {}}\n";
        assert!(parse_policy_table(empty).unwrap_err().contains("lower_precision"));
        let extra = "source: s\nextra: 1\nlower_precision: {source: a, ops: [mm]}\nfloat32: {source: b, ops: [exp]}\npromote: {source: c, ops: [dot]}\nfused: {source: f, ops: {}}\n";
        assert!(parse_policy_table(extra).is_err());
    }
}
