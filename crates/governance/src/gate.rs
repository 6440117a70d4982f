//! The removal gate: may a new schema version drop these fields?
//!
//! The decision is a pure function of gathered evidence ([`GateEvidence`]), so it can be
//! tested with simulated weeks and explained line by line. A field is governed when it is
//! deprecated, declared read by a live consumer, or seen in usage within the look-back; an
//! ungoverned field adds no blocker (the compatibility check still applies).

use crate::clock::{format_day, format_span};
use covenant_store::governance::{
    BlockerKind, Consumer, Deprecation, Exception, FieldUsage, ReaderUsage, ReportingSince,
    SchemaRead, Stage,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Why a removal may not happen yet, in words a person can act on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocker {
    pub kind: BlockerKind,
    pub field: String,
    /// The consumer (or, for unattributed usage, the client id) concerned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub party: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_id: Option<i64>,
    pub message: String,
}

/// A blocker that an accepted exception overrides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overridden {
    pub blocker: Blocker,
    pub exception: Exception,
}

/// The gate's verdict: what still blocks, and what exceptions let through.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct GateReport {
    pub subject: String,
    pub fields: Vec<String>,
    pub evaluated_at: i64,
    pub blockers: Vec<Blocker>,
    pub overridden: Vec<Overridden>,
}

impl GateReport {
    pub fn allows_removal(&self) -> bool {
        self.blockers.is_empty()
    }

    /// One line per blocker, for error messages (the registry's 40901).
    pub fn summary(&self) -> String {
        let lines: Vec<String> = self
            .blockers
            .iter()
            .map(|b| format!("[{}] {}", b.kind, b.message))
            .collect();
        lines.join("\n")
    }
}

/// Everything the gate looks at, for one subject, as of `now`.
#[derive(Debug, Clone, Default)]
pub struct GateEvidence {
    pub subject: String,
    pub now: i64,
    /// Every consumer; retired ones are ignored except as names in old usage.
    pub consumers: Vec<Consumer>,
    /// The subject's deprecations.
    pub deprecations: Vec<Deprecation>,
    /// Field reads of the subject covering at least the longest look-back.
    pub field_usage: Vec<FieldUsage>,
    /// Reports of the subject over the same range.
    pub reader_usage: Vec<ReaderUsage>,
    /// The fields each reader schema id seen in `reader_usage` contains: a report by a reader
    /// schema that still has the field counts as use of it, itemized or not (replay jobs).
    pub reader_fields: BTreeMap<i64, Vec<String>>,
    pub reporting_since: Vec<ReportingSince>,
    /// Schema fetches of the subject by readers no live consumer owns (principals, or user
    /// agents of anonymous requests), over the unattributed look-back; their schema ids are in
    /// `reader_fields` too.
    pub unattributed_reads: Vec<SchemaRead>,
    /// How far back unattributed usage (and usage by retired consumers) is looked for.
    pub unattributed_lookback_ms: i64,
    /// The fields of each version a live consumer declares reading whole (`S@N`, no field
    /// list): such a consumer declares every one of them.
    pub version_fields: BTreeMap<i64, Vec<String>>,
}

impl GateEvidence {
    /// The longest look-back any check needs: gather usage at least this far back.
    pub fn lookback_ms(consumers: &[Consumer], unattributed_lookback_ms: i64) -> i64 {
        consumers
            .iter()
            .filter(|c| c.is_active())
            .map(|c| c.cadence.duration_ms())
            .fold(unattributed_lookback_ms, i64::max)
    }
}

/// The evidence indexed for the gate's lookups, built once per decision: which fields each
/// reader schema has, which fields each live consumer declares for the subject, and the
/// itemized reads of each field. A removal's check is then a few hash lookups per removed
/// field, not a scan over every declared or read field.
struct Index<'a> {
    evidence: &'a GateEvidence,
    reader_fields: HashMap<i64, HashSet<&'a str>>,
    declared: HashMap<&'a str, HashSet<&'a str>>,
    field_usage: HashMap<&'a str, Vec<&'a FieldUsage>>,
}

