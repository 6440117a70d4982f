//! The DEK Registry's key store: key encryption keys (KEKs, references to a key held in a
//! KMS) and the data encryption keys (DEKs) that clients encrypt fields with, each stored
//! encrypted by its KEK. Confluent's clients create and read them through
//! `/dek-registry/v1`; the registry never sees a DEK in the clear unless its KEK is shared.
//!
//! SQL-free like the rest of the interface; [`crate::deks_sqlite`] and
//! [`crate::deks_postgres`] implement it, beside the registry's tables with their own
//! migration ledger (`dek_registry_migrations`). Checks that must see the rows as they are
//! when the write commits (a name already held, a KEK still referenced, a DEK created under a
//! KEK being deleted) run inside the write's transaction and come back as outcomes; the rest
//! of Confluent's rules live in the registry (`covenant_registry::deks`).

use crate::StoreResult;
use crate::audit::AuditLine;
use async_trait::async_trait;
use std::collections::BTreeMap;

/// A key encryption key: a name for a key held in a KMS (`kmsType`, `kmsKeyId`), with the
/// properties a client needs to reach it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kek {
    pub name: String,
    pub kms_type: String,
    pub kms_key_id: String,
    pub kms_props: BTreeMap<String, String>,
    pub doc: Option<String>,
    /// Whether the registry itself may use the KMS key (to make DEKs for clients).
    pub shared: bool,
    /// Milliseconds since the Unix epoch of the last change.
    pub ts: i64,
    pub deleted: bool,
}

/// A data encryption key of one subject under one KEK, in one version and algorithm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dek {
    pub kek_name: String,
    pub subject: String,
    pub version: i64,
    /// `AES128_GCM`, `AES256_GCM` or `AES256_SIV`.
    pub algorithm: String,
    /// The key encrypted by the KEK, base64, as the client sent it.
    pub encrypted_key_material: Option<String>,
    /// The key in the clear, base64: only under a shared KEK.
    pub key_material: Option<String>,
    pub ts: i64,
    pub deleted: bool,
}

/// Which DEKs a delete or undelete addresses: every version of a subject's key in one
/// algorithm, or one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DekScope<'a> {
    pub kek_name: &'a str,
    pub subject: &'a str,
    pub algorithm: &'a str,
    /// `None`: every version.
    pub version: Option<i64>,
}

/// What a KEK or DEK write found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyWrite {
    /// Written, with its audit entry.
    Done,
    /// Nothing to write to: no such key (for soft deletes, no such key that is not deleted).
    Missing,
    /// A permanent delete of a key that is not soft-deleted first.
    NotSoftDeleted,
    /// A KEK that DEKs still refer to (live ones for a soft delete, any for a permanent one).
    Referenced,
    /// An insert of a key that is already held (deleted or not).
    Exists,
    /// A DEK insert under a KEK that is missing or soft-deleted.
    KekMissing,
}

/// Key persistence. Implementations make acknowledged writes durable; a write that takes an
/// [`AuditLine`] appends it to the registry's `audit_log` in the same transaction, and only
/// when it answers [`KeyWrite::Done`].
#[async_trait]
pub trait DekStore: Send + Sync {
    /// The KEK named, deleted or not.
    async fn kek(&self, name: &str) -> StoreResult<Option<Kek>>;

    /// KEK names in order; soft-deleted ones only with `deleted`.
    async fn kek_names(&self, deleted: bool) -> StoreResult<Vec<String>>;

    /// Stores a new KEK; [`KeyWrite::Exists`] if the name is held.
    async fn insert_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;

    /// Replaces the row of the KEK named `kek.name` (deleted or not) with `kek`.
    async fn update_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;

