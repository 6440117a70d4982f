//! A field named like personal data but carrying no PII tag escapes masking, sink and
//! retention rules that key on the tag.

use crate::pair::{Pair, pii_tags_of, words};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PII_UNTAGGED",
    format: "any",
    category: "semantic",
    // A warning: the name is a guess (an `ip` may be a service address), and a tag is cheap
    // to add while the field is new. Source: schema-evolution-rules §23.4.
    default_severity: Severity::Warning,
    summary: "A new field whose name looks like personal data (email, phone, SSN, date of birth, postal address, IP address, passport, national id) carries no PII tag, so masking, allowed sinks and retention rules keyed on the tag miss it. Source: schema-evolution-rules §23.4.",
    bad_example: "{\"name\": \"customerEmail\", \"type\": \"string\"}",
    good_example: "{\"name\": \"customerEmail\", \"type\": \"string\", \"confluent:tags\": [\"PII\"]}",
    hint: "Tag the field as personal data (`confluent:tags: [\"PII\"]`, subject metadata tags or `covenant.pii.fields`) and review classification, masking, sinks and retention before producers write it.",
    peers: &[],
};

/// Name words that mean personal data on their own.
const PII_WORDS: [&str; 9] = [
    "email",
    "phone",
    "ssn",
    "dob",
    "birthdate",
    "birthday",
    "passport",
    "msisdn",
    "iban",
];

/// Word pairs that mean personal data together (`date of birth` as `dateOfBirth`,
/// `ipAddress`, `homeAddress`, `nationalId`).
const PII_PAIRS: [(&str, &str); 8] = [
    ("date", "birth"),
    ("ip", "address"),
    ("home", "address"),
    ("postal", "address"),
    ("street", "address"),
    ("mailing", "address"),
    ("national", "id"),
    ("social", "security"),
];

fn looks_personal(name: &str) -> bool {
    let words = words(name);
    let has = |w: &str| words.iter().any(|x| x == w);
    words.iter().any(|w| PII_WORDS.contains(&w.as_str()))
        || PII_PAIRS.iter().any(|(a, b)| has(a) && has(b))
        || (words.len() == 1 && (has("ip") || has("address")))
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    pair.added()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field && looks_personal(&l.node.name))
        .filter(|l| pii_tags_of(l, &pair.context.metadata).is_empty())
        .map(|l| {
            Finding::new(
                &RULE,
                l.node.path.clone(),
                format!(
                    "Field '{}' looks like personal data but carries no PII tag; masking, sink and retention rules keyed on the tag will miss it.",
                    l.node.name
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn personal_names_without_a_tag() {
        let old = avro("Customer", vec![field("customerId", "string")]);
        let new = avro(
            "Customer",
            vec![
                field("customerId", "string"),
                field("customerEmail", "string"),
                field("dateOfBirth", "string"),
                field("ip_address", "string"),
                field("phone", "string").tag("PII"),
                field("emailCount", "int"),
                field("status", "string"),
            ],
        );
        let paths: Vec<String> = run("PII_UNTAGGED", &old, &new, &none())
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(
            paths,
            [
                "/fields/customerEmail",
                "/fields/dateOfBirth",
                "/fields/ip_address",
                "/fields/emailCount"
            ]
        );
    }
}