impl<'a> Index<'a> {
    fn new(evidence: &'a GateEvidence) -> Index<'a> {
        let reader_fields = evidence
            .reader_fields
            .iter()
            .map(|(id, fields)| (*id, fields.iter().map(String::as_str).collect()))
            .collect();
        let declared = evidence
            .consumers
            .iter()
            .filter(|c| c.is_active())
            .filter_map(|c| {
                let read = c.read_of(&evidence.subject)?;
                // A whole version (`S@N`) declares each of its fields, as the freeze reads it.
                let fields = match (read.fields.is_empty(), read.reader_version) {
                    (true, Some(v)) => evidence.version_fields.get(&v)?,
                    _ => &read.fields,
                };
                Some((c.name.as_str(), fields.iter().map(String::as_str).collect()))
            })
            .collect();
        let mut field_usage: HashMap<&str, Vec<&FieldUsage>> = HashMap::new();
        for u in &evidence.field_usage {
            field_usage.entry(u.field.as_str()).or_default().push(u);
        }
        Index {
            evidence,
            reader_fields,
            declared,
            field_usage,
        }
    }

    fn reader_has(&self, reader: Option<i64>, field: &str) -> bool {
        reader
            .and_then(|id| self.reader_fields.get(&id))
            .is_some_and(|fields| fields.contains(field))
    }

    fn declares(&self, consumer: &str, field: &str) -> bool {
        self.declared
            .get(consumer)
            .is_some_and(|fields| fields.contains(field))
    }

    fn reads_of(&self, field: &str) -> &[&'a FieldUsage] {
        self.field_usage.get(field).map_or(&[], Vec::as_slice)
    }

    /// The latest time `who` (a consumer name, or None with a client for unattributed use)
    /// read `field` at or after `since`, and how (itemized or through its reader schema).
    fn last_use(
        &self,
        field: &str,
        who: Option<&str>,
        client: Option<&str>,
        since: i64,
    ) -> Option<(i64, Option<i64>)> {
        let matches = |consumer: &Option<String>, client_id: &str| {
            consumer.as_deref() == who && client.is_none_or(|c| c == client_id)
        };
        let itemized = self
            .reads_of(field)
            .iter()
            .filter(|u| u.last_at >= since && matches(&u.consumer, &u.client_id))
            .map(|u| (u.last_at, u.reader_schema_id));
        let through_reader = self
            .evidence
            .reader_usage
            .iter()
            .filter(|u| {
                u.last_at >= since
                    && matches(&u.consumer, &u.client_id)
                    && self.reader_has(u.reader_schema_id, field)
            })
            .map(|u| (u.last_at, u.reader_schema_id));
        itemized.chain(through_reader).max_by_key(|(at, _)| *at)
    }
}

fn active_deprecation<'a>(evidence: &'a GateEvidence, field: &str) -> Option<&'a Deprecation> {
    evidence
        .deprecations
        .iter()
        .filter(|d| d.stage != Stage::Removed && d.target.field() == Some(field))
        .max_by_key(|d| d.id)
}

fn blocker(
    kind: BlockerKind,
    field: &str,
    party: Option<&str>,
    deprecation: Option<&Deprecation>,
    message: String,
) -> Blocker {
    Blocker {
        kind,
        field: field.to_string(),
        party: party.map(str::to_string),
        deprecation_id: deprecation.map(|d| d.id),
        message,
    }
}

fn via(reader: Option<i64>) -> String {
    match reader {
        Some(id) => format!(" with reader schema id {id}"),
        None => String::new(),
    }
}

