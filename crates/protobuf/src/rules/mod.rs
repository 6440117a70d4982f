//! Every Protobuf rule: one module per rule id, holding its spec, the logic that emits it where
//! that logic is local to the rule, and its tests. Confluent's differences are emitted by the
//! walk in `confluent.rs`, which needs the whole message context.

pub mod enum_added;
pub mod enum_const_added;
pub mod enum_const_changed;
pub mod enum_const_removed;
pub mod enum_removed;
pub mod enum_same_json_format;
pub mod enum_value_no_delete_unless_name_reserved;
pub mod enum_value_no_delete_unless_number_reserved;
pub mod enum_value_same_name;
pub mod field_added;
pub mod field_kind_changed;
pub mod field_moved_to_existing_oneof;
pub mod field_name_changed;
pub mod field_named_type_changed;
pub mod field_no_delete_unless_name_reserved;
pub mod field_no_delete_unless_number_reserved;
pub mod field_numeric_label_changed;
pub mod field_removed;
pub mod field_same_default;
pub mod field_same_json_name;
pub mod field_same_name;
pub mod field_same_oneof;
pub mod field_scalar_kind_changed;
pub mod field_string_or_bytes_label_changed;
pub mod field_wire_compatible_cardinality;
pub mod field_wire_compatible_type;
pub mod field_wire_json_compatible_cardinality;
pub mod field_wire_json_compatible_type;
pub mod file_no_delete;
pub mod file_same_package;
pub mod message_added;
pub mod message_moved;
pub mod message_removed;
pub mod message_same_json_format;
pub mod message_same_required_fields;
pub mod multiple_fields_moved_to_oneof;
pub mod oneof_added;
pub mod oneof_field_added;
pub mod oneof_field_moved_to_top_level;
pub mod oneof_field_removed;
pub mod oneof_removed;
pub mod package_changed;
pub mod required_field_added;
pub mod required_field_removed;
pub mod reserved_enum_no_delete;
pub mod reserved_message_no_delete;
pub mod rpc_same_client_streaming;
pub mod rpc_same_idempotency_level;
pub mod rpc_same_request_type;
pub mod rpc_same_response_type;
pub mod rpc_same_server_streaming;
mod shared;
pub mod syntax_changed;

use covenant_engine::RuleSpec;
use prost_reflect::{FileDescriptor, Syntax, Value};

/// Every rule in catalog order: Confluent's differences, then buf's WIRE / WIRE_JSON rules.
pub static ALL: &[&RuleSpec] = &[
    &package_changed::RULE,
    &syntax_changed::RULE,
    &message_added::RULE,
    &message_removed::RULE,
    &message_moved::RULE,
    &enum_added::RULE,
    &enum_removed::RULE,
    &enum_const_added::RULE,
    &enum_const_changed::RULE,
    &enum_const_removed::RULE,
    &field_added::RULE,
    &field_removed::RULE,
    &field_name_changed::RULE,
    &field_kind_changed::RULE,
    &field_scalar_kind_changed::RULE,
    &field_named_type_changed::RULE,
    &field_numeric_label_changed::RULE,
    &field_string_or_bytes_label_changed::RULE,
    &required_field_added::RULE,
    &required_field_removed::RULE,
    &oneof_added::RULE,
    &oneof_removed::RULE,
    &oneof_field_added::RULE,
    &oneof_field_removed::RULE,
    &oneof_field_moved_to_top_level::RULE,
    &multiple_fields_moved_to_oneof::RULE,
    &field_moved_to_existing_oneof::RULE,
    &file_no_delete::RULE,
    &field_wire_compatible_type::RULE,
    &field_wire_json_compatible_type::RULE,
    &field_wire_compatible_cardinality::RULE,
    &field_wire_json_compatible_cardinality::RULE,
    &field_same_oneof::RULE,
    &field_same_default::RULE,
    &field_same_name::RULE,
    &field_same_json_name::RULE,
    &field_no_delete_unless_number_reserved::RULE,
    &field_no_delete_unless_name_reserved::RULE,
    &reserved_message_no_delete::RULE,
    &message_same_required_fields::RULE,
    &message_same_json_format::RULE,
    &enum_value_no_delete_unless_number_reserved::RULE,
    &enum_value_no_delete_unless_name_reserved::RULE,
    &enum_value_same_name::RULE,
    &enum_same_json_format::RULE,
    &reserved_enum_no_delete::RULE,
    &file_same_package::RULE,
    &rpc_same_client_streaming::RULE,
    &rpc_same_server_streaming::RULE,
    &rpc_same_request_type::RULE,
    &rpc_same_response_type::RULE,
    &rpc_same_idempotency_level::RULE,
];

/// Whether an element resolves to JSON format `ALLOW`: proto3 without the legacy
/// field-conflict option; proto2 resolves to `LEGACY_BEST_EFFORT`.
pub(crate) fn json_format_allowed(file: &FileDescriptor, legacy_option: Option<&Value>) -> bool {
    if matches!(legacy_option, Some(Value::Bool(true))) {
        return false;
    }
    file.syntax() == Syntax::Proto3
}

#[cfg(test)]
pub(crate) mod testing {
    use crate::ProtobufFormat;
    use covenant_engine::{
        CheckOptions, Finding, Format, Level, PriorVersion, ProtobufStrictness, RuleSpec,
        check_history,
    };

