//! Reads: schemas by id and guid, subjects, versions, referrers and listings.

use crate::contexts::prefix_matches;
use crate::{Registry, RegistryError, RegistryResult, TextFormat, VersionSpec};
use covenant_schema::ParsedSchema;
use covenant_store::{SchemaRecord, StoredVersion};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The last version of each subject in a listing ordered by subject, then version.
pub(crate) fn latest_per_subject(all: Vec<StoredVersion>) -> Vec<StoredVersion> {
    let mut latest: Vec<StoredVersion> = Vec::new();
    for v in all {
        match latest.last_mut() {
            Some(last) if last.subject == v.subject => *last = v,
            _ => latest.push(v),
        }
    }
    latest
}

impl Registry {
    /// Waits until every write committed so far is durable (see [`Store::settled`]).
    pub async fn settled(&self) -> RegistryResult<()> {
        Ok(self.store.settled().await?)
    }

    /// Whether the store answers, for readiness probes.
    pub async fn ready(&self) -> RegistryResult<()> {
        Ok(self.store.ping().await?)
    }

    /// The schema registered under `id`, even if every version carrying it is soft-deleted.
    pub async fn schema_by_id(&self, id: i64) -> RegistryResult<Arc<SchemaRecord>> {
        if let Some(r) = self.cached(id) {
            return Ok(r);
        }
        match self.store.schema_by_id(id).await? {
            Some(r) => {
                let r = Arc::new(r);
                self.remember(r.clone());
                Ok(r)
            }
            None => Err(RegistryError::SchemaIdNotFound(id)),
        }
    }

    /// The ids whose record has this guid (UUID form or 32 hex digits), lowest first; none
    /// for a text that is not a guid.
    pub async fn ids_by_guid(&self, guid: &str) -> RegistryResult<Vec<i64>> {
        match covenant_store::guid::parse_guid(guid) {
            Some(guid) => Ok(self.store.schema_ids_by_guid(&guid).await?),
            None => Ok(Vec::new()),
        }
    }

    /// The highest id allocated so far.
    pub async fn max_id(&self) -> RegistryResult<i64> {
        Ok(self.store.max_schema_id().await?)
    }

    /// The schema's text in the requested format.
    pub async fn schema_text(
        &self,
        record: &SchemaRecord,
        format: TextFormat,
    ) -> RegistryResult<String> {
        match (format, record.schema_type.as_str()) {
            (TextFormat::Serialized, "PROTOBUF") => match &*self.parse_record(record).await? {
                ParsedSchema::Protobuf(p) => Ok(p.to_descriptor_base64()),
                _ => Ok(record.schema.clone()),
            },
            (TextFormat::Resolved, "AVRO") if !record.references.is_empty() => {
                match &*self.parse_record(record).await? {
                    ParsedSchema::Avro(a) => Ok(a.resolved_form()),
                    _ => Ok(record.schema.clone()),
                }
            }
            _ => Ok(record.schema.clone()),
        }
    }

    /// Subjects (and their versions) carrying schema `id`.
    pub async fn versions_with_id(
        &self,
        id: i64,
        include_deleted: bool,
    ) -> RegistryResult<Vec<(String, i64)>> {
        let rows = self.store.versions_with_id(id).await?;
        if rows.is_empty() {
            return Err(RegistryError::SchemaNotFound);
        }
        Ok(rows
            .into_iter()
            .filter(|(_, _, deleted)| include_deleted || !deleted)
            .map(|(s, v, _)| (s, v))
            .collect())
    }

    /// Subject names, sorted, selected by `prefix` as [`prefix_matches`] reads it.
    /// `deleted_only` wins over `deleted`.
    pub async fn subjects(
        &self,
        prefix: Option<&str>,
        deleted: bool,
        deleted_only: bool,
    ) -> RegistryResult<Vec<String>> {
        Ok(self
            .store
            .subjects()
            .await?
            .into_iter()
            .filter(|(name, live)| {
                prefix_matches(prefix, name)
                    && if deleted_only {
                        !live
                    } else {
                        deleted || *live
                    }
            })
            .map(|(name, _)| name)
            .collect())
    }

