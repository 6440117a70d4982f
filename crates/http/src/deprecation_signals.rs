//! Deprecation signalled on every read: a schema version covered by a live deprecation record
//! is answered with `Deprecation` (RFC 9745, `@<unix seconds>`), `Sunset` (RFC 8594, an
//! HTTP-date) when the record sets one, and `Link`s to the record (`rel="deprecation"`) and to
//! the version that replaces it (`rel="successor-version"`, RFC 5829).
//!
//! A version is covered by a record whose target is the version itself, its whole subject, or
//! a field the version's schema carries. A record at `removed` still covers the versions
//! written before the removal until its sunset has passed. Reads by id are the producers' hot path, so the live
//! records are held as a snapshot (reloaded after [`SNAPSHOT_TTL`] or when this server writes
//! a deprecation or a version) and each answered target's headers are kept until the next
//! reload; with no live record a read costs one lock and a clock read.

use crate::auth::{Access, Operation};
use crate::reads::ReadTarget;
use axum::http::{HeaderMap, HeaderValue, header};
use covenant_governance::{Deprecation, DeprecationTarget, Governance, Stage};
use covenant_registry::{Registry, VersionSpec};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// How long a snapshot of the records serves reads; bounds how stale headers can be after a
/// change this server did not make itself (another replica, the store edited directly).
pub const SNAPSHOT_TTL: Duration = Duration::from_secs(5);

/// Answered targets kept per snapshot; past it headers are computed on each read instead of
/// growing memory with every id a client asks for.
const MAX_CACHED: usize = 50_000;

/// The headers one read carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    pub deprecation: HeaderValue,
    pub sunset: Option<HeaderValue>,
    pub links: HeaderValue,
}

impl Signal {
    /// Adds the headers to a response's.
    pub fn apply(&self, headers: &mut HeaderMap) {
        headers.insert("deprecation", self.deprecation.clone());
        if let Some(sunset) = &self.sunset {
            headers.insert("sunset", sunset.clone());
        }
        headers.append(header::LINK, self.links.clone());
    }
}

#[derive(Default)]
struct Snapshot {
    loaded: Option<Instant>,
    /// Live (not removed) records by subject.
    by_subject: Arc<HashMap<String, Vec<Deprecation>>>,
    answered: HashMap<ReadTarget, Option<Arc<Signal>>>,
}

/// The cached view of live deprecation records that read handlers consult.
#[derive(Default)]
pub struct DeprecationSignals {
    snapshot: Mutex<Snapshot>,
    /// Bumped by every invalidation, so a reload that read the store before a write does not
    /// install what it read after the write invalidated it.
    generation: AtomicU64,
}

