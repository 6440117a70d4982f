//! Without metadata, identity is still there: a top-level `id`, `eventId` or `case_id` (in a
//! `Case...` record) is what consumers dedupe, upsert and join on, and `idempotencyKey`,
//! `partitionKey` or `sequenceNumber` are what they dedupe, route and order by. Their removal,
//! retyping or new nullability is reported as breaking; a foreign key (`caseOwnerId`,
//! `owner_id`) is not. Declared keys are judged by KEY_FIELD_CHANGED instead.

use crate::context::KEY_PROPERTIES;
use crate::pair::{Located, Pair, words};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "LIKELY_IDENTITY_CHANGED",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset: identity, idempotency, partition and ordering
    // keys are operational contracts, "breaking unless proven otherwise". The identity is
    // inferred from names, so a foreign key (`caseOwnerId` in a `Case`, `owner_id`) is not
    // taken for the record's own. Metadata is the authority: declared keys are judged by
    // KEY_FIELD_CHANGED. Source: schema-evolution-rules Rule 10, §23.1.
    default_severity: Severity::Error,
    summary: "A top-level field that by its name is the record's identity (`id`, `eventId`, `uuid`, `key`, or the record's own name with `Id`: `caseId` in `Case`), its idempotency or partition key (`idempotencyKey`, `partitionKey`) or its ordering field (`sequenceNumber`, `seq`), not declared in the subject's metadata, was removed, retyped or became nullable; dedupe, upserts, joins, partitioning and ordering depend on it. A foreign key (`caseOwnerId`, `owner_id`) is not the record's identity. Source: schema-evolution-rules Rule 10, §23.1.",
    bad_example: "v1: {\"name\": \"eventId\", \"type\": \"string\"}\nv2: eventId removed (or {\"name\": \"eventId\", \"type\": [\"null\", \"string\"], \"default\": null})",
    good_example: "keep eventId as it is; declare it with metadata {\"properties\": {\"covenant.identity.fields\": \"eventId\"}} so changes to it are judged as key changes",
    hint: "Keep the key field unchanged; introduce a new identity, partition, idempotency or ordering key as a new field with a bridge (or an explicit identity migration event), and declare key fields in the subject's metadata (covenant.identity.fields, covenant.partition.key, covenant.idempotency.key, covenant.ordering.fields).",
    peers: &[],
};

const IDENTITY_LAST_WORDS: [&str; 5] = ["id", "uuid", "guid", "key", "identifier"];
/// The longest of [`IDENTITY_LAST_WORDS`] (`identifier`).
const LONGEST_IDENTITY_WORD: usize = 10;
/// Last words of ordering fields (`sequenceNumber`, `seq_no`, `sequence`).
const ORDERING_LAST_WORDS: [&str; 5] = ["sequence", "seq", "number", "no", "num"];

/// What a key field is to the record, with what breaks when it changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Identity,
    Idempotency,
    Partition,
    Ordering,
}

impl Role {
    fn describe(self) -> &'static str {
        match self {
            Role::Identity => "the record's identity",
            Role::Idempotency => "the record's idempotency key",
            Role::Partition => "the record's partition key",
            Role::Ordering => "the record's ordering field",
        }
    }

    fn breaks(self) -> &'static str {
        match self {
            Role::Identity => "dedupe, upserts and joins on it break",
            Role::Idempotency => "deduplication and sink idempotency on it break",
            Role::Partition => {
                "records of one key land on other partitions and lose their relative order"
            }
            Role::Ordering => "consumers that order, dedupe or resume by it misorder records",
        }
    }
}

