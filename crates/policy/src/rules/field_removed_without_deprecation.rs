//! Removal needs evidence, not hope: a field that disappears without ever having been
//! deprecated skipped the window in which consumers, replays and archives could be checked.
//! Structurally the removal may be fine (Avro readers drop unknown fields), which is why only
//! the policy can see it.

use crate::pair::{Located, Pair, quoted_list};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};
use std::collections::HashSet;

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_REMOVED_WITHOUT_DEPRECATION",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset: "no known consumers" is not evidence (a
    // warning under `confluent`, where Confluent's BACKWARD allows the removal). Consumers
    // that declare the field or reported reading it are named, with the last read. A field
    // with a deprecation record is judged by the removal gate instead, which lets it go at
    // stage 'removable'. Source: schema-evolution-rules Rule 6 and §23.5.
    default_severity: Severity::Error,
    summary: "A field was removed that has no deprecation record: nobody announced it, named a replacement or waited out a window (consumers that declare the field or reported reading it are named, with the last read). A field with a deprecation record may go once the record reaches 'removable'. Source: schema-evolution-rules Rule 6, §23.5; adr-005 (BACKWARD: cannot remove fields).",
    bad_example: "v1: {\"name\": \"tickSize\", \"type\": \"string\"}\nv2: tickSize removed, with no deprecation of tickSize",
    good_example: "covenant deprecations create --subject instrument-value --field tickSize --replacement tickSizeDecimal ...\nthen remove tickSize once the deprecation reaches 'removable'",
    hint: "Deprecate the field first (a deprecation record with a replacement and a window), migrate its consumers, and remove it once the record reaches 'removable'.",
    peers: &[],
};

fn day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// Whether a proper prefix of `path` ending before one of its `/` separators is in `paths`:
/// one lookup per separator.
fn inside_any(path: &str, paths: &HashSet<&str>) -> bool {
    path.match_indices('/')
        .filter(|(i, _)| *i > 0)
        .any(|(i, _)| {
            covenant_engine::budget::charge(1);
            paths.contains(&path[..i])
        })
}

/// The path of the record or message holding a field (`/acme.Case` for
/// `/acme.Case/fields/x`, `` for a top-level Avro or Iceberg field).
fn parent_path(path: &str) -> &str {
    path.rfind("/fields/").map_or("", |i| &path[..i])
}

/// What must match for a number to hold the same field: its id alone in Iceberg (a column
/// keeps its id through renames and promotions), its type too in Protobuf (another type at
/// the number is reuse, which other rules report).
fn identity_type<'a>(pair: &Pair<'_>, node: &'a covenant_engine::Node) -> &'a str {
    if pair.format() == "iceberg" {
        ""
    } else {
        node.type_name.as_str()
    }
}