impl DeprecationSignals {
    /// Drops the snapshot, so the next read sees a change this server just made.
    pub fn invalidate(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut s) = self.snapshot.lock() {
            *s = Snapshot::default();
        }
    }

    /// The headers a read of `target` carries, if any record covers it, speaking only of
    /// subjects `access` may read (a schema id shared with another team's subject carries
    /// none of that team's records, and no link names a subject the caller cannot read). A
    /// store failure is logged and answered without headers: signalling never fails a read.
    pub async fn signal(
        &self,
        registry: &Registry,
        gov: &Governance,
        target: &ReadTarget,
        access: &Access,
    ) -> Option<Arc<Signal>> {
        // Answers are cached for callers who read everything; others' are computed each time.
        let shared = access.allows_everywhere(Operation::Read);
        let records = match self.cached(target) {
            Cached::Answer(answer) if shared => return answer,
            Cached::Answer(_) => self.records()?,
            Cached::Records(records) => records,
            Cached::Stale => self.reload(gov).await?,
        };
        if records.is_empty() {
            return None;
        }
        let answer = compute(registry, &records, target, access)
            .await
            .map(Arc::new);
        if !shared {
            return answer;
        }
        if let Ok(mut s) = self.snapshot.lock()
            && Arc::ptr_eq(&s.by_subject, &records)
            && s.answered.len() < MAX_CACHED
        {
            s.answered.insert(target.clone(), answer.clone());
        }
        answer
    }

    fn records(&self) -> Option<Arc<HashMap<String, Vec<Deprecation>>>> {
        self.snapshot.lock().ok().map(|s| s.by_subject.clone())
    }

    fn cached(&self, target: &ReadTarget) -> Cached {
        let Ok(s) = self.snapshot.lock() else {
            return Cached::Stale;
        };
        match s.loaded {
            Some(at) if at.elapsed() < SNAPSHOT_TTL => match s.answered.get(target) {
                Some(answer) => Cached::Answer(answer.clone()),
                None => Cached::Records(s.by_subject.clone()),
            },
            _ => Cached::Stale,
        }
    }

    async fn reload(&self, gov: &Governance) -> Option<Arc<HashMap<String, Vec<Deprecation>>>> {
        let generation = self.generation.load(Ordering::SeqCst);
        let all = match gov.deprecations(None).await {
            Ok(all) => all,
            Err(e) => {
                tracing::warn!(error = %e, "could not read deprecations for response headers");
                return None;
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let mut by_subject: HashMap<String, Vec<Deprecation>> = HashMap::new();
        for d in all.into_iter().filter(|d| signalled(d, now)) {
            by_subject
                .entry(d.target.subject().to_string())
                .or_default()
                .push(d);
        }
        let by_subject = Arc::new(by_subject);
        if let Ok(mut s) = self.snapshot.lock()
            && self.generation.load(Ordering::SeqCst) == generation
        {
            *s = Snapshot {
                loaded: Some(Instant::now()),
                by_subject: by_subject.clone(),
                answered: HashMap::new(),
            };
        }
        Some(by_subject)
    }
}

/// Whether reads still signal `record` at `now` (ms). A record signals until its stage is
/// `removed`, and after that while its sunset is ahead (or it never set one): the versions
/// before the removal still carry the field, and their readers are still owed the
/// deprecation and the sunset it announced.
fn signalled(record: &Deprecation, now: i64) -> bool {
    record.stage != Stage::Removed || record.sunset.is_none_or(|sunset| sunset > now)
}

enum Cached {
    Answer(Option<Arc<Signal>>),
    Records(Arc<HashMap<String, Vec<Deprecation>>>),
    Stale,
}

/// The subject versions a read names, each with its schema id.
async fn versions_read(registry: &Registry, target: &ReadTarget) -> Vec<(String, i64, i64)> {
    match target {
        ReadTarget::Id(id) => registry
            .versions_with_id(*id, false)
            .await
            .unwrap_or_default()
            .into_iter()
            .map(|(s, v)| (s, v, *id))
            .collect(),
        ReadTarget::Version {
            subject,
            version,
            schema_id,
        } => vec![(subject.clone(), *version, *schema_id)],
    }
}

/// Whether `record` covers version `version` (schema `schema_id`) of its subject.
async fn covers(registry: &Registry, record: &Deprecation, version: i64, schema_id: i64) -> bool {
    match &record.target {
        DeprecationTarget::Version { version: v, .. } => *v == version,
        DeprecationTarget::Subject { .. } => true,
        DeprecationTarget::Field { path, .. } => registry
            .schema_field_paths(schema_id)
            .await
            .is_ok_and(|fields| fields.iter().any(|f| f == path)),
        // A retired enum symbol is a value, not a shape the version's reader must drop.
        DeprecationTarget::EnumValue { .. } => false,
    }
}

/// RFC 3986 unreserved characters stay as they are in a path segment; all else is escaped.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

fn encode(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

/// Where readers of a covered version go next: for a subject target, the latest version of
/// the subject its replacement names; otherwise the subject's latest version when the record
/// does not cover it too.
async fn successor(
    registry: &Registry,
    record: &Deprecation,
    version: i64,
    access: &Access,
) -> Option<String> {
    let (subject, version) = match &record.target {
        DeprecationTarget::Subject { .. } => {
            let next = record.replacement.as_deref()?;
            if !access.can_read(next) {
                return None;
            }
            registry
                .version(next, VersionSpec::Latest, false)
                .await
                .ok()?;
            return Some(format!("/subjects/{}/versions/latest", encode(next)));
        }
        target => (target.subject(), version),
    };
    let latest = registry
        .version(subject, VersionSpec::Latest, false)
        .await
        .ok()?;
    let newer = latest.version > version;
    (newer && !covers(registry, record, latest.version, latest.schema.id).await)
        .then(|| format!("/subjects/{}/versions/{}", encode(subject), latest.version))
}

/// The headers for the records covering what `target` reads: the earliest deprecation and
/// sunset among them, and every record's links.
async fn compute(
    registry: &Registry,
    by_subject: &HashMap<String, Vec<Deprecation>>,
    target: &ReadTarget,
    access: &Access,
) -> Option<Signal> {
    let mut since: Option<i64> = None;
    let mut sunset: Option<i64> = None;
    let mut links: Vec<String> = Vec::new();
    for (subject, version, schema_id) in versions_read(registry, target).await {
        if !access.can_read(&subject) {
            continue;
        }
        for record in by_subject.get(&subject).into_iter().flatten() {
            if !covers(registry, record, version, schema_id).await {
                continue;
            }
            since = Some(since.map_or(record.window_start, |s| s.min(record.window_start)));
            sunset = match (sunset, record.sunset) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let record_link = format!(
                "</covenant/v1/deprecations/{}/record>; rel=\"deprecation\"; type=\"text/plain\"",
                record.id
            );
            if !links.contains(&record_link) {
                links.push(record_link);
            }
            if let Some(next) = successor(registry, record, version, access).await {
                let link = format!("<{next}>; rel=\"successor-version\"");
                if !links.contains(&link) {
                    links.push(link);
                }
            }
        }
    }
    Some(Signal {
        deprecation: HeaderValue::from_str(&format!("@{}", since?.div_euclid(1000))).ok()?,
        sunset: sunset.and_then(http_date),
        links: HeaderValue::from_str(&links.join(", ")).ok()?,
    })
}

/// The first instant (ms) an HTTP-date's four-digit year cannot say: 10000-01-01.
const HTTP_DATE_END_MS: i64 = 253_402_300_800_000;

/// An instant in ms as an IMF-fixdate; `None` outside the years 1970 to 9999 that an
/// HTTP-date can say (`httpdate` panics past them, so they are refused here).
fn http_date(ms: i64) -> Option<HeaderValue> {
    if ms >= HTTP_DATE_END_MS {
        return None;
    }
    let at = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).ok()?);
    HeaderValue::from_str(&httpdate::fmt_http_date(at)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sunsets_are_imf_fixdates() {
        let value = http_date(1_798_761_600_000).expect("a date");
        assert_eq!(value, "Fri, 01 Jan 2027 00:00:00 GMT");
        assert_eq!(http_date(-1), None);
        assert_eq!(http_date(HTTP_DATE_END_MS), None);
        assert_eq!(http_date(i64::MAX), None);
        assert!(http_date(HTTP_DATE_END_MS - 1).is_some());
    }

    #[test]
    fn subject_names_are_escaped_in_links() {
        assert_eq!(encode("a-b c/d"), "a-b%20c%2Fd");
    }
}