/// The role a field directly under the record (one `/fields/` or `/properties/` step in its
/// path) has by its name, if any: an identity word alone or after `event`, `message`,
/// `record`, `entity` or `aggregate`, or after the record's own name (`caseId` in
/// `CaseLifecycleEvent`); a key after `idempotency`, `dedupe` or `partition`; a sequence
/// number. Any other `...Id` names another record: a foreign key.
fn role(located: &Located<'_>) -> Option<Role> {
    let node = located.node;
    // Cheapest tests first: few fields have a key word, and a schema has thousands.
    if node.kind != NodeKind::Field {
        return None;
    }
    let identity_word = may_end_in_identity_word(&node.name);
    if !identity_word && !ends_with_any(&node.name, &ORDERING_LAST_WORDS) {
        return None;
    }
    let depth = node.path.matches("/fields/").count() + node.path.matches("/properties/").count();
    if depth != 1 {
        return None;
    }
    let name_words = words(&node.name);
    let (last, prefix) = name_words.split_last()?;
    let prefix: Vec<&str> = prefix.iter().map(String::as_str).collect();
    let ordering = matches!(
        (prefix.last().copied(), last.as_str()),
        (_, "sequence" | "seq") | (Some("sequence" | "seq"), "number" | "no" | "num")
    );
    if ordering {
        return Some(Role::Ordering);
    }
    if !IDENTITY_LAST_WORDS.contains(&last.as_str()) {
        return None;
    }
    match prefix.as_slice() {
        [] | ["event" | "message" | "record" | "entity" | "aggregate"] => Some(Role::Identity),
        ["idempotency" | "dedupe" | "dedup" | "deduplication"] => Some(Role::Idempotency),
        ["partition" | "partitioning" | "routing" | "shard"] => Some(Role::Partition),
        ["ordering"] => Some(Role::Ordering),
        prefix => {
            let record = words(located.parent_name()?);
            (record.len() >= prefix.len() && record.iter().zip(prefix).all(|(r, p)| r == p))
                .then_some(Role::Identity)
        }
    }
}

/// Whether `name` ends in one of `tails`, ignoring ASCII case.
fn ends_with_any(name: &str, tails: &[&str]) -> bool {
    let bytes = name.as_bytes();
    tails.iter().any(|t| {
        bytes.len() >= t.len() && bytes[bytes.len() - t.len()..].eq_ignore_ascii_case(t.as_bytes())
    })
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
        let Some(role) = role(old) else { continue };
        if declared(pair, old) {
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
                "Field '{name}' looks like {} and {change}; {}. Declare it in the subject's metadata ('{}') to have it judged as a declared key.",
                role.describe(),
                role.breaks(),
                match role {
                    Role::Identity => "covenant.identity.fields",
                    Role::Idempotency => "covenant.idempotency.key",
                    Role::Partition => "covenant.partition.key",
                    Role::Ordering => "covenant.ordering.fields",
                }
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
            "CaseEvent",
            vec![
                field("eventId", "string"),
                field("case_id", "string"),
                field("id", "int"),
                field("status", "string"),
            ],
        );
        let new = avro(
            "CaseEvent",
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
        assert!(
            findings.iter().all(|f| f.is_error()),
            "errors under covenant"
        );
    }

    /// Rule 10: a foreign key is not the record's identity; the record's own id, its
    /// idempotency and partition keys and its sequence number are, unless declared.
    #[test]
    fn foreign_keys_are_not_the_identity_but_roles_are_keys() {
        let old = avro(
            "Case",
            vec![
                field("caseId", "string"),
                field("caseOwnerId", "string"),
                field("owner_id", "string"),
                field("idempotencyKey", "string"),
                field("partition_key", "string"),
                field("sequenceNumber", "long"),
                field("order_number", "long"),
            ],
        );
        let new = avro("Case", vec![]);
        let findings = run("LIKELY_IDENTITY_CHANGED", &old, &new, &none());
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/fields/caseId",
                "/fields/idempotencyKey",
                "/fields/partition_key",
                "/fields/sequenceNumber"
            ]
        );
        assert!(findings[1].message.contains("the record's idempotency key"));
        assert!(findings[2].message.contains("the record's partition key"));
        assert!(findings[3].message.contains("the record's ordering field"));
        // The record's own name may be longer than the id's prefix (an aggregate id).
        let event = avro("CaseLifecycleEvent", vec![field("case_id", "string")]);
        let gone = avro("CaseLifecycleEvent", vec![]);
        assert_eq!(
            run("LIKELY_IDENTITY_CHANGED", &event, &gone, &none()).len(),
            1
        );
        // Under the confluent preset the same findings never refuse.
        let confluent = crate::PolicySettings::default().with_preset(crate::Preset::Confluent);
        let lenient = covenant_engine::budget::unlimited(|m| {
            crate::evaluate(m, &old, &new, &none(), &confluent)
        });
        assert!(lenient.iter().all(|f| !f.is_error()), "{lenient:?}");
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