    /// One page of [`Registry::subjects`]: the names `keep` keeps, `offset` of them skipped
    /// and at most `limit` answered, read from the store a chunk at a time from where the
    /// prefix starts (see [`Registry::list_schemas_page`]).
    pub async fn subjects_page(
        &self,
        prefix: Option<&str>,
        (deleted, deleted_only): (bool, bool),
        keep: &(dyn Fn(&str) -> bool + Sync),
        offset: usize,
        limit: usize,
    ) -> RegistryResult<Vec<String>> {
        let keep = |s: &(String, bool)| keep(&s.0);
        let wanted = Page {
            prefix,
            deleted,
            keep: &keep,
            offset,
            limit,
        };
        let page = page_of_subjects(self.store.as_ref(), &wanted, deleted_only, LISTING_CHUNK);
        Ok(page.await?.into_iter().map(|(name, _)| name).collect())
    }

    /// Version numbers of a subject, ascending.
    pub async fn versions(
        &self,
        subject: &str,
        deleted: bool,
        deleted_only: bool,
    ) -> RegistryResult<Vec<i64>> {
        let all = self.store.subject_versions(subject).await?;
        if all.is_empty() || (!deleted && !deleted_only && all.iter().all(|v| v.deleted)) {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        Ok(all
            .iter()
            .filter(|v| {
                if deleted_only {
                    v.deleted
                } else {
                    deleted || !v.deleted
                }
            })
            .map(|v| v.version)
            .collect())
    }

    /// One version of a subject.
    pub async fn version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<StoredVersion> {
        let all = self.store.subject_versions(subject).await?;
        let visible: Vec<StoredVersion> =
            all.into_iter().filter(|v| deleted || !v.deleted).collect();
        if visible.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let found = match spec {
            VersionSpec::Latest => visible.iter().rev().find(|v| !v.deleted).or(visible.last()),
            VersionSpec::Number(n) => visible.iter().find(|v| v.version == n),
        };
        match found {
            Some(v) => {
                self.remember(Arc::new(v.schema.clone()));
                Ok(v.clone())
            }
            None => Err(RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "-1".into(),
                VersionSpec::Number(n) => n.to_string(),
            })),
        }
    }

    /// Ids of the schemas that reference a subject version, ascending.
    pub async fn referenced_by(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<Vec<i64>> {
        let v = self.version(subject, spec, deleted).await?;
        let mut ids: Vec<i64> = self
            .store
            .referencing_versions(subject, v.version)
            .await?
            .into_iter()
            .filter(|r| deleted || !r.deleted)
            .map(|r| r.schema.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// Every subject version (for `GET /schemas`).
    pub async fn list_schemas(
        &self,
        subject_prefix: Option<&str>,
        deleted: bool,
        latest_only: bool,
    ) -> RegistryResult<Vec<StoredVersion>> {
        let all: Vec<StoredVersion> = self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|v| prefix_matches(subject_prefix, &v.subject) && (deleted || !v.deleted))
            .collect();
        Ok(if latest_only {
            latest_per_subject(all)
        } else {
            all
        })
    }

    /// One page of [`Registry::list_schemas`] (without `latestOnly`): the versions under
    /// `subject_prefix` that `keep` keeps, `offset` of them skipped and at most `limit`
    /// answered. The store is read a chunk at a time from where the prefix starts, and the
    /// read stops at the page's end or where the prefix's subjects end, so that a page of a
    /// large registry does not hold all of it in memory.
    pub async fn list_schemas_page(
        &self,
        subject_prefix: Option<&str>,
        deleted: bool,
        keep: &(dyn Fn(&StoredVersion) -> bool + Sync),
        offset: usize,
        limit: usize,
    ) -> RegistryResult<Vec<StoredVersion>> {
        let wanted = Page {
            prefix: subject_prefix,
            deleted,
            keep,
            offset,
            limit,
        };
        page_of_versions(self.store.as_ref(), &wanted, LISTING_CHUNK).await
    }

    /// `GET /schemas?aliases=true`: [`Registry::list_schemas`] plus the versions of subjects
    /// that a subject under the prefix is an alias of, each version with the subjects aliasing
    /// its own (as Confluent's `ExtendedSchema` carries them).
    pub async fn list_schemas_with_aliases(
        &self,
        subject_prefix: Option<&str>,
        deleted: bool,
        latest_only: bool,
    ) -> RegistryResult<Vec<(StoredVersion, Vec<String>)>> {
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (scope, config) in self.store.all_configs().await? {
            let Some(subject) = scope.filter(|s| prefix_matches(subject_prefix, s)) else {
                continue;
            };
            if let Some(alias) = config.extra.get("alias").and_then(Value::as_str)
                && !alias.is_empty()
            {
                let target = covenant_store::context::qualify_with_parent(&subject, alias);
                aliases.entry(target).or_default().push(subject);
            }
        }
        let all: Vec<StoredVersion> = self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|v| {
                (prefix_matches(subject_prefix, &v.subject) || aliases.contains_key(&v.subject))
                    && (deleted || !v.deleted)
            })
            .collect();
        let listed = if latest_only {
            latest_per_subject(all)
        } else {
            all
        };
        Ok(listed
            .into_iter()
            .map(|v| {
                let names = aliases.get(&v.subject).cloned().unwrap_or_default();
                (v, names)
            })
            .collect())
    }

    /// Count of distinct schemas by type, for metrics.
    pub async fn schema_counts(&self) -> RegistryResult<Vec<(String, u64)>> {
        Ok(self.store.schema_type_counts().await?)
    }
}

