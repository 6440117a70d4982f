//! House rules that are cheaper to keep as tests than as reviews: the rule catalog document is
//! generated from the rule specs, every rule is fully documented, the architecture map names
//! every crate, and each crate's integration tests build as one binary.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn rules_catalog_is_up_to_date() {
    let expected = covenant_policy::rules_markdown();
    let path = root().join("docs/rules.md");
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, &expected).expect("write docs/rules.md");
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "docs/rules.md is out of date: run `UPDATE_EXPECT=1 cargo test -p covenant-cli --test it -- tidy::`"
    );
}

#[test]
fn every_rule_is_documented_and_unique_within_its_format() {
    let mut seen = std::collections::HashSet::new();
    for (group, rules) in covenant_policy::all_rule_groups() {
        for rule in rules {
            assert!(
                seen.insert((rule.format, rule.id)),
                "rule {} is registered twice in {group}",
                rule.id
            );
            assert!(
                rule.id
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "rule id {} is not UPPER_SNAKE_CASE",
                rule.id
            );
            for (what, text) in [
                ("summary", rule.summary),
                ("bad example", rule.bad_example),
                ("good example", rule.good_example),
                ("hint", rule.hint),
            ] {
                assert!(!text.trim().is_empty(), "rule {} has no {what}", rule.id);
            }
        }
    }
}

#[test]
fn architecture_map_names_every_crate() {
    let map =
        std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("docs/ARCHITECTURE.md");
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let name = entry
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .to_string();
        assert!(
            map.contains(&format!("crates/{name}")),
            "docs/ARCHITECTURE.md does not describe crates/{name}"
        );
    }
}

/// Each crate's integration tests are modules of one binary, `tests/it/main.rs`: a test file
/// placed directly under `tests/` would link the whole stack once more.
#[test]
fn integration_tests_are_one_binary_per_crate() {
    for entry in std::fs::read_dir(root().join("crates")).expect("crates/") {
        let tests = entry.expect("entry").path().join("tests");
        let Ok(entries) = std::fs::read_dir(&tests) else {
            continue;
        };
        for item in entries {
            let name = item.expect("entry").file_name();
            assert_eq!(
                name.to_str(),
                Some("it"),
                "{}: integration tests live in tests/it/ as modules of one binary",
                tests.join(&name).display()
            );
        }
        assert!(
            tests.join("it/main.rs").is_file(),
            "{} has no it/main.rs",
            tests.display()
        );
    }
}
