//! What moving a registry's state needs besides the writes themselves, shared by
//! `covenant import` and `covenant migrate`: the order versions are written in (every schema's
//! references first) and the verification of a destination against its source (counts per kind,
//! and for every id whether both sides hold the same schema).

use crate::transfer::{Dump, DumpSchema, DumpVersion, SchemaKey, schemas_by_key, version_key};
use covenant_store::SchemaRef;
use covenant_store::context::qualify_with_parent;
use std::collections::{BTreeMap, BTreeSet};

/// Every version of the dump, each schema's references before the version that carries it
/// (a registry refuses a reference to a version it does not hold), otherwise in dump order.
pub fn write_order(dump: &Dump) -> Vec<(&str, &DumpVersion)> {
    let schemas = schemas_by_key(dump);
    let mut index: VersionIndex<'_> = BTreeMap::new();
    for subject in &dump.subjects {
        for v in &subject.versions {
            let name = subject.name.as_str();
            index.insert((name, v.version), (name, v));
        }
    }
    let mut placed = BTreeSet::new();
    let mut order = Vec::with_capacity(index.len());
    for subject in &dump.subjects {
        for v in &subject.versions {
            place(&subject.name, v, &schemas, &index, &mut placed, &mut order);
        }
    }
    order
}

/// [`write_order`] cut into levels that may each be written all at once: a version's level is
/// one past those of the versions it must follow, its subject's previous version and the
/// versions it refers to. Only versions earlier in the order count, so a cycle `write_order`
/// broke stays broken. Writing level by level keeps every ordering a registry needs while the
/// versions of different subjects go in parallel.
pub fn write_levels(dump: &Dump) -> Vec<Vec<(&str, &DumpVersion)>> {
    let schemas = schemas_by_key(dump);
    let mut level_of: BTreeMap<(&str, i64), usize> = BTreeMap::new();
    let mut subject_level: BTreeMap<&str, usize> = BTreeMap::new();
    let mut levels: Vec<Vec<(&str, &DumpVersion)>> = Vec::new();
    for (subject, v) in write_order(dump) {
        let after_subject = subject_level.get(subject).map_or(0, |l| l + 1);
        let references = schemas
            .get(&version_key(subject, v))
            .map(|s| s.references.as_slice())
            .unwrap_or(&[]);
        let after_references = references
            .iter()
            .filter_map(|r| {
                let target = qualify_with_parent(subject, &r.subject);
                level_of.get(&(target.as_str(), r.version)).map(|l| l + 1)
            })
            .max()
            .unwrap_or(0);
        let level = after_subject.max(after_references);
        level_of.insert((subject, v.version), level);
        subject_level.insert(subject, level);
        if levels.len() <= level {
            levels.resize_with(level + 1, Vec::new);
        }
        levels[level].push((subject, v));
    }
    levels
}

/// Every version by (subject, version), with its subject's name borrowed from the dump.
type VersionIndex<'a> = BTreeMap<(&'a str, i64), (&'a str, &'a DumpVersion)>;

/// Depth-first placement of one version after its references; `placed` also breaks cycles.
fn place<'a>(
    subject: &'a str,
    v: &'a DumpVersion,
    schemas: &BTreeMap<SchemaKey<'a>, &'a DumpSchema>,
    index: &VersionIndex<'a>,
    placed: &mut BTreeSet<(&'a str, i64)>,
    order: &mut Vec<(&'a str, &'a DumpVersion)>,
) {
    if !placed.insert((subject, v.version)) {
        return;
    }
    for r in schemas
        .get(&version_key(subject, v))
        .map(|s| s.references.as_slice())
        .unwrap_or(&[])
    {
        let target_subject = qualify_with_parent(subject, &r.subject);
        // The map is covariant in its key: looked up with a shorter-lived name.
        let lookup: &BTreeMap<(&str, i64), (&'a str, &'a DumpVersion)> = index;
        if let Some(&(name, target)) = lookup.get(&(target_subject.as_str(), r.version)) {
            place(name, target, schemas, index, placed, order);
        }
    }
    order.push((subject, v));
}

/// The (subject, version) pairs the dump's schemas refer to that it does not hold itself.
pub fn unresolved_references(dump: &Dump) -> BTreeSet<(String, i64)> {
    let held: BTreeSet<(&str, i64)> = held_versions(dump).collect();
    dump.schemas
        .iter()
        .flat_map(|s| {
            let parent = covenant_store::context::qualify(&s.context, "");
            s.references
                .iter()
                .map(move |r| (qualify_with_parent(&parent, &r.subject), r.version))
        })
        .filter(|(subject, version)| !held.contains(&(subject.as_str(), *version)))
        .collect()
}