    pub(crate) fn run(old: &str, new: &str, strictness: ProtobufStrictness) -> Vec<Finding> {
        let old = ProtobufFormat::parse(old, &[]).unwrap_or_else(|e| panic!("old: {e}"));
        let new = ProtobufFormat::parse(new, &[]).unwrap_or_else(|e| panic!("new: {e}"));
        let options = CheckOptions {
            protobuf_strictness: strictness,
            ..CheckOptions::default()
        };
        covenant_engine::budget::unlimited(|m| ProtobufFormat::check(m, &new, &old, &options))
    }

    fn count_at(
        level: Level,
        rule: &RuleSpec,
        old: &str,
        new: &str,
        strictness: ProtobufStrictness,
    ) -> usize {
        let old = ProtobufFormat::parse(old, &[]).unwrap_or_else(|e| panic!("old: {e}"));
        let new = ProtobufFormat::parse(new, &[]).unwrap_or_else(|e| panic!("new: {e}"));
        let options = CheckOptions {
            protobuf_strictness: strictness,
            ..CheckOptions::default()
        };
        let prior = [PriorVersion {
            version: 1,
            schema: &old,
        }];
        let report = covenant_engine::budget::unlimited(|m| {
            check_history::<ProtobufFormat>(m, level, &new, &prior, &options)
        });
        report.findings.iter().filter(|f| f.rule == rule.id).count()
    }

    /// A buf rule under FULL: a history rule fires as often as under BACKWARD (once per
    /// pair, from old to new, never for the reverse pass), and not at all when the versions
    /// are swapped only in the reverse pass; a readability rule fires whichever of the two
    /// versions is the new one, since FULL reads both ways.
    fn full_follows_concern(rule: &RuleSpec, old: &str, new: &str, strictness: ProtobufStrictness) {
        let Some(concern) = crate::concern(rule.id) else {
            return;
        };
        let backward = count_at(Level::Backward, rule, old, new, strictness);
        let full = count_at(Level::Full, rule, old, new, strictness);
        match concern {
            crate::Concern::History => {
                assert_eq!(
                    full, backward,
                    "{} ran in the reverse pass of FULL",
                    rule.id
                );
                let forward_only = count_at(Level::Forward, rule, old, new, strictness);
                assert_eq!(forward_only, backward, "{} under FORWARD", rule.id);
            }
            crate::Concern::Readability => {
                assert!(full >= backward && full > 0, "{} under FULL", rule.id);
                let swapped = count_at(Level::Full, rule, new, old, strictness);
                assert!(
                    swapped > 0,
                    "{} under FULL with the versions swapped",
                    rule.id
                );
            }
        }
    }

    /// Asserts that reading `old` data with `new` reports `rule` with its default severity,
    /// and, for a buf rule, that FULL runs it as its [`crate::Concern`] says.
    pub(crate) fn fires(rule: &RuleSpec, old: &str, new: &str, strictness: ProtobufStrictness) {
        full_follows_concern(rule, old, new, strictness);
        let findings = run(old, new, strictness);
        let hit = findings.iter().find(|f| f.rule == rule.id);
        match hit {
            Some(f) => {
                assert_eq!(f.severity, rule.default_severity, "{f:?}");
                assert!(f.path.starts_with('/'), "{f:?}");
                assert!(f.message.ends_with('.'), "{f:?}");
            }
            None => panic!("{} did not fire; findings: {findings:#?}", rule.id),
        }
    }

    pub(crate) fn silent(rule: &RuleSpec, old: &str, new: &str, strictness: ProtobufStrictness) {
        let findings = run(old, new, strictness);
        assert!(
            !findings.iter().any(|f| f.rule == rule.id),
            "{} fired unexpectedly: {findings:#?}",
            rule.id
        );
    }

    /// The catalog shows an info rule's `bad_example` as the change that triggers it, so it
    /// must be a real before/after pair that does.
    #[test]
    fn info_rule_examples_trigger_the_rule() {
        use covenant_engine::Severity;
        for r in super::ALL
            .iter()
            .filter(|r| r.default_severity == Severity::Info)
        {
            let Some((before, after)) = r
                .bad_example
                .strip_prefix("// before\n")
                .and_then(|rest| rest.split_once("\n// after\n"))
            else {
                panic!(
                    "{}: bad_example is not a '// before' / '// after' pair",
                    r.id
                );
            };
            fires(r, before, after, ProtobufStrictness::Confluent);
        }
    }

    /// Every buf rule of the catalog has a concern, and only buf rules do.
    #[test]
    fn every_buf_rule_has_a_concern() {
        for r in super::ALL {
            let own_buf = r.peers.contains(&format!("buf:{}", r.id).as_str());
            assert_eq!(crate::concern(r.id).is_some(), own_buf, "{}", r.id);
        }
        assert_eq!(
            crate::CONCERNS.len(),
            super::ALL
                .iter()
                .filter(|r| crate::concern(r.id).is_some())
                .count()
        );
    }

    #[test]
    fn rule_ids_are_unique_and_documented() {
        let mut ids: Vec<&str> = super::ALL.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len());
        for r in super::ALL {
            assert!(
                !r.summary.is_empty() && !r.hint.is_empty() && !r.peers.is_empty(),
                "{}",
                r.id
            );
            assert_eq!(r.format, "protobuf");
        }
    }
}