/// Versions read from the store at a time by [`Registry::list_schemas_page`].
const LISTING_CHUNK: i64 = 1000;

/// What a page of a listing holds ([`page_of_versions`], [`page_of_subjects`]).
pub(crate) struct Page<'a, T> {
    pub(crate) prefix: Option<&'a str>,
    pub(crate) deleted: bool,
    pub(crate) keep: &'a (dyn Fn(&T) -> bool + Sync),
    pub(crate) offset: usize,
    pub(crate) limit: usize,
}

/// Where the subjects `prefix` selects start in the store's order, and whether they all
/// share it (so the read may stop where they end): a context's or the default context's
/// prefix names the start of the subjects it selects; `:*:` (a name in any context) and no
/// prefix select subjects all through the order.
fn prefix_range(prefix: Option<&str>) -> (&str, bool) {
    match prefix {
        None => ("", false),
        Some(p) if p.starts_with(":*:") => ("", false),
        Some(p) => (p, !p.is_empty()),
    }
}

/// The page `wanted` describes, reading `chunk` versions of the store at a time.
pub(crate) async fn page_of_versions(
    store: &dyn covenant_store::Store,
    wanted: &Page<'_, StoredVersion>,
    chunk: i64,
) -> RegistryResult<Vec<StoredVersion>> {
    let (from, bounded) = prefix_range(wanted.prefix);
    let start = (from.to_string(), 0);
    let read = |(subject, version): (String, i64)| async move {
        store.versions_after(&subject, version, chunk).await
    };
    let listed = |v: &StoredVersion| wanted.deleted || !v.deleted;
    let pager = Pager {
        start,
        bounded,
        chunk,
        read,
        listed,
    };
    pager.page(wanted).await
}

