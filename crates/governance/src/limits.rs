//! How large governance documents may be: one table of limits, as data, and the checks that
//! apply it. Every document a client sends (usage reports, consumers, deprecations and their
//! updates, evidence, exceptions, stage changes) is bounded in size, in how many items each of
//! its lists holds and in how long each identifier and text is, so that the work the server
//! does for it (storing it, gating registrations over it, answering it back, exporting its
//! counters) is bounded by construction.
//!
//! A refusal names the limit it hit: a document larger than its byte limit is a
//! [`GovernanceError::TooLarge`] (HTTP 413), a list with too many items or an identifier or a
//! text too long is a [`GovernanceError::OverLimit`] (HTTP 422). `docs/governance.md` lists
//! the same table.

use covenant_store::governance::{
    DeprecationTarget, EvidenceBody, GovernanceError, GovernanceResult, NewConsumer,
    NewDeprecation, UsageReport,
};
use serde::Serialize;

/// What a limit counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Bytes of the document's JSON form: over it, 413.
    Bytes,
    /// Items of a list or map: over it, 422.
    Items,
    /// Bytes of one UTF-8 identifier or text: over it, 422.
    Length,
}

/// One limit: its name (quoted in refusals), what it bounds and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limit {
    pub name: &'static str,
    pub unit: Unit,
    pub max: usize,
    pub bounds: &'static str,
}

const KIB: usize = 1024;

pub const USAGE_REPORT_BYTES: Limit = Limit {
    name: "usage_report.bytes",
    unit: Unit::Bytes,
    max: 256 * KIB,
    bounds: "a usage report's JSON",
};
pub const USAGE_FIELDS_READ: Limit = Limit {
    name: "usage_report.fields_read",
    unit: Unit::Items,
    max: 2_000,
    bounds: "field paths one usage report itemizes",
};
pub const USAGE_WRITER_IDS: Limit = Limit {
    name: "usage_report.writer_schema_ids",
    unit: Unit::Items,
    max: 256,
    bounds: "writer schema ids one usage report names",
};
pub const USAGE_VERSIONS: Limit = Limit {
    name: "usage_report.records_by_version",
    unit: Unit::Items,
    max: 256,
    bounds: "writer versions one usage report counts records for",
};
pub const USAGE_ENUM_FIELDS: Limit = Limit {
    name: "usage_report.unknown_enum_fields",
    unit: Unit::Items,
    max: 64,
    bounds: "enum fields one usage report counts unknown symbols for",
};
pub const USAGE_ENUM_VALUES: Limit = Limit {
    name: "usage_report.unknown_enum_values",
    unit: Unit::Items,
    max: 256,
    bounds: "unknown enum symbols one usage report counts, over all its fields",
};
pub const CONSUMER_BYTES: Limit = Limit {
    name: "consumer.bytes",
    unit: Unit::Bytes,
    max: 512 * KIB,
    bounds: "a consumer declaration's JSON",
};
pub const CONSUMER_CLIENTS: Limit = Limit {
    name: "consumer.clients",
    unit: Unit::Items,
    max: 256,
    bounds: "client ids one consumer declares",
};
pub const CONSUMER_READS: Limit = Limit {
    name: "consumer.reads",
    unit: Unit::Items,
    max: 256,
    bounds: "subjects one consumer declares reading",
};
pub const CONSUMER_FIELDS: Limit = Limit {
    name: "consumer.fields",
    unit: Unit::Items,
    max: 5_000,
    bounds: "field paths one consumer declares, over all its reads",
};
pub const DEPRECATION_BYTES: Limit = Limit {
    name: "deprecation.bytes",
    unit: Unit::Bytes,
    max: 1024 * KIB,
    bounds: "a deprecation record's JSON, with its history, evidence, exceptions and updates",
};
pub const DEPRECATION_OWNERS: Limit = Limit {
    name: "deprecation.owners",
    unit: Unit::Items,
    max: 32,
    bounds: "owners one deprecation names",
};
pub const DEPRECATION_EVIDENCE: Limit = Limit {
    name: "deprecation.evidence",
    unit: Unit::Items,
    max: 200,
    bounds: "pieces of evidence one deprecation keeps",
};
pub const DEPRECATION_EXCEPTIONS: Limit = Limit {
    name: "deprecation.exceptions",
    unit: Unit::Items,
    max: 100,
    bounds: "exceptions one deprecation keeps",
};
pub const DEPRECATION_CHANGES: Limit = Limit {
    name: "deprecation.changes",
    unit: Unit::Items,
    max: 1_000,
    bounds: "stage changes plus content updates one deprecation keeps",
};
pub const EVIDENCE_BYTES: Limit = Limit {
    name: "evidence.bytes",
    unit: Unit::Bytes,
    max: 64 * KIB,
    bounds: "one piece of evidence's JSON (a usage query with its stored result included)",
};
pub const EVIDENCE_USAGE_ROWS: Limit = Limit {
    name: "evidence.usage_rows",
    unit: Unit::Items,
    max: 200,
    bounds: "rows a usage query kept as evidence may return; narrow the query beyond it",
};
pub const EXCEPTION_BYTES: Limit = Limit {
    name: "exception.bytes",
    unit: Unit::Bytes,
    max: 16 * KIB,
    bounds: "one exception's JSON",
};
pub const IDENTIFIER: Limit = Limit {
    name: "identifier.length",
    unit: Unit::Length,
    max: 256,
    bounds: "a consumer name, client id, owner, contact, actor, approver, party, canary path or environment",
};
pub const SUBJECT: Limit = Limit {
    name: "subject.length",
    unit: Unit::Length,
    max: 1024,
    bounds: "a subject name (as the registry's own subject limit)",
};
pub const FIELD_PATH: Limit = Limit {
    name: "field_path.length",
    unit: Unit::Length,
    max: 1024,
    bounds: "a field path or an enum symbol",
};
pub const TEXT: Limit = Limit {
    name: "text.length",
    unit: Unit::Length,
    max: 8 * KIB,
    bounds: "a free text (purpose, promise, contract, note, reason, claim, statement, detail, link)",
};

