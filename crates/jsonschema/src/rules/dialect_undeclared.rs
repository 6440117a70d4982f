//! A lint, not a compatibility rule: schemas should say which dialect they are written in.
use covenant_engine::{RuleSpec, Severity};

pub static DIALECT_UNDECLARED: RuleSpec = RuleSpec {
    id: "DIALECT_UNDECLARED",
    format: "json",
    category: "lint",
    default_severity: Severity::Warning,
    summary: "The schema has no `$schema`, so it is read as draft-07 (as Confluent does) and other tools may read it differently.",
    bad_example: "{\"type\":\"object\"}",
    good_example: "{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\"}",
    hint: "Declare the dialect with `$schema`, e.g. \"https://json-schema.org/draft/2020-12/schema\".",
    peers: &[],
};

#[cfg(test)]
mod tests {
    use crate::JsonSchemaFormat;
    use covenant_engine::{CheckOptions, Format, Severity};

    #[test]
    fn warns_only_without_schema_keyword() {
        let bare =
            JsonSchemaFormat::parse(super::DIALECT_UNDECLARED.bad_example, &[]).expect("parses");
        let lint = JsonSchemaFormat::lint(&bare, &CheckOptions::default());
        assert_eq!(lint.len(), 1);
        assert_eq!(lint[0].rule, "DIALECT_UNDECLARED");
        assert_eq!(lint[0].severity, Severity::Warning);
        let declared =
            JsonSchemaFormat::parse(super::DIALECT_UNDECLARED.good_example, &[]).expect("parses");
        assert!(JsonSchemaFormat::lint(&declared, &CheckOptions::default()).is_empty());
    }
}
