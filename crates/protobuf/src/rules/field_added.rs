//! Confluent `SchemaDiff` difference `FIELD_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A field was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; string note = 2; }",
    good_example: "message Order { string id = 1; optional string note = 2; }",
    hint: "Compatible: old data simply lacks the field.",
    peers: &["confluent:FIELD_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { string x = 1; string y = 2; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }

    #[test]
    fn not_built_when_infos_are_skipped_while_errors_still_are() {
        use crate::ProtobufFormat;
        use covenant_engine::{CheckOptions, Format, InfoFindings, Level, PriorVersion};
        let old = ProtobufFormat::parse(OLD, &[]).expect("old");
        let new = ProtobufFormat::parse(
            "syntax = \"proto3\";\nmessage A { int64 x = 1; string y = 2; }\n",
            &[],
        )
        .expect("new");
        let prior = [PriorVersion {
            version: 1,
            schema: &old,
        }];
        let rules = |info_findings, keep_infos: bool| {
            let options = CheckOptions {
                info_findings,
                ..CheckOptions::default()
            };
            let report = covenant_engine::budget::unlimited(|m| {
                covenant_engine::check_history::<ProtobufFormat>(
                    m,
                    Level::Full,
                    &new,
                    &prior,
                    &options,
                )
            });
            let mut ids: Vec<String> = report
                .findings
                .iter()
                .filter(|f| keep_infos || f.severity != covenant_engine::Severity::Info)
                .map(|f| f.rule.to_string())
                .collect();
            ids.sort();
            ids.dedup();
            (report.compatible, ids)
        };
        let (compatible, every) = rules(InfoFindings::Built, true);
        assert!(!compatible);
        assert!(every.contains(&RULE.id.to_string()), "{every:?}");
        let (_, errors_and_warnings) = rules(InfoFindings::Built, false);
        assert!(!errors_and_warnings.is_empty());
        let (compatible, skipped) = rules(InfoFindings::Skipped, true);
        assert!(!compatible, "the verdict does not change");
        assert_eq!(skipped, errors_and_warnings);
    }
}