/// Every limit, in the order the documentation lists them.
pub const LIMITS: [Limit; 24] = [
    USAGE_REPORT_BYTES,
    USAGE_FIELDS_READ,
    USAGE_WRITER_IDS,
    USAGE_VERSIONS,
    USAGE_ENUM_FIELDS,
    USAGE_ENUM_VALUES,
    CONSUMER_BYTES,
    CONSUMER_CLIENTS,
    CONSUMER_READS,
    CONSUMER_FIELDS,
    DEPRECATION_BYTES,
    DEPRECATION_OWNERS,
    DEPRECATION_EVIDENCE,
    DEPRECATION_EXCEPTIONS,
    DEPRECATION_CHANGES,
    EVIDENCE_BYTES,
    EVIDENCE_USAGE_ROWS,
    EXCEPTION_BYTES,
    IDENTIFIER,
    SUBJECT,
    FIELD_PATH,
    TEXT,
    crate::metrics::LABEL_SETS,
    crate::metrics::LABEL_VALUE,
];

impl Limit {
    /// Refuses `count` over the limit; `what` says which document and list.
    pub fn check(&self, count: usize, what: &str) -> GovernanceResult<()> {
        if count <= self.max {
            return Ok(());
        }
        let message = match self.unit {
            Unit::Bytes => format!(
                "{what} is {count} bytes, over the limit {} of {} bytes",
                self.name, self.max
            ),
            Unit::Items => format!(
                "{what} has {count} items, over the limit {} of {}",
                self.name, self.max
            ),
            Unit::Length => format!(
                "{what} is {count} bytes long, over the limit {} of {} bytes",
                self.name, self.max
            ),
        };
        Err(match self.unit {
            Unit::Bytes => GovernanceError::TooLarge(message),
            Unit::Items | Unit::Length => GovernanceError::OverLimit(message),
        })
    }

    /// [`Limit::check`] on the length of `text`.
    pub fn check_text(&self, text: &str, what: &str) -> GovernanceResult<()> {
        self.check(text.len(), what)
    }

    /// [`Limit::check`] on the size of `value`'s JSON form.
    pub fn check_json<T: Serialize>(&self, value: &T, what: &str) -> GovernanceResult<()> {
        self.check(json_len(value), what)
    }
}

/// The length of `value`'s JSON, counted without building the text.
fn json_len<T: Serialize>(value: &T) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => usize::MAX,
    }
}