/// The (parent, number, type) of every numbered field of the new version, when fields were
/// removed from a format whose fields are numbered.
fn kept_numbers<'a>(pair: &Pair<'a>, removed: &[&Located<'_>]) -> HashSet<(&'a str, i64, &'a str)> {
    if !matches!(pair.format(), "iceberg" | "protobuf")
        || removed.iter().all(|r| r.node.number.is_none())
    {
        return HashSet::new();
    }
    pair.new_nodes()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field)
        .filter_map(|l| {
            Some((
                parent_path(&l.node.path),
                l.node.number?,
                identity_type(pair, l.node),
            ))
        })
        .collect()
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let removed: Vec<&Located<'_>> = pair
        .old_nodes()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field && pair.new_at(&l.node.path).is_none())
        .collect();
    // Found by path, so that a change removing many fields stays linear in them.
    let removed_paths: HashSet<&str> = removed.iter().map(|r| r.node.path.as_str()).collect();
    let kept = kept_numbers(pair, &removed);
    for old in &removed {
        // A field inside a removed field goes with it: report the outermost one.
        if inside_any(&old.node.path, &removed_paths) || pair.is_deprecated(old) {
            continue;
        }
        // Still there under another name: a rename (LIKELY_RENAME), not a removal.
        if old.node.number.is_some_and(|n| {
            kept.contains(&(
                parent_path(&old.node.path),
                n,
                identity_type(pair, old.node),
            ))
        }) {
            continue;
        }
        let consumers = pair.consumers_of(old);
        let last = pair.last_used(old);
        let mut message = format!(
            "Field '{}' was removed without a deprecation record.",
            old.node.name
        );
        if !consumers.is_empty() {
            message.push_str(&format!(
                " Consumers declaring it: {}.",
                quoted_list(&consumers)
            ));
        }
        if let Some(at) = last {
            message.push_str(&format!(" Last read reported on {}.", day(at)));
        }
        let mut finding = Finding::new(&RULE, old.node.path.clone(), message);
        if !consumers.is_empty() || last.is_some() {
            finding = finding.with_severity(Severity::Error);
        }
        findings.push(finding);
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use crate::{PolicyContext, PolicySettings, RuleLevel};

    fn v1() -> covenant_engine::FieldTree {
        avro(
            "Instrument",
            vec![field("symbol", "string"), field("tickSize", "string")],
        )
    }

    fn v2() -> covenant_engine::FieldTree {
        avro("Instrument", vec![field("symbol", "string")])
    }

    #[test]
    fn tick_size_removed_without_deprecation_is_an_error_under_covenant_only() {
        let findings = run("FIELD_REMOVED_WITHOUT_DEPRECATION", &v1(), &v2(), &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/tickSize");
        assert_eq!(findings[0].severity, covenant_engine::Severity::Error);
        assert_eq!(
            findings[0].message,
            "Field 'tickSize' was removed without a deprecation record."
        );
        let confluent = PolicySettings::default().with_preset(crate::Preset::Confluent);
        let findings = covenant_engine::budget::unlimited(|m| {
            crate::evaluate(m, &v1(), &v2(), &none(), &confluent)
        });
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].severity, covenant_engine::Severity::Warning);
        // A deprecated field is the removal gate's to judge (it lets it go at 'removable').
        let deprecated = PolicyContext {
            deprecated: vec!["tickSize".into()],
            ..none()
        };
        assert!(
            run(
                "FIELD_REMOVED_WITHOUT_DEPRECATION",
                &v1(),
                &v2(),
                &deprecated
            )
            .is_empty()
        );
    }

    #[test]
    fn a_field_renamed_under_its_number_is_not_removed() {
        let old = proto(vec![message(
            "acme.Case",
            vec![("case_id", "string", 1), ("case_owner", "string", 2)],
        )]);
        let renamed = proto(vec![message(
            "acme.Case",
            vec![("case_id", "string", 1), ("assigned_officer", "string", 2)],
        )]);
        assert!(run("FIELD_REMOVED_WITHOUT_DEPRECATION", &old, &renamed, &none()).is_empty());
        let reused = proto(vec![message(
            "acme.Case",
            vec![("case_id", "string", 1), ("escalation", "int64", 2)],
        )]);
        assert_eq!(
            run("FIELD_REMOVED_WITHOUT_DEPRECATION", &old, &reused, &none()).len(),
            1
        );
    }

    #[test]
    fn declared_consumers_and_usage_make_it_an_error_naming_them() {
        let mut context = none();
        context
            .consumers
            .insert("tickSize".into(), vec!["risk-engine".into()]);
        context
            .last_used
            .insert("tickSize".into(), 1_767_225_600_000);
        let findings = run("FIELD_REMOVED_WITHOUT_DEPRECATION", &v1(), &v2(), &context);
        assert!(findings[0].is_error());
        assert_eq!(
            findings[0].message,
            "Field 'tickSize' was removed without a deprecation record. Consumers declaring it: 'risk-engine'. Last read reported on 2026-01-01."
        );
        let relaxed =
            PolicySettings::default().with("FIELD_REMOVED_WITHOUT_DEPRECATION", RuleLevel::Warning);
        let findings = covenant_engine::budget::unlimited(|m| {
            crate::evaluate(m, &v1(), &v2(), &context, &relaxed)
        });
        assert!(findings.iter().all(|f| !f.is_error()), "{findings:?}");
    }

    /// The work a change removing `n` fields costs, against `n` unrelated deprecations and
    /// consumers: counted in budget units (each node listed, name looked up or reference
    /// tried against a node is one), not timed.
    fn work_to_remove(n: usize) -> u64 {
        let fields = |prefix: &str| {
            (0..n)
                .map(|i| field(&format!("{prefix}{i}"), "int"))
                .collect()
        };
        let (old, new) = (avro("R", fields("a")), avro("R", fields("b")));
        let mut context = PolicyContext {
            deprecated: (0..n).map(|i| format!("R.c{i}")).collect(),
            ..PolicyContext::default()
        };
        for i in 0..n {
            context
                .consumers
                .insert(format!("d{i}"), vec!["reader".into()]);
        }
        covenant_engine::budget::Budget::default()
            .run(|m| {
                let findings = run_in(m, "FIELD_REMOVED_WITHOUT_DEPRECATION", &old, &new, &context);
                assert_eq!(findings.len(), n);
                covenant_engine::budget::work_spent()
            })
            .expect("an unlimited budget")
    }

    #[test]
    fn removing_many_fields_costs_work_in_proportion_to_them() {
        let (small, large) = (work_to_remove(500), work_to_remove(4_000));
        // Eight times the fields: eight times the work, where a scan per field of the other
        // removed fields, the deprecations or the consumers would cost sixty-four times.
        assert!(
            large <= small * 10,
            "{small} units for 500 fields, {large} for 4,000"
        );
    }

    #[test]
    fn a_deprecated_field_and_fields_inside_a_removed_one_are_not_reported_again() {
        let context = PolicyContext {
            deprecated: vec!["Instrument.tickSize".into()],
            ..PolicyContext::default()
        };
        assert!(run("FIELD_REMOVED_WITHOUT_DEPRECATION", &v1(), &v2(), &context).is_empty());
        let nested = avro(
            "Order",
            vec![field("customer", "record:Customer").child(field("id", "string"))],
        );
        let findings = run(
            "FIELD_REMOVED_WITHOUT_DEPRECATION",
            &nested,
            &avro("Order", vec![]),
            &none(),
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/customer");
    }
}
