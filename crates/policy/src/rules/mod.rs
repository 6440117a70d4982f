//! Every semantic rule, one module each, listed once in catalog order.

use crate::pair::Pair;
use covenant_engine::{Finding, RuleSpec};
use std::sync::OnceLock;

pub(crate) mod ambiguous_null_default;
pub(crate) mod enum_value_added;
pub(crate) mod field_default_changed;
pub(crate) mod field_identity_moved;
pub(crate) mod field_removed_without_deprecation;
pub(crate) mod iceberg_history_reused;
pub(crate) mod iceberg_partition_changed;
pub(crate) mod json_additional_properties_implicit;
pub(crate) mod json_format_added;
pub(crate) mod key_field_changed;
pub(crate) mod key_subject_changed;
pub(crate) mod likely_identity_changed;
pub(crate) mod likely_rename;
pub(crate) mod meaning_changed;
pub(crate) mod money_as_float;
pub(crate) mod nullability_changed;
pub(crate) mod pii_not_encrypted;
pub(crate) mod pii_tag_added;
pub(crate) mod pii_tag_removed;
pub(crate) mod pii_untagged;
pub(crate) mod precision_loss;
pub(crate) mod protobuf_enum_zero_not_unspecified;
pub(crate) mod protobuf_history_reused;
pub(crate) mod protobuf_removed_not_reserved;
pub(crate) mod protobuf_reserved_dropped;
pub(crate) mod sensitive_type_changed;
#[cfg(test)]
pub(crate) mod testkit;
pub(crate) mod value_reinterpreted;
pub(crate) mod version_suffixed_name;
pub(crate) mod wide_union;

/// A rule's spec with the check that emits its findings (at the spec's default severity;
/// [`crate::evaluate`] applies the settings).
pub(crate) struct Entry {
    pub spec: &'static RuleSpec,
    pub check: fn(&Pair<'_>) -> Vec<Finding>,
}

/// The catalog: adding a rule is one module above and one line here.
pub(crate) static ENTRIES: &[Entry] = &[
    Entry {
        spec: &key_field_changed::RULE,
        check: key_field_changed::check,
    },
    Entry {
        spec: &likely_identity_changed::RULE,
        check: likely_identity_changed::check,
    },
    Entry {
        spec: &key_subject_changed::RULE,
        check: key_subject_changed::check,
    },
    Entry {
        spec: &sensitive_type_changed::RULE,
        check: sensitive_type_changed::check,
    },
    Entry {
        spec: &precision_loss::RULE,
        check: precision_loss::check,
    },
    Entry {
        spec: &value_reinterpreted::RULE,
        check: value_reinterpreted::check,
    },
    Entry {
        spec: &money_as_float::RULE,
        check: money_as_float::check,
    },
    Entry {
        spec: &meaning_changed::RULE,
        check: meaning_changed::check,
    },
    Entry {
        spec: &likely_rename::RULE,
        check: likely_rename::check,
    },
    Entry {
        spec: &field_removed_without_deprecation::RULE,
        check: field_removed_without_deprecation::check,
    },
    Entry {
        spec: &field_default_changed::RULE,
        check: field_default_changed::check,
    },
    Entry {
        spec: &field_identity_moved::RULE,
        check: field_identity_moved::check,
    },
    Entry {
        spec: &iceberg_history_reused::RULE,
        check: iceberg_history_reused::check,
    },
    Entry {
        spec: &iceberg_partition_changed::RULE,
        check: iceberg_partition_changed::check,
    },
    Entry {
        spec: &nullability_changed::RULE,
        check: nullability_changed::check,
    },
    Entry {
        spec: &enum_value_added::RULE,
        check: enum_value_added::check,
    },
    Entry {
        spec: &pii_tag_added::RULE,
        check: pii_tag_added::check,
    },
    Entry {
        spec: &pii_tag_removed::RULE,
        check: pii_tag_removed::check,
    },
    Entry {
        spec: &pii_untagged::RULE,
        check: pii_untagged::check,
    },
    Entry {
        spec: &pii_not_encrypted::RULE,
        check: pii_not_encrypted::check,
    },
    Entry {
        spec: &version_suffixed_name::RULE,
        check: version_suffixed_name::check,
    },
    Entry {
        spec: &wide_union::RULE,
        check: wide_union::check,
    },
    Entry {
        spec: &ambiguous_null_default::RULE,
        check: ambiguous_null_default::check,
    },
    Entry {
        spec: &json_additional_properties_implicit::RULE,
        check: json_additional_properties_implicit::check,
    },
    Entry {
        spec: &json_format_added::RULE,
        check: json_format_added::check,
    },
    Entry {
        spec: &protobuf_removed_not_reserved::RULE,
        check: protobuf_removed_not_reserved::check,
    },
    Entry {
        spec: &protobuf_reserved_dropped::RULE,
        check: protobuf_reserved_dropped::check,
    },
    Entry {
        spec: &protobuf_enum_zero_not_unspecified::RULE,
        check: protobuf_enum_zero_not_unspecified::check,
    },
    Entry {
        spec: &protobuf_history_reused::RULE,
        check: protobuf_history_reused::check,
    },
];

/// Every semantic rule spec, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    static SPECS: OnceLock<Vec<&'static RuleSpec>> = OnceLock::new();
    SPECS.get_or_init(|| ENTRIES.iter().map(|e| e.spec).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_semantic_documented_and_unique() {
        let mut seen = std::collections::HashSet::new();
        for rule in rules() {
            assert!(seen.insert(rule.id), "{} listed twice", rule.id);
            assert_eq!(rule.category, "semantic", "{}", rule.id);
            assert!(
                ["any", "avro", "json", "protobuf", "iceberg"].contains(&rule.format),
                "{}",
                rule.id
            );
            for text in [rule.summary, rule.bad_example, rule.good_example, rule.hint] {
                assert!(
                    !text.trim().is_empty(),
                    "{} is not fully documented",
                    rule.id
                );
            }
        }
    }
}