/// The blockers for one field, before exceptions.
fn field_blockers(index: &Index<'_>, field: &str) -> Vec<Blocker> {
    let evidence = index.evidence;
    let subject = &evidence.subject;
    let now = evidence.now;
    let deprecation = active_deprecation(evidence, field);
    let active: Vec<&Consumer> = evidence
        .consumers
        .iter()
        .filter(|c| c.is_active())
        .collect();
    let declared: Vec<&&Consumer> = active
        .iter()
        .filter(|c| index.declares(&c.name, field))
        .collect();
    let unattributed_since = now - evidence.unattributed_lookback_ms;
    let seen = index
        .reads_of(field)
        .iter()
        .any(|u| u.last_at >= unattributed_since)
        || evidence.reader_usage.iter().any(|u| {
            u.last_at >= unattributed_since && index.reader_has(u.reader_schema_id, field)
        });
    if deprecation.is_none() && declared.is_empty() && !seen {
        return Vec::new();
    }

    let mut out = Vec::new();
    match deprecation {
        None => {
            for c in &declared {
                out.push(blocker(
                    BlockerKind::NotDeprecated,
                    field,
                    Some(&c.name),
                    None,
                    format!(
                        "Field '{field}' of subject '{subject}' is not deprecated, and consumer '{}' (owner '{}') declares that it reads it; deprecate it with a replacement first.",
                        c.name, c.owner
                    ),
                ));
            }
        }
        Some(d) => {
            if d.replacement.as_deref().is_none_or(|r| r.trim().is_empty()) {
                out.push(blocker(
                    BlockerKind::NoReplacement,
                    field,
                    None,
                    Some(d),
                    format!(
                        "Deprecation #{} of field '{field}' names no replacement; consumers have nothing to move to.",
                        d.id
                    ),
                ));
            }
            if d.stage < Stage::Removable {
                out.push(blocker(
                    BlockerKind::StageNotRemovable,
                    field,
                    None,
                    Some(d),
                    format!(
                        "Deprecation #{} of field '{field}' is at stage '{}'; removal needs stage 'removable'.",
                        d.id, d.stage
                    ),
                ));
            }
            for c in &declared {
                out.push(blocker(
                    BlockerKind::ConsumerDeclared,
                    field,
                    Some(&c.name),
                    Some(d),
                    format!(
                        "Consumer '{}' (owner '{}', {}) still declares that it reads '{field}'; it must move to '{}' and update its declaration.",
                        c.name,
                        c.owner,
                        c.contact,
                        d.replacement.as_deref().unwrap_or("a replacement")
                    ),
                ));
            }
        }
    }

    // Usage and evidence coverage, per consumer, over that consumer's own cadence.
    let used_by: BTreeSet<&str> = index
        .reads_of(field)
        .iter()
        .filter_map(|u| u.consumer.as_deref())
        .chain(
            evidence
                .reader_usage
                .iter()
                .filter(|u| index.reader_has(u.reader_schema_id, field))
                .filter_map(|u| u.consumer.as_deref()),
        )
        .collect();
    for c in &active {
        if !index.declared.contains_key(c.name.as_str()) && !used_by.contains(c.name.as_str()) {
            continue;
        }
        let lookback = c.cadence.duration_ms();
        let since = now - lookback;
        if let Some((last, reader)) = index.last_use(field, Some(&c.name), None, since) {
            out.push(blocker(
                BlockerKind::RecentUsage,
                field,
                Some(&c.name),
                deprecation,
                format!(
                    "Consumer '{}' ({} cadence) read '{field}'{} on {}, {} ago; removal needs a full {} cadence ({}) of silence, so not before {}.",
                    c.name,
                    c.cadence,
                    via(reader),
                    format_day(last),
                    format_span(now - last),
                    c.cadence,
                    c.cadence.describe(),
                    format_day(last + lookback)
                ),
            ));
            continue;
        }
        let first = evidence
            .reporting_since
            .iter()
            .filter(|r| r.consumer.as_deref() == Some(c.name.as_str()))
            .map(|r| r.first_at)
            .min();
        match first {
            Some(first) if first <= since => {}
            Some(first) => out.push(blocker(
                BlockerKind::InsufficientEvidence,
                field,
                Some(&c.name),
                deprecation,
                format!(
                    "Consumer '{}' ({} cadence) has reported usage of subject '{subject}' only since {} ({}); its silence must cover a full {} cadence ({}), so not before {}.",
                    c.name,
                    c.cadence,
                    format_day(first),
                    format_span(now - first),
                    c.cadence,
                    c.cadence.describe(),
                    format_day(first + lookback)
                ),
            )),
            None => out.push(blocker(
                BlockerKind::InsufficientEvidence,
                field,
                Some(&c.name),
                deprecation,
                format!(
                    "Consumer '{}' ({} cadence) reads subject '{subject}' but has reported no usage; silence is not evidence until its reports cover a full {} cadence ({}).",
                    c.name,
                    c.cadence,
                    c.cadence,
                    c.cadence.describe()
                ),
            )),
        }
    }

    // Usage attributed to names that are no longer live consumers, and usage nobody owns.
    let live: BTreeSet<&str> = active.iter().map(|c| c.name.as_str()).collect();
    for name in used_by.iter().filter(|n| !live.contains(**n)) {
        if let Some((last, reader)) = index.last_use(field, Some(name), None, unattributed_since) {
            out.push(blocker(
                BlockerKind::RecentUsage,
                field,
                Some(name),
                deprecation,
                format!(
                    "Retired or unknown consumer '{name}' read '{field}'{} on {}, within the last {}; find who still runs it.",
                    via(reader),
                    format_day(last),
                    format_span(evidence.unattributed_lookback_ms)
                ),
            ));
        }
    }
    let clients: BTreeSet<&str> = index
        .reads_of(field)
        .iter()
        .filter(|u| u.consumer.is_none())
        .map(|u| u.client_id.as_str())
        .chain(
            evidence
                .reader_usage
                .iter()
                .filter(|u| u.consumer.is_none() && index.reader_has(u.reader_schema_id, field))
                .map(|u| u.client_id.as_str()),
        )
        .collect();
    if let Some(d) = deprecation {
        out.extend(unattributed_read_blockers(
            index,
            field,
            d,
            &clients,
            unattributed_since,
        ));
    }
    for client in clients {
        if let Some((last, reader)) = index.last_use(field, None, Some(client), unattributed_since)
        {
            out.push(blocker(
                BlockerKind::UnattributedUsage,
                field,
                Some(client),
                deprecation,
                format!(
                    "Client '{client}', which no consumer owns, read '{field}'{} on {}; unknown ownership is a finding, not permission: attribute it to a consumer and migrate it.",
                    via(reader),
                    format_day(last)
                ),
            ));
        }
    }
    out
}