/// Checks a usage report before any work is done for it: its lists first (cheap), then its
/// identifiers, then its size.
pub fn check_usage_report(r: &UsageReport) -> GovernanceResult<()> {
    USAGE_FIELDS_READ.check(r.fields_read.len(), "the usage report's 'fields_read'")?;
    USAGE_WRITER_IDS.check(
        r.writer_schema_ids.len(),
        "the usage report's 'writer_schema_ids'",
    )?;
    USAGE_VERSIONS.check(
        r.records_by_version.len(),
        "the usage report's 'records_by_version'",
    )?;
    USAGE_ENUM_FIELDS.check(
        r.unknown_enum_values.len(),
        "the usage report's 'unknown_enum_values'",
    )?;
    let symbols = r.unknown_enum_values.values().map(|v| v.len()).sum();
    USAGE_ENUM_VALUES.check(symbols, "the usage report's unknown enum symbols")?;
    SUBJECT.check_text(&r.subject, "the usage report's 'subject'")?;
    IDENTIFIER.check_text(&r.client_id, "the usage report's 'client_id'")?;
    if let Some(c) = &r.consumer {
        IDENTIFIER.check_text(c, "the usage report's 'consumer'")?;
    }
    for f in &r.fields_read {
        FIELD_PATH.check_text(f, "a field path in 'fields_read'")?;
    }
    for (field, symbols) in &r.unknown_enum_values {
        FIELD_PATH.check_text(field, "a field path in 'unknown_enum_values'")?;
        for symbol in symbols.keys() {
            FIELD_PATH.check_text(symbol, "an enum symbol in 'unknown_enum_values'")?;
        }
    }
    USAGE_REPORT_BYTES.check_json(r, "the usage report")
}

/// Checks a consumer declaration.
pub fn check_consumer(c: &NewConsumer) -> GovernanceResult<()> {
    CONSUMER_CLIENTS.check(c.clients.len(), "the consumer's 'clients'")?;
    CONSUMER_READS.check(c.reads.len(), "the consumer's 'reads'")?;
    let fields = c.reads.iter().map(|r| r.fields.len()).sum();
    CONSUMER_FIELDS.check(fields, "the consumer's declared fields")?;
    IDENTIFIER.check_text(&c.name, "the consumer's 'name'")?;
    IDENTIFIER.check_text(&c.owner, "the consumer's 'owner'")?;
    IDENTIFIER.check_text(&c.contact, "the consumer's 'contact'")?;
    TEXT.check_text(&c.purpose, "the consumer's 'purpose'")?;
    for client in &c.clients {
        IDENTIFIER.check_text(client, "a client id in 'clients'")?;
    }
    for read in &c.reads {
        SUBJECT.check_text(&read.subject, "a subject in 'reads'")?;
        for f in &read.fields {
            FIELD_PATH.check_text(f, "a field path in 'reads'")?;
        }
    }
    CONSUMER_BYTES.check_json(c, "the consumer declaration")
}

fn check_target(target: &DeprecationTarget) -> GovernanceResult<()> {
    SUBJECT.check_text(target.subject(), "the deprecation's subject")?;
    if let DeprecationTarget::EnumValue { path, symbol, .. } = target {
        FIELD_PATH.check_text(symbol, "the deprecated enum symbol")?;
        FIELD_PATH.check_text(path, "the deprecated field path")?;
    } else if let Some(path) = target.field() {
        FIELD_PATH.check_text(path, "the deprecated field path")?;
    }
    Ok(())
}

/// Checks a new deprecation record.
pub fn check_new_deprecation(d: &NewDeprecation) -> GovernanceResult<()> {
    DEPRECATION_OWNERS.check(d.owners.len(), "the deprecation's 'owners'")?;
    check_target(&d.target)?;
    IDENTIFIER.check_text(&d.announced_by, "the deprecation's 'announced_by'")?;
    for o in &d.owners {
        IDENTIFIER.check_text(&o.role, "an owner's 'role'")?;
        IDENTIFIER.check_text(&o.name, "an owner's 'name'")?;
    }
    for (label, text) in [
        ("contract", d.contract.as_str()),
        ("old_promise", &d.old_promise),
        ("new_promise", &d.new_promise),
        ("replacement", d.replacement.as_deref().unwrap_or_default()),
    ] {
        TEXT.check_text(text, &format!("the deprecation's '{label}'"))?;
    }
    let n = &d.notes;
    for text in [
        &n.mixed_versions,
        &n.discovery,
        &n.migration_evidence,
        &n.freeze,
        &n.enforcement,
        &n.fallback,
        &n.removal,
    ] {
        TEXT.check_text(text, "a note of the deprecation")?;
    }
    DEPRECATION_BYTES.check_json(d, "the deprecation")
}

