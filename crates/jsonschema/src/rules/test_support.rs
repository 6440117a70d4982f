//! Runs a rule's own examples through the checker, so a spec cannot drift from the logic.
use crate::JsonSchemaFormat;
use covenant_engine::{CheckOptions, Format, RuleSpec};

fn pair(example: &str) -> (String, String) {
    let mut writer = String::new();
    let mut reader = String::new();
    for line in example.lines() {
        if let Some(rest) = line.strip_prefix("writer: ") {
            writer = rest.to_string();
        } else if let Some(rest) = line.strip_prefix("reader: ") {
            reader = rest.to_string();
        }
    }
    (writer, reader)
}

/// The bad example yields a finding of this rule with its default severity; the good example
/// of an incompatible rule does not.
pub fn fires(rule: &RuleSpec) {
    let (writer, reader) = pair(rule.bad_example);
    let w = JsonSchemaFormat::parse(&writer, &[]).expect("writer parses");
    let r = JsonSchemaFormat::parse(&reader, &[]).expect("reader parses");
    let findings = JsonSchemaFormat::check(&r, &w, &CheckOptions::default());
    let hit = findings.iter().find(|f| f.rule == rule.id);
    let Some(hit) = hit else {
        panic!("{} did not fire; got {:?}", rule.id, findings);
    };
    assert_eq!(hit.severity, rule.default_severity, "{}", rule.id);
    assert!(hit.path.starts_with("#/"), "{}", hit.path);
    let (gw, gr) = pair(rule.good_example);
    let gw = JsonSchemaFormat::parse(&gw, &[]).expect("good writer parses");
    let gr = JsonSchemaFormat::parse(&gr, &[]).expect("good reader parses");
    let good = JsonSchemaFormat::check(&gr, &gw, &CheckOptions::default());
    if rule.default_severity == covenant_engine::Severity::Error {
        assert!(
            !good.iter().any(|f| f.rule == rule.id),
            "{} fired on its good example",
            rule.id
        );
    }
}