/// The page `wanted` describes of the subjects (each with whether a version is live; a
/// soft-deleted subject is listed with `deleted`, and only those with `deleted_only`),
/// reading `chunk` subjects of the store at a time.
pub(crate) async fn page_of_subjects(
    store: &dyn covenant_store::Store,
    wanted: &Page<'_, (String, bool)>,
    deleted_only: bool,
    chunk: i64,
) -> RegistryResult<Vec<(String, bool)>> {
    let (from, bounded) = prefix_range(wanted.prefix);
    // Read after `from` less its last character, which sorts before `from` and every name
    // beginning with it (`from` itself may be a subject).
    let start = from.strip_suffix(|_| true).unwrap_or("").to_string();
    let read = |after: String| async move { store.subjects_after(&after, chunk).await };
    let listed = |s: &(String, bool)| {
        if deleted_only {
            !s.1
        } else {
            wanted.deleted || s.1
        }
    };
    let pager = Pager {
        start,
        bounded,
        chunk,
        read,
        listed,
    };
    pager.page(wanted).await
}

/// An item of a listing: its subject's name, and the key the next chunk is read after.
trait Listing {
    type Key;
    fn key(&self) -> Self::Key;
    fn name(&self) -> &str;
}

impl Listing for StoredVersion {
    type Key = (String, i64);
    fn key(&self) -> Self::Key {
        (self.subject.clone(), self.version)
    }
    fn name(&self) -> &str {
        &self.subject
    }
}

/// A subject with whether any version of it is live.
impl Listing for (String, bool) {
    type Key = String;
    fn key(&self) -> Self::Key {
        self.0.clone()
    }
    fn name(&self) -> &str {
        &self.0
    }
}

/// Reads a listing from the store a chunk at a time, in the store's order of names.
struct Pager<K, R, Listed> {
    /// The key the first chunk is read after.
    start: K,
    /// Whether every name the prefix selects starts with it, so the read stops past them.
    bounded: bool,
    chunk: i64,
    read: R,
    listed: Listed,
}