/// A reader no consumer owns that fetched a version still carrying the deprecated `field`
/// blocks its removal until it is attributed (a consumer declares it among its clients) or
/// excepted. Readers already blocking through usage reports (`reported`) are not named twice.
fn unattributed_read_blockers(
    index: &Index<'_>,
    field: &str,
    deprecation: &Deprecation,
    reported: &BTreeSet<&str>,
    since: i64,
) -> Vec<Blocker> {
    let evidence = index.evidence;
    let mut latest: BTreeMap<&str, &SchemaRead> = BTreeMap::new();
    for r in evidence.unattributed_reads.iter().filter(|r| {
        r.last_at >= since
            && !reported.contains(r.reader.as_str())
            && index.reader_has(Some(r.schema_id), field)
    }) {
        let slot = latest.entry(r.reader.as_str()).or_insert(r);
        if r.last_at > slot.last_at {
            *slot = r;
        }
    }
    latest
        .into_values()
        .map(|r| {
            blocker(
                BlockerKind::UnattributedUsage,
                field,
                Some(&r.reader),
                Some(deprecation),
                format!(
                    "Reader '{}', which no consumer owns, fetched version {} of subject '{}' (which has '{field}') on {}; attribute it by declaring a consumer with client '{}', or record an exception.",
                    r.reader,
                    r.version,
                    evidence.subject,
                    format_day(r.last_at),
                    r.reader
                ),
            )
        })
        .collect()
}

/// Decides whether `removed_fields` (normalized paths) may be dropped from `evidence.subject`,
/// applying each deprecation's exceptions: one exception overrides one matching blocker.
pub fn removal_gate(evidence: &GateEvidence, removed_fields: &[String]) -> GateReport {
    let mut report = GateReport {
        subject: evidence.subject.clone(),
        fields: removed_fields.to_vec(),
        evaluated_at: evidence.now,
        ..GateReport::default()
    };
    if removed_fields.is_empty() {
        return report;
    }
    let index = Index::new(evidence);
    let mut used: BTreeSet<(i64, i64)> = BTreeSet::new();
    for field in removed_fields {
        for b in field_blockers(&index, field) {
            let exception = b.deprecation_id.and_then(|id| {
                let d = evidence.deprecations.iter().find(|d| d.id == id)?;
                let e = d.exceptions.iter().find(|e| {
                    e.overrides == b.kind
                        && !used.contains(&(id, e.id))
                        && e.party
                            .as_deref()
                            .is_none_or(|p| Some(p) == b.party.as_deref())
                })?;
                used.insert((id, e.id));
                Some(e.clone())
            });
            match exception {
                Some(exception) => report.overridden.push(Overridden {
                    blocker: b,
                    exception,
                }),
                None => report.blockers.push(b),
            }
        }
    }
    report
}