fn held_versions(dump: &Dump) -> impl Iterator<Item = (&str, i64)> {
    dump.subjects
        .iter()
        .flat_map(|s| s.versions.iter().map(move |v| (s.name.as_str(), v.version)))
}

/// Keeps the subjects `keep` accepts and, from the others, only the versions those refer to
/// (transitively), so that what is kept can still be registered; then only the ids kept
/// versions carry.
pub fn keep_with_references(dump: &mut Dump, keep: impl Fn(&str) -> bool) {
    let schemas = schemas_by_key(dump);
    let ids: BTreeMap<(&str, i64), i64> = dump
        .subjects
        .iter()
        .flat_map(|s| {
            s.versions
                .iter()
                .map(move |v| ((s.name.as_str(), v.version), v.id))
        })
        .collect();
    let mut kept: BTreeSet<(String, i64)> = BTreeSet::new();
    let mut pending: Vec<(&str, i64)> = held_versions(dump).filter(|(s, _)| keep(s)).collect();
    while let Some((subject, version)) = pending.pop() {
        if !kept.insert((subject.to_string(), version)) {
            continue;
        }
        let context = covenant_store::context::context_of(subject);
        let refs = ids
            .get(&(subject, version))
            .and_then(|id| schemas.get(&(context, *id)));
        for r in refs.map(|s| s.references.as_slice()).unwrap_or(&[]) {
            pending.push((r.subject.as_str(), r.version));
        }
    }
    for subject in &mut dump.subjects {
        let name = subject.name.clone();
        subject
            .versions
            .retain(|v| kept.contains(&(name.clone(), v.version)));
    }
    dump.subjects.retain(|s| !s.versions.is_empty());
    let carried: BTreeSet<(String, i64)> = dump
        .subjects
        .iter()
        .flat_map(|s| {
            s.versions.iter().map(|v| {
                let (context, id) = version_key(&s.name, v);
                (context.to_string(), id)
            })
        })
        .collect();
    dump.schemas
        .retain(|s| carried.contains(&(s.context.clone(), s.id)));
}

/// What makes two stored schemas the same schema, on either side of a transfer: the
/// registry's identity over a canonical text (Avro as the Avro library prints it, JSON
/// Schema compacted with key order kept, Protobuf trimmed), references, metadata and rules.
pub fn identity(
    schema_type: &str,
    text: &str,
    references: &[SchemaRef],
    metadata: &Option<serde_json::Value>,
    rule_set: &Option<serde_json::Value>,
) -> String {
    let compact = (schema_type == "JSON")
        .then(|| serde_json::from_str::<serde_json::Value>(text).ok())
        .flatten()
        .map(|v| v.to_string());
    let text = compact.as_deref().unwrap_or(text.trim());
    let metadata = metadata.clone().filter(|m| !m.is_null());
    let rule_set = rule_set.clone().filter(|r| !r.is_null());
    covenant_registry::content_key(schema_type, text, references, &metadata, &rule_set)
}

pub fn schema_identity(s: &DumpSchema) -> String {
    identity(
        &s.schema_type,
        &s.schema,
        &s.references,
        &s.metadata,
        &s.rule_set,
    )
}

/// Whether two stored schemas are the same schema. Schemas read back exactly as they were
/// written are equal field by field, and then their identities are not computed: hashing a
/// canonical form was three quarters of verifying a migration.
fn same_schema(a: &DumpSchema, b: &DumpSchema) -> bool {
    let equal = a.schema_type == b.schema_type
        && a.schema == b.schema
        && a.references == b.references
        && a.metadata == b.metadata
        && a.rule_set == b.rule_set;
    equal || schema_identity(a) == schema_identity(b)
}

/// How much of each kind one side holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tally {
    pub subjects: usize,
    pub versions: usize,
    pub soft_deleted: usize,
    pub schemas: usize,
    pub configs: usize,
    pub modes: usize,
}

impl Tally {
    pub fn of(dump: &Dump) -> Tally {
        let versions = dump.subjects.iter().flat_map(|s| &s.versions);
        Tally {
            subjects: dump.subjects.len(),
            versions: versions.clone().count(),
            soft_deleted: versions.filter(|v| v.deleted).count(),
            schemas: dump.schemas.len(),
            configs: dump.configs.len(),
            modes: dump.modes.len(),
        }
    }

    fn rows(&self) -> [(&'static str, usize); 6] {
        [
            ("subjects", self.subjects),
            ("versions", self.versions),
            ("soft-deleted versions", self.soft_deleted),
            ("schema ids", self.schemas),
            ("subject and global configs", self.configs),
            ("subject and global modes", self.modes),
        ]
    }
}

/// One way the destination does not hold what the source does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Difference {
    /// Absent on the destination (a transfer would write it).
    Missing(String),
    /// Present on the destination with other content (a transfer leaves it alone).
    Conflict(String),
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Difference::Missing(what) => write!(f, "missing: {what}"),
            Difference::Conflict(what) => write!(f, "different: {what}"),
        }
    }
}

