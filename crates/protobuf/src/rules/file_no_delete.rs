//! A file of a multi-file schema set was deleted.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FILE_NO_DELETE",
    format: "protobuf",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A file of a schema set was deleted, together with every type it defined.",
    bad_example: "orders/v1/refund.proto deleted",
    good_example: "keep refund.proto and deprecate its messages",
    hint: "Keep the file; move types out of it only once nothing imports or reads them.",
    peers: &["buf:FILE_NO_DELETE"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::ProtobufSchema;
    use covenant_engine::{CheckOptions, Format};

    #[test]
    fn deleted_file_in_a_set_is_reported() {
        let a = (
            "a.proto".to_string(),
            "syntax = \"proto3\";\nmessage A {}\n".to_string(),
        );
        let b = (
            "b.proto".to_string(),
            "syntax = \"proto3\";\nmessage B {}\n".to_string(),
        );
        let old = ProtobufSchema::parse_file_set(&[a.clone(), b], &[]).unwrap();
        let new = ProtobufSchema::parse_file_set(&[a], &[]).unwrap();
        let findings = covenant_engine::budget::unlimited(|m| {
            crate::ProtobufFormat::check(m, &new, &old, &CheckOptions::default())
        });
        assert!(
            findings
                .iter()
                .any(|f| f.rule == RULE.id && f.path == "/files/b.proto")
        );
        let same = covenant_engine::budget::unlimited(|m| {
            crate::ProtobufFormat::check(m, &old, &old, &CheckOptions::default())
        });
        assert!(!same.iter().any(|f| f.rule == RULE.id));
    }

    /// A deletion is history: FULL reports it once, and a file added is not a deletion seen
    /// from the reverse pass.
    #[test]
    fn under_full_only_a_deletion_in_time_is_reported() {
        use covenant_engine::{Level, PriorVersion, check_history};
        let a = (
            "a.proto".to_string(),
            "syntax = \"proto3\";\nmessage A {}\n".to_string(),
        );
        let b = (
            "b.proto".to_string(),
            "syntax = \"proto3\";\nmessage B {}\n".to_string(),
        );
        let both = ProtobufSchema::parse_file_set(&[a.clone(), b], &[]).unwrap();
        let one = ProtobufSchema::parse_file_set(&[a], &[]).unwrap();
        let count = |new: &ProtobufSchema, old: &ProtobufSchema, level: Level| {
            let prior = [PriorVersion {
                version: 1,
                schema: old,
            }];
            covenant_engine::budget::unlimited(|m| {
                check_history::<crate::ProtobufFormat>(
                    m,
                    level,
                    new,
                    &prior,
                    &CheckOptions::default(),
                )
            })
            .findings
            .iter()
            .filter(|f| f.rule == RULE.id)
            .count()
        };
        assert_eq!(count(&one, &both, Level::Full), 1);
        assert_eq!(count(&one, &both, Level::Forward), 1);
        assert_eq!(count(&both, &one, Level::Full), 0);
    }
}
