//! Tests generated from the table: every row's examples and every bound's directions go
//! through the real comparison, so a row cannot drift from what the comparison reports.

use super::*;
use crate::JsonSchemaFormat;
use covenant_engine::{CheckOptions, Finding, Format, JsonPolicy, Severity};

const POLICIES: [JsonPolicy; 2] = [JsonPolicy::Strict, JsonPolicy::Lenient];

fn check(writer: &str, reader: &str, policy: JsonPolicy) -> Vec<Finding> {
    let w = JsonSchemaFormat::parse(writer, &[]).unwrap_or_else(|e| panic!("{writer}: {e}"));
    let r = JsonSchemaFormat::parse(reader, &[]).unwrap_or_else(|e| panic!("{reader}: {e}"));
    let options = CheckOptions {
        json_policy: policy,
        ..CheckOptions::default()
    };
    covenant_engine::budget::unlimited(|m| JsonSchemaFormat::check(m, &r, &w, &options))
}

/// The writer and reader of an example (`writer: …` and `reader: …` lines).
fn pair(example: &str) -> (&str, &str) {
    let line = |prefix: &str| {
        example
            .lines()
            .find_map(|line| line.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} in {example:?}"))
    };
    (line("writer: "), line("reader: "))
}

/// What is wrong with a row, judged on its own examples under one policy.
fn row_failures(row: &Difference, policy: JsonPolicy) -> Vec<String> {
    let spec = &row.spec;
    let mut failures = Vec::new();
    let (writer, reader) = pair(spec.bad_example);
    let findings = check(writer, reader, policy);
    match findings.iter().find(|f| f.rule == spec.id) {
        None => failures.push(format!("did not fire on its example; got {findings:?}")),
        Some(hit) => {
            if hit.severity != row.severity(policy) {
                failures.push(format!("reported as {:?}", hit.severity));
            }
            if !hit.path.starts_with("#/") {
                failures.push(format!("path {}", hit.path));
            }
            if hit.hint != spec.hint {
                failures.push(format!("hint {}", hit.hint));
            }
        }
    }
    let (writer, reader) = pair(spec.good_example);
    let good = check(writer, reader, policy);
    if !row.is_compatible(policy) && good.iter().any(|f| f.rule == spec.id) {
        failures.push("fired on its good example".into());
    }
    failures
}

