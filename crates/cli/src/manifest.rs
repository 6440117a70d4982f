//! `covenant.toml`: a folder of schemas as the subjects they are registered under, for
//! `covenant apply` and `covenant pull`.
//!
//! ```toml
//! [defaults]                      # optional: for every subject that sets none
//! compatibility = "BACKWARD"
//! preset = "covenant"
//!
//! [[subjects]]
//! name = "money-value"
//! file = "schemas/money.avsc"
//!
//! [[subjects]]
//! name = "orders-value"
//! file = "schemas/orders.avsc"
//! compatibility = "FULL"
//! references = [{ name = "acme.Money", subject = "money-value" }]
//!
//! [[subjects]]                    # one subject per file: {stem} is the file name without
//! files = "schemas/events/*.avsc" # its extension
//! name = "{stem}-value"
//! ```
//!
//! Paths are relative to the manifest's folder. A reference without a `version` names the
//! referenced subject's latest version when the referencing one is registered.

use crate::check::InvalidInput;
use anyhow::{Result, bail};
use covenant_exporter::spec::glob;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The manifest's name, at the root of the folder it describes.
pub const FILE_NAME: &str = "covenant.toml";

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    #[serde(default, skip_serializing_if = "Settings::is_empty")]
    pub defaults: Settings,
    #[serde(default)]
    pub subjects: Vec<Entry>,
}

/// Config a subject keeps on the registry.
#[derive(Debug, Default, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
}

impl Settings {
    fn is_empty(&self) -> bool {
        self.compatibility.is_none() && self.preset.is_none()
    }
}

/// One `[[subjects]]` table: one file (`file`) or every file a pattern matches (`files`).
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<String>,
    /// avro, json, protobuf or iceberg; from the file otherwise, as `covenant check` reads it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatibility: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub references: Vec<ManifestReference>,
    /// The schema's data-contract metadata, as Confluent's JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<toml::Table>,
    /// The schema's data-contract rule set (`domainRules`, `migrationRules`), as Confluent's
    /// JSON object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_set: Option<toml::Table>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestReference {
    pub name: String,
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// A subject as the manifest declares it, its file found.
#[derive(Debug, Clone)]
pub struct Declared {
    pub subject: String,
    pub file: PathBuf,
    /// The file as the manifest names it, for messages.
    pub shown: String,
    pub format: Option<String>,
    pub settings: Settings,
    pub references: Vec<ManifestReference>,
    pub metadata: Option<Value>,
    pub rule_set: Option<Value>,
}

impl Manifest {
    pub fn read(path: &Path) -> Result<Manifest> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| InvalidInput(format!("{}: cannot read: {e}", path.display())))?;
        toml::from_str(&text).map_err(|e| InvalidInput(format!("{}: {e}", path.display())).into())
    }

    /// Every subject the manifest declares, in an order where each comes after the subjects
    /// it references (ties by name); a cycle or a subject declared twice is invalid input.
    pub fn declared(&self, root: &Path) -> Result<Vec<Declared>> {
        let mut all: BTreeMap<String, Declared> = BTreeMap::new();
        for entry in &self.subjects {
            for (file, shown) in entry.paths(root)? {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let subject = entry.name.replace("{stem}", &stem);
                if subject.is_empty() {
                    bail!(InvalidInput(format!("{shown}: the subject name is empty")));
                }
                let settings = Settings {
                    compatibility: entry
                        .compatibility
                        .clone()
                        .or_else(|| self.defaults.compatibility.clone()),
                    preset: entry
                        .preset
                        .clone()
                        .or_else(|| self.defaults.preset.clone()),
                };
                let metadata = entry
                    .metadata
                    .as_ref()
                    .map(serde_json::to_value)
                    .transpose()?;
                let rule_set = entry
                    .rule_set
                    .as_ref()
                    .map(serde_json::to_value)
                    .transpose()?;
                let declared = Declared {
                    subject: subject.clone(),
                    file,
                    shown,
                    format: entry.format.clone(),
                    settings,
                    references: entry.references.clone(),
                    metadata,
                    rule_set,
                };
                if all.insert(subject.clone(), declared).is_some() {
                    bail!(InvalidInput(format!(
                        "subject '{subject}' is declared twice in {FILE_NAME}"
                    )));
                }
            }
        }
        dependency_order(all)
    }
}