/// Checks an update of a deprecation's content.
pub fn check_update(u: &crate::DeprecationUpdate) -> GovernanceResult<()> {
    IDENTIFIER.check_text(&u.by, "the update's 'by'")?;
    TEXT.check_text(&u.note, "the update's 'note'")?;
    for text in [&u.contract, &u.replacement].into_iter().flatten() {
        TEXT.check_text(text, "a text of the update")?;
    }
    if let Some(owners) = &u.owners {
        DEPRECATION_OWNERS.check(owners.len(), "the update's 'owners'")?;
        for o in owners {
            IDENTIFIER.check_text(&o.role, "an owner's 'role'")?;
            IDENTIFIER.check_text(&o.name, "an owner's 'name'")?;
        }
    }
    if let Some(n) = &u.notes {
        for text in [
            &n.mixed_versions,
            &n.discovery,
            &n.migration_evidence,
            &n.freeze,
            &n.enforcement,
            &n.fallback,
            &n.removal,
        ]
        .into_iter()
        .flatten()
        {
            TEXT.check_text(text, "a note of the update")?;
        }
    }
    Ok(())
}

/// Checks a piece of evidence as sent (before a usage query is run).
pub fn check_evidence(claim: &str, by: &str, body: &EvidenceBody) -> GovernanceResult<()> {
    TEXT.check_text(claim, "the evidence's 'claim'")?;
    IDENTIFIER.check_text(by, "the evidence's 'recorded_by'")?;
    match body {
        EvidenceBody::UsageQuery { query, .. } => {
            if let Some(s) = &query.subject {
                SUBJECT.check_text(s, "the usage query's 'subject'")?;
            }
            if let Some(f) = &query.field {
                FIELD_PATH.check_text(f, "the usage query's 'field'")?;
            }
        }
        EvidenceBody::SignOff {
            consumer,
            who,
            statement,
            ..
        } => {
            IDENTIFIER.check_text(consumer, "the sign-off's 'consumer'")?;
            IDENTIFIER.check_text(who, "the sign-off's 'who'")?;
            TEXT.check_text(statement, "the sign-off's 'statement'")?;
        }
        EvidenceBody::ReplayResult { sample, detail, .. } => {
            IDENTIFIER.check_text(sample, "the replay's 'sample'")?;
            TEXT.check_text(detail, "the replay's 'detail'")?;
        }
        EvidenceBody::Canary {
            path, detail, link, ..
        } => {
            IDENTIFIER.check_text(path, "the canary's 'path'")?;
            TEXT.check_text(detail, "the canary's 'detail'")?;
            TEXT.check_text(link.as_deref().unwrap_or_default(), "the canary's 'link'")?;
        }
        EvidenceBody::DataProfile { path, source, .. } => {
            FIELD_PATH.check_text(path, "the data profile's 'path'")?;
            TEXT.check_text(source, "the data profile's 'source'")?;
        }
        EvidenceBody::NonProductionOmission {
            environment,
            detail,
            link,
            ..
        } => {
            IDENTIFIER.check_text(environment, "the omission's 'environment'")?;
            TEXT.check_text(detail, "the omission's 'detail'")?;
            TEXT.check_text(link.as_deref().unwrap_or_default(), "the omission's 'link'")?;
        }
    }
    if let EvidenceBody::UsageQuery { result, .. } = body {
        EVIDENCE_USAGE_ROWS.check(result.len(), "the usage query's result")?;
    }
    EVIDENCE_BYTES.check_json(body, "the evidence")
}

/// Checks an exception request.
pub fn check_exception(e: &crate::ExceptionRequest) -> GovernanceResult<()> {
    IDENTIFIER.check_text(&e.approver, "the exception's 'approver'")?;
    TEXT.check_text(&e.reason, "the exception's 'reason'")?;
    if let Some(p) = &e.party {
        IDENTIFIER.check_text(p, "the exception's 'party'")?;
    }
    EXCEPTION_BYTES.check_json(e, "the exception")
}

/// Checks a stage change request.
pub fn check_stage_request(r: &crate::StageRequest) -> GovernanceResult<()> {
    IDENTIFIER.check_text(&r.by, "the stage change's 'by'")?;
    TEXT.check_text(&r.note, "the stage change's 'note'")
}