    /// Soft-deletes a live KEK (refused while it has live DEKs), or permanently removes a
    /// soft-deleted one (refused while it has any DEK).
    async fn delete_kek(
        &self,
        name: &str,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite>;

    /// Undeletes a soft-deleted KEK ([`KeyWrite::Missing`] when there is none).
    async fn undelete_kek(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;

    /// One DEK: version `None` is the highest; soft-deleted ones only with `deleted`.
    async fn dek(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        version: Option<i64>,
        deleted: bool,
    ) -> StoreResult<Option<Dek>>;

    /// The subjects with DEKs under a KEK, in order.
    async fn dek_subjects(&self, kek_name: &str, deleted: bool) -> StoreResult<Vec<String>>;

    /// The versions of a subject's DEK in one algorithm, ascending.
    async fn dek_versions(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        deleted: bool,
    ) -> StoreResult<Vec<i64>>;

    /// Stores a new DEK under a live KEK; [`KeyWrite::Exists`] if that version is held,
    /// [`KeyWrite::KekMissing`] if the KEK is missing or soft-deleted when it would commit.
    async fn insert_dek(&self, dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;

    /// Replaces a held DEK's encrypted material and deletion state (Confluent's `rewrap`,
    /// after the KEK's KMS key was rotated); `Missing` when it is not held, `KekMissing`
    /// under a missing or soft-deleted KEK.
    async fn rewrap_dek(&self, dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;

    /// Soft-deletes the live DEKs in `scope`, or permanently removes them once every one is
    /// soft-deleted.
    async fn delete_deks(
        &self,
        scope: DekScope<'_>,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite>;

    /// Undeletes the soft-deleted DEKs in `scope`.
    async fn undelete_deks(
        &self,
        scope: DekScope<'_>,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite>;

    /// Every KEK and DEK, deleted or not, by name (for export).
    async fn all_keys(&self) -> StoreResult<(Vec<Kek>, Vec<Dek>)>;

    /// How many KEKs and DEKs (every version) are held, soft-deleted ones included.
    async fn key_counts(&self) -> StoreResult<(u64, u64)>;

    /// Each KEK with each subject it has DEKs for, by KEK then subject; soft-deleted KEKs and
    /// DEKs only with `deleted`.
    async fn kek_subjects(&self, deleted: bool) -> StoreResult<Vec<(String, String)>>;

    /// Writes keys as they are (times and deletion kept), in one transaction and without
    /// audit entries, for import. A key already held is left as it is: skipped when equal,
    /// listed in the answer when it differs; so a second import of the same dump writes
    /// nothing.
    async fn restore_keys(&self, keks: &[Kek], deks: &[Dek]) -> StoreResult<RestoredKeys>;
}

/// What [`DekStore::restore_keys`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoredKeys {
    pub written: usize,
    /// Keys held with other content, left as they were, named for a message.
    pub conflicts: Vec<String>,
}

pub(crate) fn kek_conflict(k: &Kek) -> String {
    format!("KEK '{}' already exists with other content", k.name)
}

pub(crate) fn dek_conflict(d: &Dek) -> String {
    format!(
        "DEK of subject '{}' under KEK '{}' (version {}, {}) already exists with other content",
        d.subject, d.kek_name, d.version, d.algorithm
    )
}

/// Encodes `kms_props` for a text column.
pub(crate) fn props_text(props: &BTreeMap<String, String>) -> String {
    serde_json::to_string(props).unwrap_or_else(|_| "{}".into())
}

/// Decodes a `kms_props` column; unreadable text (never written by the store) reads as none.
pub(crate) fn props_of(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str(text).unwrap_or_default()
}

/// Behaviour every backend must show; each backend's tests run it on a fresh store.
pub mod suite {
    use super::*;

    fn kek(name: &str) -> Kek {
        Kek {
            name: name.into(),
            kms_type: "local-kms".into(),
            kms_key_id: format!("key-of-{name}"),
            kms_props: BTreeMap::from([("region".to_string(), "eu".to_string())]),
            doc: Some("the doc".into()),
            shared: false,
            ts: 1000,
            deleted: false,
        }
    }

    fn dek(kek: &str, subject: &str, version: i64, algorithm: &str) -> Dek {
        Dek {
            kek_name: kek.into(),
            subject: subject.into(),
            version,
            algorithm: algorithm.into(),
            encrypted_key_material: Some(format!("c2VjcmV0{version}")),
            key_material: None,
            ts: 2000 + version,
            deleted: false,
        }
    }

    fn every(kek: &'static str, subject: &'static str) -> DekScope<'static> {
        DekScope {
            kek_name: kek,
            subject,
            algorithm: "AES256_GCM",
            version: None,
        }
    }

    /// Runs every check; panics with a description on the first failure.
    pub async fn run(store: &dyn DekStore) {
        use KeyWrite::*;
        assert_eq!(store.kek("k1").await.expect("kek"), None);
        assert_eq!(
            store.insert_kek(&kek("k1"), None).await.expect("insert"),
            Done
        );
        assert_eq!(
            store.insert_kek(&kek("k1"), None).await.expect("insert"),
            Exists,
            "a name is held once"
        );
        assert_eq!(
            store.insert_kek(&kek("k0"), None).await.expect("insert"),
            Done
        );
        assert_eq!(
            store.kek("k1").await.expect("kek"),
            Some(kek("k1")),
            "read back as written, properties and doc included"
        );
        let mut changed = kek("k1");
        changed.doc = None;
        changed.kms_props.clear();
        changed.ts = 1500;
        assert_eq!(
            store.update_kek(&changed, None).await.expect("update"),
            Done
        );
        assert_eq!(store.kek("k1").await.expect("kek"), Some(changed.clone()));
        assert_eq!(
            store.update_kek(&kek("nope"), None).await.expect("update"),
            Missing
        );

        // DEKs: versions and algorithms are separate keys.
        assert_eq!(
            store
                .insert_dek(&dek("k1", "orders-value", 1, "AES256_GCM"), None)
                .await
                .expect("dek"),
            Done
        );
        assert_eq!(
            store
                .insert_dek(&dek("k1", "orders-value", 1, "AES256_GCM"), None)
                .await
                .expect("dek"),
            Exists,
            "a version is never replaced: data encrypted with it would become unreadable"
        );
        for d in [
            dek("k1", "orders-value", 2, "AES256_GCM"),
            dek("k1", "orders-value", 1, "AES256_SIV"),
            dek("k1", "alpha-value", 1, "AES256_GCM"),
        ] {
            assert_eq!(store.insert_dek(&d, None).await.expect("dek"), Done);
        }
        assert_eq!(
            store
                .insert_dek(&dek("missing", "s", 1, "AES256_GCM"), None)
                .await
                .expect("dek"),
            KekMissing
        );
        // Rewrapping replaces the material of a held version, and nothing else.
        let mut rewrapped = dek("k1", "alpha-value", 1, "AES256_GCM");
        rewrapped.encrypted_key_material = Some("cmV3cmFwcGVk".into());
        assert_eq!(
            store.rewrap_dek(&rewrapped, None).await.expect("rewrap"),
            Done
        );
        let held = store
            .dek("k1", "alpha-value", "AES256_GCM", Some(1), false)
            .await
            .expect("read")
            .expect("held");
        assert_eq!(held.encrypted_key_material.as_deref(), Some("cmV3cmFwcGVk"));
        let mut absent = dek("k1", "alpha-value", 9, "AES256_GCM");
        absent.encrypted_key_material = Some("eA==".into());
        assert_eq!(
            store.rewrap_dek(&absent, None).await.expect("rewrap"),
            Missing
        );
        assert_eq!(
            store
                .rewrap_dek(&dek("missing", "s", 1, "AES256_GCM"), None)
                .await
                .expect("rewrap"),
            KekMissing
        );
        assert_eq!(
            store
                .dek("k1", "orders-value", "AES256_GCM", Some(1), false)
                .await
                .expect("dek"),
            Some(dek("k1", "orders-value", 1, "AES256_GCM"))
        );
        assert_eq!(
            store
                .dek("k1", "orders-value", "AES256_GCM", None, false)
                .await
                .expect("latest")
                .map(|d| d.version),
            Some(2),
            "no version is the latest"
        );
        assert_eq!(
            store
                .dek_versions("k1", "orders-value", "AES256_GCM", false)
                .await
                .expect("versions"),
            [1, 2]
        );
        assert_eq!(
            store.dek_subjects("k1", false).await.expect("subjects"),
            ["alpha-value", "orders-value"]
        );
        assert_eq!(store.key_counts().await.expect("counts"), (2, 4));
        let pair = |k: &str, s: &str| (k.to_string(), s.to_string());
        assert_eq!(
            store.kek_subjects(false).await.expect("kek subjects"),
            [pair("k1", "alpha-value"), pair("k1", "orders-value")]
        );

        // Soft deletes hide, permanent deletes need a soft one first.
        assert_eq!(
            store.delete_kek("k1", false, None).await.expect("delete"),
            Referenced,
            "a KEK with live DEKs stays"
        );
        let v2 = DekScope {
            version: Some(2),
            ..every("k1", "orders-value")
        };
        assert_eq!(
            store.delete_deks(v2, true, None).await.expect("delete"),
            NotSoftDeleted
        );
        assert_eq!(
            store.delete_deks(v2, false, None).await.expect("delete"),
            Done
        );
        assert_eq!(
            store.delete_deks(v2, false, None).await.expect("delete"),
            Missing,
            "nothing live left to delete"
        );
        assert_eq!(
            store
                .dek("k1", "orders-value", "AES256_GCM", None, false)
                .await
                .expect("latest")
                .map(|d| d.version),
            Some(1),
            "the latest live version"
        );
        let deleted = store
            .dek("k1", "orders-value", "AES256_GCM", Some(2), true)
            .await
            .expect("dek")
            .expect("deleted ones with deleted=true");
        assert!(deleted.deleted);
        assert_eq!(
            store
                .dek_versions("k1", "orders-value", "AES256_GCM", true)
                .await
                .expect("versions"),
            [1, 2]
        );
        assert_eq!(store.undelete_deks(v2, None).await.expect("undelete"), Done);
        assert_eq!(
            store.undelete_deks(v2, None).await.expect("undelete"),
            Missing
        );
        assert_eq!(
            store
                .delete_deks(every("k1", "orders-value"), false, None)
                .await
                .expect("delete all"),
            Done
        );
        assert_eq!(
            store.kek_subjects(false).await.expect("kek subjects"),
            [pair("k1", "alpha-value"), pair("k1", "orders-value")],
            "the subject's live DEK in another algorithm keeps it listed"
        );
        assert_eq!(
            store.key_counts().await.expect("counts"),
            (2, 4),
            "soft-deleted keys count"
        );
        assert_eq!(
            store
                .dek_versions("k1", "orders-value", "AES256_GCM", false)
                .await
                .expect("versions"),
            Vec::<i64>::new()
        );
        assert_eq!(
            store
                .dek("k1", "orders-value", "AES256_SIV", Some(1), false)
                .await
                .expect("dek")
                .map(|d| d.algorithm),
            Some("AES256_SIV".to_string()),
            "another algorithm is another key"
        );
        assert_eq!(
            store
                .delete_deks(every("k1", "orders-value"), true, None)
                .await
                .expect("permanent"),
            Done
        );
        assert_eq!(
            store
                .dek_versions("k1", "orders-value", "AES256_GCM", true)
                .await
                .expect("versions"),
            Vec::<i64>::new()
        );
        for (subject, algorithm) in [
            ("orders-value", "AES256_SIV"),
            ("alpha-value", "AES256_GCM"),
        ] {
            let scope = DekScope {
                kek_name: "k1",
                subject,
                algorithm,
                version: None,
            };
            assert_eq!(
                store.delete_deks(scope, false, None).await.expect("delete"),
                Done
            );
        }
        assert_eq!(
            store.kek_subjects(false).await.expect("kek subjects"),
            [],
            "subjects whose DEKs are all soft-deleted are left out"
        );
        assert_eq!(
            store.kek_subjects(true).await.expect("kek subjects"),
            [pair("k1", "alpha-value"), pair("k1", "orders-value")]
        );
        assert_eq!(
            store.delete_kek("k1", true, None).await.expect("delete"),
            NotSoftDeleted
        );
        assert_eq!(
            store.delete_kek("k1", false, None).await.expect("delete"),
            Done
        );
        assert_eq!(store.kek_names(false).await.expect("names"), ["k0"]);
        assert_eq!(store.kek_names(true).await.expect("names"), ["k0", "k1"]);
        assert_eq!(
            store
                .insert_dek(&dek("k1", "s", 1, "AES256_GCM"), None)
                .await
                .expect("dek"),
            KekMissing,
            "no DEK under a deleted KEK"
        );
        assert_eq!(
            store.delete_kek("k1", true, None).await.expect("delete"),
            Referenced,
            "soft-deleted DEKs still refer to it"
        );
        assert_eq!(
            store.undelete_kek("k1", None).await.expect("undelete"),
            Done
        );
        assert_eq!(
            store.undelete_kek("k1", None).await.expect("undelete"),
            Missing
        );
        assert_eq!(
            store.delete_kek("k1", false, None).await.expect("delete"),
            Done
        );
        let (keks, deks) = store.all_keys().await.expect("all");
        assert_eq!(
            keks.iter().map(|k| k.name.as_str()).collect::<Vec<_>>(),
            ["k0", "k1"]
        );
        assert_eq!(deks.len(), 2, "the soft-deleted DEKs: {deks:?}");
        assert_eq!(
            store.restore_keys(&keks, &deks).await.expect("restore"),
            RestoredKeys::default(),
            "restoring what is held writes nothing"
        );
        let mut other = deks[0].clone();
        other.encrypted_key_material = Some("b3RoZXI=".into());
        let mut moved = deks[0].clone();
        moved.subject = "moved-value".into();
        let restored = store
            .restore_keys(&[kek("k2")], &[other.clone(), moved.clone()])
            .await
            .expect("restore");
        assert_eq!(restored.written, 2, "{restored:?}");
        assert_eq!(restored.conflicts, [dek_conflict(&other)]);
        assert_eq!(store.kek("k2").await.expect("kek"), Some(kek("k2")));
        assert_eq!(
            store
                .dek(
                    "k1",
                    "moved-value",
                    &moved.algorithm,
                    Some(moved.version),
                    true
                )
                .await
                .expect("dek"),
            Some(moved.clone()),
            "restored as it was, deletion and time kept"
        );
        let scope = DekScope {
            kek_name: "k1",
            subject: "moved-value",
            algorithm: &moved.algorithm,
            version: None,
        };
        assert_eq!(
            store.delete_deks(scope, true, None).await.expect("delete"),
            Done
        );
        assert_eq!(
            store.delete_kek("k2", false, None).await.expect("delete"),
            Done
        );
        assert_eq!(
            store.delete_kek("k2", true, None).await.expect("delete"),
            Done
        );
        for (subject, algorithm) in [
            ("orders-value", "AES256_SIV"),
            ("alpha-value", "AES256_GCM"),
        ] {
            let scope = DekScope {
                kek_name: "k1",
                subject,
                algorithm,
                version: None,
            };
            assert_eq!(
                store.delete_deks(scope, true, None).await.expect("delete"),
                Done
            );
        }
        assert_eq!(
            store.delete_kek("k1", true, None).await.expect("delete"),
            Done
        );
        assert_eq!(store.kek("k1").await.expect("kek"), None);
        assert_eq!(
            store.delete_kek("k1", false, None).await.expect("delete"),
            Missing
        );
        assert_eq!(
            store.delete_kek("k0", false, None).await.expect("delete"),
            Done
        );
        assert_eq!(
            store.delete_kek("k0", true, None).await.expect("delete"),
            Done
        );
        assert!(store.kek_names(true).await.expect("names").is_empty());
    }
}
