use crate::compat::Issue;
use crate::model::Enum;
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MISSING_ENUM_SYMBOLS",
    format: "avro",
    category: "structural",
    default_severity: Severity::Error,
    summary: "The writer's enum has symbols the reader's enum lacks, and the reader enum has no default symbol to fall back on.",
    bad_example: "writer: {\"type\":\"enum\",\"name\":\"Status\",\"symbols\":[\"OPEN\",\"CLOSED\",\"HELD\"]}\nreader: {\"type\":\"enum\",\"name\":\"Status\",\"symbols\":[\"OPEN\",\"CLOSED\"]}",
    good_example: "reader: {\"type\":\"enum\",\"name\":\"Status\",\"symbols\":[\"OPEN\",\"CLOSED\",\"UNKNOWN\"],\"default\":\"UNKNOWN\"}",
    hint: "Keep every symbol, or give the reader's enum a 'default' symbol that unknown values map to.",
    peers: &[
        "confluent:MISSING_ENUM_SYMBOLS",
        "avro-java:MISSING_ENUM_SYMBOLS",
    ],
};

pub fn check(reader: &Enum, writer: &Enum) -> Option<Issue> {
    if reader.symbols == writer.symbols {
        return None;
    }
    let mut missing: Vec<&String> = if reader.symbols.len() <= 16 {
        // A scan of a few symbols is faster than hashing them.
        writer
            .symbols
            .iter()
            .filter(|s| !reader.symbols.contains(s))
            .collect()
    } else {
        // A set, not a scan: enums may hold tens of thousands of symbols.
        let known: std::collections::HashSet<&String> = reader.symbols.iter().collect();
        writer
            .symbols
            .iter()
            .filter(|s| !known.contains(s))
            .collect()
    };
    if missing.is_empty() || reader.default.is_some() {
        return None;
    }
    missing.sort();
    let list: Vec<String> = missing.iter().map(|s| format!("'{s}'")).collect();
    Some(Issue::new(
        &RULE,
        "/symbols",
        format!(
            "Reader enum '{}' lacks the writer's symbol{} {} and has no default symbol.",
            reader.named.name.full(),
            if missing.len() == 1 { "" } else { "s" },
            list.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    const ABC: &str = r#"{"type":"enum","name":"E","symbols":["A","B","C"]}"#;

    #[test]
    fn removed_symbol_needs_a_default() {
        let r = r#"{"type":"enum","name":"E","symbols":["A","B"]}"#;
        assert_eq!(
            findings(r, ABC),
            vec![pair("MISSING_ENUM_SYMBOLS", "/symbols")]
        );
        let with_default = r#"{"type":"enum","name":"E","symbols":["A","B"],"default":"A"}"#;
        assert!(findings(with_default, ABC).is_empty());
    }

    #[test]
    fn added_symbol_is_fine_for_the_reader() {
        let r = r#"{"type":"enum","name":"E","symbols":["A","B","C","D"]}"#;
        assert!(findings(r, ABC).is_empty());
        assert_eq!(
            findings(ABC, r),
            vec![pair("MISSING_ENUM_SYMBOLS", "/symbols")]
        );
    }
}