impl<K, R, Listed> Pager<K, R, Listed> {
    /// The items of the page: those under the prefix that are listed and kept, `offset` of
    /// them skipped and at most `limit` answered.
    async fn page<T, Fut>(self, wanted: &Page<'_, T>) -> RegistryResult<Vec<T>>
    where
        T: Listing<Key = K>,
        R: Fn(K) -> Fut,
        Fut: std::future::Future<Output = covenant_store::StoreResult<Vec<T>>>,
        Listed: Fn(&T) -> bool,
    {
        let (from, _) = prefix_range(wanted.prefix);
        let (mut after, mut skipped, mut out) = (self.start, 0, Vec::new());
        while out.len() < wanted.limit {
            let read = (self.read)(after).await?;
            let full = read.len() as i64 == self.chunk;
            let Some(last) = read.last() else { break };
            after = last.key();
            for item in read {
                let name = item.name();
                if self.bounded && name >= from && !name.starts_with(from) {
                    return Ok(out);
                }
                let chosen = prefix_matches(wanted.prefix, name) && (self.listed)(&item);
                if !chosen || !(wanted.keep)(&item) {
                    continue;
                }
                if skipped < wanted.offset {
                    skipped += 1;
                } else if out.len() < wanted.limit {
                    out.push(item);
                }
            }
            if !full {
                break;
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_store::conformance::schema as avro;
    use covenant_store::{Placement, SqliteStore, Store};

    /// Every page read a few versions at a time equals the same page cut from the whole
    /// listing, for prefixes of the default context, of a context, of every context, for
    /// soft-deleted versions and a filter, at every offset and limit.
    #[tokio::test]
    async fn a_page_read_in_chunks_is_the_page_of_the_whole_listing() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(dir.path()).expect("open");
        let allow = |_: &[StoredVersion]| Ok(());
        let subjects = ["a1", "a2", "b1", ":.ctx:a1", ":.ctx:b1", "a10", "c"];
        for (i, subject) in subjects.iter().cycle().take(20).enumerate() {
            let text = format!("s{i}");
            let placed = Placement::default();
            store
                .register(subject, &avro(&text), placed, &allow, None)
                .await
                .expect("register");
        }
        store.soft_delete("a2", &[1]).await.expect("delete");
        store.soft_delete("b1", &[1, 2, 3]).await.expect("delete");
        let all = store.all_versions().await.expect("all");
        let odd = |v: &StoredVersion| v.schema.id % 2 == 1;
        let every = |_: &StoredVersion| true;
        let prefixes = [
            None,
            Some(""),
            Some("a"),
            Some("a1"),
            Some(":.ctx:"),
            Some(":*:a"),
            Some("z"),
        ];
        for prefix in prefixes {
            for deleted in [false, true] {
                for keep in [&odd as &(dyn Fn(&StoredVersion) -> bool + Sync), &every] {
                    let whole: Vec<_> = all
                        .iter()
                        .filter(|v| prefix_matches(prefix, &v.subject) && (deleted || !v.deleted))
                        .filter(|v| keep(v))
                        .map(|v| (v.subject.clone(), v.version))
                        .collect();
                    for offset in 0..whole.len() + 2 {
                        for limit in [1, 2, 3, 7, usize::MAX] {
                            let wanted = Page {
                                prefix,
                                deleted,
                                keep,
                                offset,
                                limit,
                            };
                            let page = page_of_versions(&store, &wanted, 3).await.expect("page");
                            let got: Vec<_> = page
                                .iter()
                                .map(|v| (v.subject.clone(), v.version))
                                .collect();
                            let expected: Vec<_> =
                                whole.iter().skip(offset).take(limit).cloned().collect();
                            assert_eq!(
                                got, expected,
                                "{prefix:?} deleted={deleted} {offset}+{limit}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// The same for subject names: every page read two names at a time equals the page cut
    /// from the whole list, for live, all and only soft-deleted subjects.
    #[tokio::test]
    async fn a_page_of_subjects_read_in_chunks_is_the_page_of_the_whole_list() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(dir.path()).expect("open");
        let allow = |_: &[StoredVersion]| Ok(());
        let subjects = [
            "a1", "a2", "b1", ":.ctx:a1", ":.ctx:b1", "a10", "a", "c", "a0",
        ];
        for (i, subject) in subjects.iter().enumerate() {
            let text = format!("n{i}");
            let placed = Placement::default();
            store
                .register(subject, &avro(&text), placed, &allow, None)
                .await
                .expect("register");
        }
        for gone in ["a2", ":.ctx:b1"] {
            store.soft_delete(gone, &[1]).await.expect("delete");
        }
        let all = store.subjects().await.expect("all");
        let short = |s: &(String, bool)| s.0.len() <= 2;
        let every = |_: &(String, bool)| true;
        let prefixes = [
            None,
            Some(""),
            Some("a"),
            Some("a1"),
            Some(":.ctx:"),
            Some(":*:a"),
        ];
        for prefix in prefixes {
            for (deleted, only) in [(false, false), (true, false), (false, true)] {
                for keep in [&short as &(dyn Fn(&(String, bool)) -> bool + Sync), &every] {
                    let whole: Vec<_> = all
                        .iter()
                        .filter(|(name, live)| {
                            prefix_matches(prefix, name)
                                && if only { !live } else { deleted || *live }
                        })
                        .filter(|s| keep(s))
                        .map(|(name, _)| name.clone())
                        .collect();
                    for offset in 0..whole.len() + 2 {
                        for limit in [1, 2, 3, usize::MAX] {
                            let wanted = Page {
                                prefix,
                                deleted,
                                keep,
                                offset,
                                limit,
                            };
                            let page = page_of_subjects(&store, &wanted, only, 2)
                                .await
                                .expect("page");
                            let got: Vec<_> = page.into_iter().map(|(name, _)| name).collect();
                            let expected: Vec<_> =
                                whole.iter().skip(offset).take(limit).cloned().collect();
                            assert_eq!(
                                got, expected,
                                "{prefix:?} {deleted}/{only} {offset}+{limit}"
                            );
                        }
                    }
                }
            }
        }
    }
}
