//! Without metadata, identity is still there: a top-level `id`, `eventId` or `case_id` is
//! what consumers dedupe, upsert and join on. Its removal, retyping or new nullability is
//! reported as likely breaking; declaring it (`covenant.identity.fields`) makes the verdict
//! an error through KEY_FIELD_CHANGED instead.

use crate::context::KEY_PROPERTIES;
use crate::pair::{Located, Pair, words};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "LIKELY_IDENTITY_CHANGED",
    format: "any",
    category: "semantic",
    // A warning: the identity is inferred from names, which can be wrong; metadata is the
    // authority and turns the same change into a KEY_FIELD_CHANGED error. Source:
    // schema-evolution-rules Rule 10, §23.1.
    default_severity: Severity::Warning,
    summary: "A top-level field that looks like the record's identity (`id`, `eventId`, `*_id`, `*Id`, `uuid`, `key`) and is not declared in the subject's metadata was removed, retyped or became nullable; dedupe, upserts and joins depend on it. Source: schema-evolution-rules Rule 10, §23.1.",
    bad_example: "v1: {\"name\": \"eventId\", \"type\": \"string\"}\nv2: eventId removed (or {\"name\": \"eventId\", \"type\": [\"null\", \"string\"], \"default\": null})",
    good_example: "keep eventId as it is; declare it with metadata {\"properties\": {\"covenant.identity.fields\": \"eventId\"}} so changes to it are errors",
    hint: "Keep the identity field unchanged; introduce a new identity as a new field with a bridge, and declare identity fields in the subject's metadata (covenant.identity.fields) so changes to them are reviewed as breaking.",
    peers: &[],
};

const IDENTITY_LAST_WORDS: [&str; 5] = ["id", "uuid", "guid", "key", "identifier"];
/// The longest of [`IDENTITY_LAST_WORDS`] (`identifier`).
const LONGEST_IDENTITY_WORD: usize = 10;

/// A field directly under the record (one `/fields/` or `/properties/` step in its path)
/// whose name ends in an identity word.
fn likely_identity(located: &Located<'_>) -> bool {
    let node = located.node;
    // Cheapest test first: few fields have an identity word, and a schema has thousands.
    let depth =
        || node.path.matches("/fields/").count() + node.path.matches("/properties/").count();
    node.kind == NodeKind::Field
        && may_end_in_identity_word(&node.name)
        && words(&node.name)
            .last()
            .is_some_and(|w| IDENTITY_LAST_WORDS.contains(&w.as_str()))
        && depth() == 1
}

/// Whether the last of `words(name)` can be an identity word, without splitting the name: that
/// word is the lower case of the name's last letters, so those must end in one. Few names do,
/// and the rule asks for every field of the old version.
fn may_end_in_identity_word(name: &str) -> bool {
    // The lower-case name's last letters, last first, for as long as they are ASCII (as every
    // identity word is) and no longer than the longest word.
    let mut last = [0u8; LONGEST_IDENTITY_WORD];
    let mut n = 0;
    let tail = name.trim_end_matches(|c: char| !c.is_alphanumeric());
    'letters: for c in tail.chars().rev() {
        for lower in c.to_lowercase().rev() {
            if n == last.len() || !lower.is_ascii() {
                break 'letters;
            }
            last[n] = lower as u8;
            n += 1;
        }
    }
    IDENTITY_LAST_WORDS
        .iter()
        .any(|w| w.len() <= n && w.bytes().rev().eq(last[..w.len()].iter().copied()))
}

fn declared(pair: &Pair<'_>, located: &Located<'_>) -> bool {
    let previous = pair.context.previous();
    KEY_PROPERTIES.iter().any(|(property, _)| {
        previous
            .field_list(property)
            .iter()
            .any(|r| located.matches(r))
    })
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for old in pair.old_nodes() {
        if !likely_identity(old) || declared(pair, old) {
            continue;
        }
        let (o, name) = (old.node, &old.node.name);
        let change = match pair.new_at(&o.path) {
            None => "was removed".to_string(),
            Some(new)
                if new.node.type_name != o.type_name || new.node.logical_type != o.logical_type =>
            {
                format!(
                    "changed type from '{}' to '{}'",
                    o.display_type(),
                    new.node.display_type()
                )
            }
            Some(new) if new.node.nullable && !o.nullable => "became nullable".to_string(),
            Some(_) => continue,
        };
        findings.push(Finding::new(
            &RULE,
            o.path.clone(),
            format!(
                "Field '{name}' looks like the record's identity and {change}; dedupe, upserts and joins on it break. Declare it in 'covenant.identity.fields' to have such changes refused."
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::IDENTITY_FIELDS;
    use crate::rules::testkit::*;

    #[test]
    fn the_quick_test_passes_every_name_whose_last_word_is_an_identity_word() {
        use super::{IDENTITY_LAST_WORDS, LONGEST_IDENTITY_WORD, may_end_in_identity_word};
        use crate::pair::words;
        let longest = IDENTITY_LAST_WORDS.iter().map(|w| w.len()).max();
        assert_eq!(longest, Some(LONGEST_IDENTITY_WORD));
        let names = [
            "caseID",
            "case_id",
            "user_id__",
            "GUID",
            "entityIdentifier",
            "API-KEY",
            "uuid",
            "orderUuid",
            "Id",
            "id",
            "Ids",
            "idx",
            "paid",
            "keys",
            "status",
            "amount_0",
            "\u{212a}EY",
            "customer\u{212a}ey",
            "naïveId",
            "ÉTAT_ID",
            "",
            "__",
            "count_49",
        ];
        for name in names {
            let is_identity = words(name)
                .last()
                .is_some_and(|w| IDENTITY_LAST_WORDS.contains(&w.as_str()));
            if is_identity {
                assert!(may_end_in_identity_word(name), "{name}");
            }
        }
        for name in ["status", "amount_0", "count_49", "keys", "idx"] {
            assert!(!may_end_in_identity_word(name), "{name}");
        }
        // A name that ends in the letters of one may still not end in the word.
        assert!(may_end_in_identity_word("paid"));
        assert_eq!(words("paid"), ["paid"]);
    }

    #[test]
    fn event_id_removed_case_id_nullable_id_retyped() {
        let old = avro(
            "E",
            vec![
                field("eventId", "string"),
                field("case_id", "string"),
                field("id", "int"),
                field("status", "string"),
            ],
        );
        let new = avro(
            "E",
            vec![
                field("case_id", "string").nullable(),
                field("id", "string"),
                field("status", "int"),
            ],
        );
        let findings = run("LIKELY_IDENTITY_CHANGED", &old, &new, &none());
        let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(
            messages[0]
                .starts_with("Field 'eventId' looks like the record's identity and was removed")
        );
        assert!(
            messages[1].contains("'case_id' looks like the record's identity and became nullable")
        );
        assert!(messages[2].contains("changed type from 'int' to 'string'"));
        assert!(findings.iter().all(|f| !f.is_error()));
    }

    #[test]
    fn declared_keys_and_nested_ids_are_left_to_other_rules() {
        let old = avro(
            "E",
            vec![
                field("owner", "record:Owner").child(field("id", "string")),
                field("caseId", "string"),
            ],
        );
        let new = avro("E", vec![field("owner", "record:Owner")]);
        let mut context = none();
        context
            .metadata
            .properties
            .insert(IDENTITY_FIELDS.into(), "caseId".into());
        assert!(run("LIKELY_IDENTITY_CHANGED", &old, &new, &context).is_empty());
    }
}
