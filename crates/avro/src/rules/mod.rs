//! Every Avro rule: one module each, holding its spec, the decision it makes and its tests.
//! The ids of the error rules are Java's `SchemaIncompatibilityType` names, which Confluent
//! reports; the warning rules are Covenant's own and never change a verdict.

use covenant_engine::RuleSpec;

pub mod fixed_size_mismatch;
pub mod logical_type_changed;
pub mod missing_enum_symbols;
pub mod missing_union_branch;
pub mod name_mismatch;
pub mod reader_field_missing_default_value;
pub mod type_mismatch;
pub mod union_default_not_first_branch;

static RULES: [&RuleSpec; 8] = [
    &name_mismatch::RULE,
    &fixed_size_mismatch::RULE,
    &missing_enum_symbols::RULE,
    &reader_field_missing_default_value::RULE,
    &type_mismatch::RULE,
    &missing_union_branch::RULE,
    &logical_type_changed::RULE,
    &union_default_not_first_branch::RULE,
];

/// Every Avro rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    &RULES
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::AvroFormat;
    use covenant_engine::{CheckOptions, Format};

    /// `(rule, path)` of every finding for `reader` reading `writer`.
    pub fn findings(reader: &str, writer: &str) -> Vec<(String, String)> {
        let r = AvroFormat::parse(reader, &[]).expect("reader parses");
        let w = AvroFormat::parse(writer, &[]).expect("writer parses");
        covenant_engine::budget::unlimited(|m| {
            AvroFormat::check(m, &r, &w, &CheckOptions::default())
        })
        .into_iter()
        .map(|f| (f.rule.into_owned(), f.path))
        .collect()
    }

    pub fn pair(rule: &str, path: &str) -> (String, String) {
        (rule.to_string(), path.to_string())
    }
}