/// The blockers that still stand (see [`removal_gate`]).
pub fn removal_blockers(evidence: &GateEvidence, removed_fields: &[String]) -> Vec<Blocker> {
    removal_gate(evidence, removed_fields).blockers
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_store::governance::{
        Cadence, Criticality, DeprecationTarget, NewConsumer, NewDeprecation, RecordNotes,
        SubjectRead,
    };

    const DAY: i64 = 86_400_000;

    fn declared(name: &str) -> Consumer {
        Consumer::from_new(
            NewConsumer {
                name: name.into(),
                owner: "o".into(),
                purpose: "p".into(),
                cadence: Cadence::Weekly,
                criticality: Criticality::Low,
                contact: "c".into(),
                clients: vec![],
                reads: vec![SubjectRead {
                    subject: "s".into(),
                    reader_version: None,
                    fields: vec!["f".into()],
                }],
                environment: Default::default(),
            },
            0,
        )
    }

    fn deprecation(stage: Stage, exceptions: Vec<Exception>) -> Deprecation {
        let mut d = Deprecation::from_new(
            1,
            NewDeprecation {
                target: DeprecationTarget::Field {
                    subject: "s".into(),
                    path: "f".into(),
                },
                contract: String::new(),
                old_promise: "old".into(),
                new_promise: "new".into(),
                replacement: Some("g".into()),
                owners: vec![],
                window_start: 0,
                window_end: DAY,
                sunset: None,
                notes: RecordNotes::default(),
                announced_by: "x".into(),
            },
            0,
        );
        d.stage = stage;
        d.exceptions = exceptions;
        d
    }

    fn exception(id: i64, party: Option<&str>) -> Exception {
        Exception {
            id,
            approver: "risk".into(),
            reason: "accepted".into(),
            overrides: BlockerKind::ConsumerDeclared,
            party: party.map(str::to_string),
            approved_at: 0,
        }
    }

    fn evidence(deprecation: Deprecation) -> GateEvidence {
        GateEvidence {
            subject: "s".into(),
            now: 100 * DAY,
            consumers: vec![declared("a"), declared("b")],
            deprecations: vec![deprecation],
            reporting_since: vec![
                ReportingSince {
                    consumer: Some("a".into()),
                    client_id: "ca".into(),
                    first_at: 0,
                },
                ReportingSince {
                    consumer: Some("b".into()),
                    client_id: "cb".into(),
                    first_at: 0,
                },
            ],
            unattributed_lookback_ms: 31 * DAY,
            ..GateEvidence::default()
        }
    }

    #[test]
    fn one_exception_overrides_one_blocker() {
        let e = evidence(deprecation(Stage::Removable, vec![exception(1, None)]));
        let report = removal_gate(&e, &["f".into()]);
        assert_eq!(report.overridden.len(), 1);
        assert_eq!(report.blockers.len(), 1, "{:?}", report.blockers);
        assert_eq!(report.blockers[0].kind, BlockerKind::ConsumerDeclared);
    }

    #[test]
    fn a_narrowed_exception_only_covers_its_party() {
        let e = evidence(deprecation(Stage::Removable, vec![exception(1, Some("b"))]));
        let report = removal_gate(&e, &["f".into()]);
        assert_eq!(report.overridden[0].blocker.party.as_deref(), Some("b"));
        assert_eq!(report.blockers[0].party.as_deref(), Some("a"));
    }

    fn read_by(reader: &str, at: i64) -> SchemaRead {
        SchemaRead {
            subject: "s".into(),
            version: 3,
            schema_id: 30,
            reader: reader.into(),
            reads: 12,
            first_at: at,
            last_at: at,
        }
    }

    #[test]
    fn an_unattributed_reader_of_a_deprecated_field_blocks_until_excepted() {
        let mut d = deprecation(Stage::Removable, vec![]);
        let mut e = evidence(d.clone());
        e.consumers.clear();
        e.reader_fields.insert(30, vec!["f".into(), "g".into()]);
        e.unattributed_reads = vec![read_by("billing-job", 99 * DAY), read_by("old", DAY)];
        let report = removal_gate(&e, &["f".into()]);
        assert_eq!(report.blockers.len(), 1, "{:?}", report.blockers);
        let b = &report.blockers[0];
        assert_eq!(b.kind, BlockerKind::UnattributedUsage);
        assert_eq!(b.party.as_deref(), Some("billing-job"));
        assert!(b.message.contains("version 3"), "{}", b.message);
        // A field the version read does not carry is not blocked by that read.
        assert!(removal_gate(&e, &["h".into()]).allows_removal());
        // An exception for that reader lets the removal through.
        let mut x = exception(1, Some("billing-job"));
        x.overrides = BlockerKind::UnattributedUsage;
        d.exceptions = vec![x];
        e.deprecations = vec![d];
        assert!(removal_gate(&e, &["f".into()]).allows_removal());
    }

    #[test]
    fn reads_of_a_field_that_is_not_deprecated_add_no_blocker() {
        let mut e = evidence(deprecation(Stage::Removable, vec![]));
        e.consumers.clear();
        e.deprecations.clear();
        e.reader_fields.insert(30, vec!["f".into()]);
        e.unattributed_reads = vec![read_by("billing-job", 99 * DAY)];
        assert!(removal_gate(&e, &["f".into()]).allows_removal());
    }

    #[test]
    fn retired_consumers_stop_blocking_and_ungoverned_fields_pass() {
        let mut e = evidence(deprecation(Stage::Removable, vec![]));
        for c in &mut e.consumers {
            c.retired_at = Some(DAY);
        }
        assert!(removal_blockers(&e, &["f".into(), "other".into()]).is_empty());
        let report = removal_gate(
            &evidence(deprecation(Stage::Frozen, vec![])),
            &["other".into()],
        );
        assert!(report.allows_removal());
    }
}