/// The outcome of comparing a source with a destination after (or before) a transfer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verification {
    pub source: Tally,
    pub destination: Tally,
    pub differences: Vec<Difference>,
}

impl Verification {
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty()
    }

    /// The report: a count table, then every difference, then a verdict line.
    pub fn report(&self) -> String {
        let mut out = format!("{:<28} {:>8} {:>12}\n", "kind", "source", "destination");
        let rows = self.source.rows().into_iter().zip(self.destination.rows());
        for ((kind, s), (_, d)) in rows {
            out.push_str(&format!("{kind:<28} {s:>8} {d:>12}\n"));
        }
        for d in &self.differences {
            out.push_str(&format!("{d}\n"));
        }
        out.push_str(&match self.differences.len() {
            0 => "verified: every source id has the same canonical schema on the destination\n"
                .to_string(),
            n => format!("{n} differences\n"),
        });
        out
    }
}

/// Checks that `destination` holds everything `source` does: every (subject, version) with the
/// same id and soft-delete flag, every id with an equal canonical schema, every config and mode.
/// The destination may hold more.
pub fn verify(source: &Dump, destination: &Dump) -> Verification {
    let mut differences = Vec::new();
    let held: BTreeMap<(&str, i64), &DumpVersion> = destination
        .subjects
        .iter()
        .flat_map(|s| {
            s.versions
                .iter()
                .map(move |v| ((s.name.as_str(), v.version), v))
        })
        .collect();
    for subject in &source.subjects {
        for v in &subject.versions {
            let what = format!(
                "version {} of subject '{}' (id {})",
                v.version, subject.name, v.id
            );
            match held.get(&(subject.name.as_str(), v.version)) {
                None => differences.push(Difference::Missing(what)),
                Some(d) if d.id != v.id => {
                    differences.push(Difference::Conflict(format!("{what} has id {}", d.id)))
                }
                Some(d) if d.deleted != v.deleted => differences.push(Difference::Conflict(
                    format!("{what} is soft-deleted on one side only"),
                )),
                Some(_) => {}
            }
        }
    }
    let ids = schemas_by_key(destination);
    for s in &source.schemas {
        match ids.get(&s.key()) {
            None => differences.push(Difference::Missing(format!("schema id {}", s.id))),
            Some(d) if !same_schema(d, s) => differences.push(Difference::Conflict(format!(
                "schema id {}: the canonical forms differ",
                s.id
            ))),
            Some(_) => {}
        }
    }
    verify_settings(source, destination, &mut differences);
    Verification {
        source: Tally::of(source),
        destination: Tally::of(destination),
        differences,
    }
}

/// A config's settings as compared: Covenant answers every config read with the policy
/// preset in force (`policyPreset`), so its default, `covenant`, counts as unset.
fn settings(
    extra: &serde_json::Map<String, serde_json::Value>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut extra = extra.clone();
    if extra.get("policyPreset").and_then(|v| v.as_str()) == Some("covenant") {
        extra.remove("policyPreset");
    }
    extra
}

