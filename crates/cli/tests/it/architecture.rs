//! `docs/ARCHITECTURE.md` states two facts about the code that a review cannot keep true for
//! long: dependencies point down its code map, and `anyhow` is used only by the binaries.
//! Both are read here from `cargo metadata`, so the document and the manifests cannot drift.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Each crate folder's rank in the code map: the order of the `### \`crates/...\`` headings,
/// crates sharing a heading sharing a rank.
fn ranks(map: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    let headings = map.lines().filter(|l| l.starts_with("### "));
    for (rank, heading) in headings.enumerate() {
        for part in heading.split('`').filter(|p| p.starts_with("crates/")) {
            out.insert(part.trim_start_matches("crates/").to_string(), rank);
        }
    }
    out
}

struct Package {
    folder: String,
    /// Normal (not dev or build) dependencies, by package name.
    dependencies: Vec<String>,
    binary: bool,
}

fn workspace() -> BTreeMap<String, Package> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut packages = BTreeMap::new();
    for p in metadata["packages"].as_array().expect("packages") {
        let manifest = PathBuf::from(p["manifest_path"].as_str().expect("manifest path"));
        let folder = manifest
            .parent()
            .and_then(|d| d.file_name())
            .map(|f| f.to_string_lossy().to_string())
            .expect("crate folder");
        let dependencies = p["dependencies"]
            .as_array()
            .expect("dependencies")
            .iter()
            .filter(|d| d["kind"].is_null())
            .filter_map(|d| d["name"].as_str().map(str::to_string))
            .collect();
        let binary = p["targets"].as_array().expect("targets").iter().any(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        });
        let name = p["name"].as_str().expect("name").to_string();
        packages.insert(
            name,
            Package {
                folder,
                dependencies,
                binary,
            },
        );
    }
    packages
}

#[test]
fn dependencies_point_down_the_code_map() {
    let map = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("map");
    assert!(map.contains("Dependencies point down this list"));
    let ranks = ranks(&map);
    let packages = workspace();
    let mut wrong = Vec::new();
    for package in packages.values() {
        let rank = ranks
            .get(&package.folder)
            .unwrap_or_else(|| panic!("crates/{} has no heading in the map", package.folder));
        for dependency in package.dependencies.iter().filter_map(|d| packages.get(d)) {
            let below = ranks.get(&dependency.folder).is_some_and(|r| r > rank);
            if !below {
                wrong.push(format!(
                    "crates/{} -> crates/{}",
                    package.folder, dependency.folder
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md lists these dependencies' targets above their users: {wrong:?}"
    );
}

#[test]
fn anyhow_is_used_only_by_the_binaries() {
    let map = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).expect("map");
    let packages = workspace();
    for (name, package) in &packages {
        if package.dependencies.iter().any(|d| d == "anyhow") {
            assert!(package.binary, "{name} is a library and depends on anyhow");
            assert!(
                map.contains("`anyhow` is used only in the binaries"),
                "docs/ARCHITECTURE.md does not state where anyhow is used"
            );
        }
    }
    assert!(
        packages.values().filter(|p| p.binary).count() >= 2,
        "expected the covenant and covenant-bench binaries"
    );
}

#[test]
fn ranks_follow_the_headings() {
    let map = "### `crates/cli`\n\n### `crates/avro`, `crates/jsonschema`\n\n### `crates/engine`\n";
    let ranks = ranks(map);
    assert_eq!(ranks["cli"], 0);
    assert_eq!(ranks["avro"], 1);
    assert_eq!(ranks["jsonschema"], 1);
    assert_eq!(ranks["engine"], 2);
}