impl Entry {
    /// The files of this entry: `file`, or the files `files` matches (a `*` in the last part
    /// of the path), each with the name the manifest gives it.
    fn paths(&self, root: &Path) -> Result<Vec<(PathBuf, String)>> {
        match (&self.file, &self.files) {
            (Some(file), None) => {
                let path = root.join(file);
                if !path.is_file() {
                    bail!(InvalidInput(format!(
                        "{file} (subject '{}'): no such file",
                        self.name
                    )));
                }
                Ok(vec![(path, file.clone())])
            }
            (None, Some(pattern)) => {
                let (dir, name) = pattern.rsplit_once('/').unwrap_or(("", pattern.as_str()));
                if dir.contains('*') {
                    bail!(InvalidInput(format!(
                        "files = \"{pattern}\": only the file name may hold a '*'"
                    )));
                }
                let folder = root.join(dir);
                let entries = std::fs::read_dir(&folder).map_err(|e| {
                    InvalidInput(format!("{pattern}: cannot read {}: {e}", folder.display()))
                })?;
                let mut found = Vec::new();
                for entry in entries {
                    let path = entry?.path();
                    let file_name = path
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if path.is_file() && glob(name, &file_name) {
                        let shown = if dir.is_empty() {
                            file_name
                        } else {
                            format!("{dir}/{file_name}")
                        };
                        found.push((path, shown));
                    }
                }
                found.sort();
                if found.is_empty() {
                    bail!(InvalidInput(format!(
                        "files = \"{pattern}\" matches no file"
                    )));
                }
                if !self.name.contains("{stem}") && found.len() > 1 {
                    bail!(InvalidInput(format!(
                        "files = \"{pattern}\" matches {} files: its name needs {{stem}}",
                        found.len()
                    )));
                }
                Ok(found)
            }
            _ => bail!(InvalidInput(format!(
                "subject '{}': give either 'file' or 'files'",
                self.name
            ))),
        }
    }
}

/// The subjects with every one after the declared subjects it references.
fn dependency_order(mut all: BTreeMap<String, Declared>) -> Result<Vec<Declared>> {
    let mut ordered = Vec::new();
    let mut placed: BTreeSet<String> = BTreeSet::new();
    while !all.is_empty() {
        let ready: Vec<String> = all
            .iter()
            .filter(|(_, d)| {
                d.references
                    .iter()
                    .all(|r| placed.contains(&r.subject) || !all.contains_key(&r.subject))
            })
            .map(|(name, _)| name.clone())
            .collect();
        if ready.is_empty() {
            let cycle: Vec<&str> = all.keys().map(String::as_str).collect();
            bail!(InvalidInput(format!(
                "the references of {} form a cycle",
                cycle.join(", ")
            )));
        }
        for name in ready {
            if let Some(declared) = all.remove(&name) {
                placed.insert(name);
                ordered.push(declared);
            }
        }
    }
    Ok(ordered)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_come_first_and_cycles_are_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        for name in ["a", "b", "c"] {
            std::fs::write(dir.path().join(format!("{name}.avsc")), "{}").expect("write");
        }
        let manifest: Manifest = toml::from_str(
            r#"
            [[subjects]]
            name = "a"
            file = "a.avsc"
            references = [{ name = "B", subject = "b" }]
            [[subjects]]
            name = "b"
            file = "b.avsc"
            references = [{ name = "C", subject = "c" }, { name = "X", subject = "elsewhere" }]
            [[subjects]]
            name = "c"
            file = "c.avsc"
            "#,
        )
        .expect("manifest");
        let order: Vec<String> = manifest
            .declared(dir.path())
            .expect("declared")
            .into_iter()
            .map(|d| d.subject)
            .collect();
        assert_eq!(order, ["c", "b", "a"]);
        let cyclic: Manifest = toml::from_str(
            r#"
            [[subjects]]
            name = "a"
            file = "a.avsc"
            references = [{ name = "B", subject = "b" }]
            [[subjects]]
            name = "b"
            file = "b.avsc"
            references = [{ name = "A", subject = "a" }]
            "#,
        )
        .expect("manifest");
        let error = cyclic.declared(dir.path()).expect_err("a cycle");
        assert!(error.to_string().contains("form a cycle"), "{error}");
    }

    #[test]
    fn unknown_keys_are_refused() {
        let error = toml::from_str::<Manifest>("[[subjects]]\nname = \"a\"\nfiel = \"a.avsc\"\n")
            .expect_err("a typo");
        assert!(error.to_string().contains("fiel"), "{error}");
    }
}