/// Configs and modes, by scope.
fn verify_settings(source: &Dump, destination: &Dump, differences: &mut Vec<Difference>) {
    let scope = |s: &Option<String>| match s {
        Some(s) => format!("subject '{s}'"),
        None => "the global scope".to_string(),
    };
    for c in &source.configs {
        let what = format!("config of {}", scope(&c.subject));
        match destination.configs.iter().find(|d| d.subject == c.subject) {
            None => differences.push(Difference::Missing(what)),
            Some(d)
                if d.compatibility != c.compatibility
                    || settings(&d.extra) != settings(&c.extra) =>
            {
                differences.push(Difference::Conflict(what))
            }
            Some(_) => {}
        }
    }
    for m in &source.modes {
        let what = format!("mode {} of {}", m.mode, scope(&m.subject));
        match destination.modes.iter().find(|d| d.subject == m.subject) {
            None => differences.push(Difference::Missing(what)),
            Some(d) if d.mode != m.mode => differences.push(Difference::Conflict(what)),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::{DumpSubject, FORMAT, FORMAT_VERSION};

    fn schema(id: i64, text: &str, references: Vec<SchemaRef>) -> DumpSchema {
        DumpSchema {
            id,
            context: ".".into(),
            schema_type: "JSON".into(),
            schema: text.into(),
            references,
            metadata: None,
            rule_set: None,
            content_key: format!("k{id}"),
        }
    }

    fn version(version: i64, id: i64) -> DumpVersion {
        DumpVersion {
            version,
            id,
            deleted: false,
            created_at: None,
        }
    }

    fn dump_of(schemas: Vec<DumpSchema>, subjects: Vec<(&str, Vec<DumpVersion>)>) -> Dump {
        Dump {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            exported_at: None,
            schemas,
            subjects: subjects
                .into_iter()
                .map(|(name, versions)| DumpSubject {
                    name: name.into(),
                    versions,
                })
                .collect(),
            configs: vec![],
            modes: vec![],
            audit: vec![],
            governance: Default::default(),
            samples: vec![],
            live_marks: vec![],
            profiles: vec![],
            keks: vec![],
            deks: vec![],
        }
    }

    fn to(subject: &str, version: i64) -> SchemaRef {
        SchemaRef {
            name: format!("{subject}.json"),
            subject: subject.into(),
            version,
        }
    }

    #[test]
    fn references_are_written_before_their_referrers() {
        // a@1 refers to c@2, which refers to b@1; c@1 refers to nothing.
        let dump = dump_of(
            vec![
                schema(1, "{}", vec![to("c", 2)]),
                schema(2, "{\"a\":1}", vec![]),
                schema(3, "{\"b\":1}", vec![]),
                schema(4, "{\"c\":1}", vec![to("b", 1)]),
            ],
            vec![
                ("a", vec![version(1, 1)]),
                ("b", vec![version(1, 2)]),
                ("c", vec![version(1, 3), version(2, 4)]),
            ],
        );
        let order: Vec<(&str, i64)> = write_order(&dump)
            .into_iter()
            .map(|(s, v)| (s, v.version))
            .collect();
        assert_eq!(order, [("b", 1), ("c", 2), ("a", 1), ("c", 1)]);
    }

    #[test]
    fn a_kept_subset_brings_the_versions_it_refers_to() {
        // keep-a@1 refers to lib@2, which refers to base@1; lib@1 and other@1 are not needed.
        let mut dump = dump_of(
            vec![
                schema(1, "{}", vec![to("lib", 2)]),
                schema(2, "{\"l\":1}", vec![]),
                schema(3, "{\"l\":2}", vec![to("base", 1)]),
                schema(4, "{\"b\":1}", vec![]),
                schema(5, "{\"o\":1}", vec![]),
            ],
            vec![
                ("base", vec![version(1, 4)]),
                ("keep-a", vec![version(1, 1)]),
                ("lib", vec![version(1, 2), version(2, 3)]),
                ("other", vec![version(1, 5)]),
            ],
        );
        assert_eq!(unresolved_references(&dump), BTreeSet::new());
        keep_with_references(&mut dump, |s| s.starts_with("keep-"));
        let held: Vec<(&str, i64)> = held_versions(&dump).collect();
        assert_eq!(held, [("base", 1), ("keep-a", 1), ("lib", 2)]);
        let ids: Vec<i64> = dump.schemas.iter().map(|s| s.id).collect();
        assert_eq!(ids, [1, 3, 4]);
        dump.subjects.retain(|s| s.name != "base");
        let want: BTreeSet<(String, i64)> = [("base".to_string(), 1)].into();
        assert_eq!(unresolved_references(&dump), want);
    }

    #[test]
    fn verification_finds_missing_and_different_things_only() {
        let source = dump_of(
            vec![schema(1, "{\"x\": 1}", vec![]), schema(2, "{}", vec![])],
            vec![("s", vec![version(1, 1), version(2, 2)])],
        );
        let mut same = dump_of(
            vec![schema(1, "{\"x\":1}", vec![]), schema(2, "{ }", vec![])],
            vec![("s", vec![version(1, 1), version(2, 2)]), ("extra", vec![])],
        );
        let verification = verify(&source, &same);
        assert!(verification.is_clean(), "{}", verification.report());
        assert_eq!(verification.destination.subjects, 2);
        // The same text with other metadata is another schema.
        let mut tagged = same.clone();
        tagged.schemas[0].schema = source.schemas[0].schema.clone();
        tagged.schemas[0].metadata = Some(serde_json::json!({"properties": {"owner": "x"}}));
        assert_eq!(verify(&source, &tagged).differences.len(), 1);
        same.schemas[1].schema = "{\"y\":true}".into();
        same.subjects[0].versions[0].deleted = true;
        same.subjects[0].versions.pop();
        let differences: Vec<String> = verify(&source, &same)
            .differences
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            differences,
            [
                "different: version 1 of subject 's' (id 1) is soft-deleted on one side only",
                "missing: version 2 of subject 's' (id 2)",
                "different: schema id 2: the canonical forms differ",
            ]
        );
    }
}