/// Checks a record about to be written: its lists and its whole size.
pub fn check_record(d: &covenant_store::governance::Deprecation) -> GovernanceResult<()> {
    DEPRECATION_EVIDENCE.check(d.evidence.len(), "the deprecation's evidence")?;
    DEPRECATION_EXCEPTIONS.check(d.exceptions.len(), "the deprecation's exceptions")?;
    DEPRECATION_CHANGES.check(
        d.history.len() + d.updates.len(),
        "the deprecation's stage changes and updates",
    )?;
    DEPRECATION_BYTES.check_json(d, "the deprecation record")
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_store::governance::{Cadence, Criticality, SubjectRead};
    use std::collections::BTreeMap;

    fn consumer() -> NewConsumer {
        NewConsumer {
            name: "billing".into(),
            owner: "team".into(),
            purpose: "invoices".into(),
            cadence: Cadence::Daily,
            criticality: Criticality::High,
            contact: "#billing".into(),
            clients: vec!["billing-prod".into()],
            reads: vec![SubjectRead {
                subject: "orders-value".into(),
                reader_version: None,
                fields: vec!["id".into()],
            }],
            environment: Default::default(),
        }
    }

    fn code(e: GovernanceError) -> (&'static str, String) {
        match e {
            GovernanceError::TooLarge(m) => ("413", m),
            GovernanceError::OverLimit(m) => ("422", m),
            other => ("other", other.to_string()),
        }
    }

    #[test]
    fn every_limit_is_named_once() {
        let mut names: Vec<&str> = LIMITS.iter().map(|l| l.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), LIMITS.len());
    }

    #[test]
    fn a_report_with_too_many_fields_names_the_limit() {
        let report = UsageReport {
            subject: "s".into(),
            client_id: "c".into(),
            fields_read: (0..=USAGE_FIELDS_READ.max)
                .map(|i| format!("f{i}"))
                .collect(),
            ..UsageReport::default()
        };
        let (status, message) = code(check_usage_report(&report).unwrap_err());
        assert_eq!(status, "422");
        assert!(message.contains("usage_report.fields_read"), "{message}");
        let ok = UsageReport {
            fields_read: vec!["f".into(); 10],
            ..report
        };
        check_usage_report(&ok).expect("within limits");
    }

    #[test]
    fn enum_symbols_count_over_all_fields() {
        let mut values = BTreeMap::new();
        for f in 0..4 {
            let symbols = (0..100).map(|i| (format!("S{i}"), 1)).collect();
            values.insert(format!("f{f}"), symbols);
        }
        let report = UsageReport {
            subject: "s".into(),
            client_id: "c".into(),
            unknown_enum_values: values,
            ..UsageReport::default()
        };
        let (status, message) = code(check_usage_report(&report).unwrap_err());
        assert_eq!(status, "422");
        assert!(message.contains("usage_report.unknown_enum_values"));
    }

    #[test]
    fn long_identifiers_and_large_documents_are_refused() {
        let mut c = consumer();
        c.clients = vec!["x".repeat(IDENTIFIER.max + 1)];
        let (status, message) = code(check_consumer(&c).unwrap_err());
        assert_eq!(status, "422");
        assert!(message.contains("identifier.length"));

        let mut c = consumer();
        c.reads = (0..200)
            .map(|i| SubjectRead {
                subject: format!("s{i}"),
                reader_version: None,
                fields: (0..20).map(|f| format!("{}{f}", "p".repeat(200))).collect(),
            })
            .collect();
        let (status, message) = code(check_consumer(&c).unwrap_err());
        assert_eq!(status, "413");
        assert!(message.contains("consumer.bytes"), "{message}");

        let mut c = consumer();
        c.reads[0].fields = (0..=CONSUMER_FIELDS.max).map(|i| format!("f{i}")).collect();
        let (_, message) = code(check_consumer(&c).unwrap_err());
        assert!(message.contains("consumer.fields"));
        check_consumer(&consumer()).expect("a small consumer");
    }

    #[test]
    fn the_documented_table_is_this_table() {
        let doc = include_str!("../../../docs/governance.md");
        for l in LIMITS {
            let unit = match l.unit {
                Unit::Bytes => "bytes",
                Unit::Items => "items",
                Unit::Length => "length",
            };
            let row = format!("| `{}` | {unit} | {} | {} |", l.name, l.max, l.bounds);
            assert!(doc.contains(&row), "docs/governance.md lacks the row {row}");
        }
    }

    #[test]
    fn json_length_is_the_serialized_length() {
        let c = consumer();
        assert_eq!(json_len(&c), serde_json::to_vec(&c).unwrap().len());
    }
}