#[test]
fn every_difference_fires_on_its_example_with_its_compatibility_under_each_policy() {
    let mut failures = Vec::new();
    for row in DIFFERENCES {
        for policy in POLICIES {
            for failure in row_failures(row, policy) {
                failures.push(format!("{} ({policy:?}): {failure}", row.spec.id));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn compatibility_per_policy_is_the_rows_column() {
    let compatible = |id: &str, policy| {
        DIFFERENCES
            .iter()
            .find(|d| d.spec.id == id)
            .is_some_and(|d| d.is_compatible(policy))
    };
    assert!(compatible("MAX_LENGTH_INCREASED", JsonPolicy::Strict));
    assert!(!compatible("MAX_LENGTH_DECREASED", JsonPolicy::Lenient));
    assert!(!compatible(
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        JsonPolicy::Strict
    ));
    assert!(compatible(
        "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
        JsonPolicy::Lenient
    ));
    for row in DIFFERENCES {
        let strict = row.severity(JsonPolicy::Strict);
        assert_eq!(row.spec.default_severity, strict, "{}", row.spec.id);
        assert!(
            row.is_compatible(JsonPolicy::Lenient) || !row.is_compatible(JsonPolicy::Strict),
            "{}: compatible under strict but not lenient",
            row.spec.id
        );
    }
}

#[test]
fn the_catalog_lists_every_difference_once_then_the_lint() {
    let all = rules();
    assert_eq!(all.len(), DIFFERENCES.len() + 1);
    let mut ids = std::collections::HashSet::new();
    for (rule, row) in all.iter().zip(DIFFERENCES) {
        assert_eq!(rule.id, row.spec.id);
        assert!(ids.insert(rule.id), "{} listed twice", rule.id);
        assert_eq!(rule.format, "json");
        assert_eq!(rule.peers, [format!("confluent:{}", rule.id)]);
        assert!(
            rule.id.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
            "{}",
            rule.id
        );
    }
    assert_eq!(all.last().map(|r| r.id), Some("DIALECT_UNDECLARED"));
}

const SCHEMA: &str = "https://json-schema.org/draft/2020-12/schema";

/// A schema of type `of`, with `keyword` set to `value` unless that is `None`.
fn schema(of: &str, keyword: &str, value: Option<&str>) -> String {
    match value {
        Some(value) => {
            format!(r#"{{"$schema":"{SCHEMA}","type":"{of}","{keyword}":{value}}}"#)
        }
        None => format!(r#"{{"$schema":"{SCHEMA}","type":"{of}"}}"#),
    }
}

/// The JSON type that takes the bound's keyword: the one where adding it is reported.
fn type_of(bound: &Bound) -> &'static str {
    let keyword = bound.keyword();
    let value = match bound {
        Bound::Flag(..) => "true",
        _ => "5",
    };
    let types: Vec<&'static str> = ["string", "number", "object", "array"]
        .into_iter()
        .filter(|of| {
            let added = check(
                &schema(of, keyword, None),
                &schema(of, keyword, Some(value)),
                JsonPolicy::Strict,
            );
            !added.is_empty()
        })
        .collect();
    match types[..] {
        [of] => of,
        _ => panic!("{keyword} is reported on {types:?}"),
    }
}

/// One direction of a change of a bound: what the comparison must report.
struct Expected {
    rule: &'static Difference,
    message: String,
    narrows: bool,
}

/// A change of a bound's value (the writer's, the reader's) with what the comparison must
/// report forward and backward (writer and reader swapped, as the other direction of a level).
type Change = (
    Option<&'static str>,
    Option<&'static str>,
    Expected,
    Expected,
);

fn changes(bound: &Bound) -> Vec<Change> {
    let keyword = bound.keyword();
    let here = "'#/'";
    let expect = |rule, message: String, narrows| Expected {
        rule,
        message,
        narrows,
    };
    match bound {
        Bound::Flag(_, [added, removed]) => vec![(
            None,
            Some("true"),
            expect(added, format!("'{keyword}' was added at {here}."), true),
            expect(
                removed,
                format!("'{keyword}' was removed at {here}."),
                false,
            ),
        )],
        Bound::Upper(_, [added, removed, increased, decreased])
        | Bound::Lower(_, [added, removed, increased, decreased]) => {
            let upper = matches!(bound, Bound::Upper(..));
            vec![
                (
                    None,
                    Some("5"),
                    expect(added, format!("'{keyword}' 5 was added at {here}."), true),
                    expect(
                        removed,
                        format!("'{keyword}' 5 was removed at {here}."),
                        false,
                    ),
                ),
                (
                    Some("3"),
                    Some("5"),
                    expect(
                        increased,
                        format!("'{keyword}' increased from 3 to 5 at {here}."),
                        !upper,
                    ),
                    expect(
                        decreased,
                        format!("'{keyword}' decreased from 5 to 3 at {here}."),
                        upper,
                    ),
                ),
            ]
        }
    }
}

/// What is wrong with one direction of a change, under each policy.
fn direction_failures(
    writer: &str,
    reader: &str,
    keyword: &str,
    expected: &Expected,
) -> Vec<String> {
    let mut failures = Vec::new();
    let path = format!("#/{keyword}");
    for policy in POLICIES {
        let found = check(writer, reader, policy);
        let severity = if expected.narrows {
            Severity::Error
        } else {
            Severity::Info
        };
        let got: Vec<_> = found
            .iter()
            .map(|f| (&*f.rule, f.path.as_str(), f.message.as_str(), f.severity))
            .collect();
        let want = vec![(
            expected.rule.spec.id,
            path.as_str(),
            expected.message.as_str(),
            severity,
        )];
        if got != want {
            failures.push(format!(
                "{writer} => {reader} ({policy:?}): got {got:?}, want {want:?}"
            ));
        }
    }
    failures
}

/// The keyword a bound's difference names: its id's words before the last, in camel case
/// (`MAX_LENGTH_ADDED` names `maxLength`).
fn keyword_of(id: &str) -> String {
    let words: Vec<&str> = id.split('_').collect();
    let mut keyword = String::new();
    for (i, word) in words[..words.len() - 1].iter().enumerate() {
        let lower = word.to_ascii_lowercase();
        if i == 0 {
            keyword.push_str(&lower);
        } else {
            keyword.push_str(&lower[..1].to_ascii_uppercase());
            keyword.push_str(&lower[1..]);
        }
    }
    keyword
}

#[test]
fn every_bound_narrows_in_its_direction_and_widens_in_the_other() {
    let mut failures = Vec::new();
    for bound in BOUNDS {
        let keyword = bound.keyword();
        let of = type_of(bound);
        for (from, to, forward, backward) in changes(bound) {
            let (writer, reader) = (schema(of, keyword, from), schema(of, keyword, to));
            // Reading the new with the old is the same change in the other direction.
            failures.extend(direction_failures(&writer, &reader, keyword, &forward));
            failures.extend(direction_failures(&reader, &writer, keyword, &backward));
            for expected in [&forward, &backward] {
                let compatible = expected.rule.compatible;
                let want = if expected.narrows {
                    Compatible::Never
                } else {
                    Compatible::Always
                };
                if compatible != want {
                    failures.push(format!(
                        "{} is {compatible:?} in the table",
                        expected.rule.spec.id
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn every_bound_lists_the_differences_named_after_its_keyword() {
    for bound in BOUNDS {
        for (_, _, forward, backward) in changes(bound) {
            for expected in [forward, backward] {
                assert_eq!(keyword_of(expected.rule.spec.id), bound.keyword());
            }
        }
    }
}
