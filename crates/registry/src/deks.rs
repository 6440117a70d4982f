//! The DEK Registry: the key store Confluent's clients use for client-side field-level
//! encryption (`/dek-registry/v1`). A producer whose rule set has an `ENCRYPT` rule makes a
//! data encryption key (DEK), encrypts it with its key encryption key (KEK, a key in the
//! producer's KMS) and stores it here; consumers read it back and decrypt it with the same
//! KMS. The registry stores what it is given and never sees a key in the clear.
//!
//! Confluent's rules, as its registry applies them: names are identifiers; creating a key
//! that exists is a conflict unless it is the same key soft-deleted (then it is undeleted);
//! a soft delete hides a key, a permanent one needs the soft one first; a KEK with DEKs
//! stays; deletes of what is already gone do nothing. A `shared` KEK would have the registry
//! call the KMS itself (to make DEKs, and to hand them out in the clear): Covenant has no KMS
//! driver, so it refuses `shared` with Confluent's invalid-key error.

use crate::Registry;
use covenant_store::AuditLine;
use covenant_store::deks::{Dek, DekScope, DekStore, Kek, KeyWrite};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The algorithms a DEK may use; the first is the default.
pub const ALGORITHMS: [&str; 3] = ["AES256_GCM", "AES128_GCM", "AES256_SIV"];

/// The longest KEK name accepted, in characters.
pub const MAX_NAME_CHARS: usize = 256;

/// A DEK Registry failure, with Confluent's code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DekError {
    #[error("Key '{0}' not found")]
    KeyNotFound(String),
    #[error("Key '{0}' was not deleted first before being permanently deleted")]
    KeyNotSoftDeleted(String),
    #[error("Key '{0}' must be undeleted first")]
    KeySoftDeleted(String),
    #[error("Key '{0}' already exists; use a different value")]
    AlreadyExists(String),
    /// The field that is missing or invalid, and why.
    #[error("Invalid or missing key field: {0}")]
    InvalidKey(String),
    #[error("One or more references exist to the key {0}")]
    ReferenceExists(String),
    /// The registry holds its most keys of this kind already (`--dek-max-keys`).
    #[error("A maximum of {0} keys already exist")]
    TooManyKeys(usize),
    #[error("The DEK Registry is not enabled on this server")]
    Disabled,
    #[error("Error in the key store: {0}")]
    Store(String),
}

impl DekError {
    /// Confluent's `error_code`; its first three digits are the HTTP status.
    pub fn error_code(&self) -> u32 {
        match self {
            DekError::KeyNotFound(_) => 40470,
            DekError::KeyNotSoftDeleted(_) => 40471,
            DekError::KeySoftDeleted(_) => 40472,
            DekError::AlreadyExists(_) => 40971,
            DekError::InvalidKey(_) => 42271,
            DekError::ReferenceExists(_) => 42272,
            DekError::TooManyKeys(_) => 40972,
            DekError::Disabled => 50370,
            DekError::Store(_) => 50001,
        }
    }
}

impl From<covenant_store::StoreError> for DekError {
    fn from(e: covenant_store::StoreError) -> DekError {
        DekError::Store(e.to_string())
    }
}

pub type DekResult<T> = Result<T, DekError>;

/// A KEK as a client asks for it (`CreateKekRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewKek {
    pub name: Option<String>,
    pub kms_type: Option<String>,
    pub kms_key_id: Option<String>,
    pub kms_props: BTreeMap<String, String>,
    pub doc: Option<String>,
    pub shared: bool,
}

/// A change to a KEK (`UpdateKekRequest`): each field given replaces the stored one; a
/// `doc` or `kmsProps` given as null clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KekUpdate {
    pub kms_props: Option<BTreeMap<String, String>>,
    pub doc: Option<Option<String>>,
    pub shared: Option<bool>,
}

/// A DEK as a client asks for it (`CreateDekRequest`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewDek {
    pub subject: Option<String>,
    pub version: Option<i64>,
    pub algorithm: Option<String>,
    pub encrypted_key_material: Option<String>,
    pub deleted: bool,
    /// Confluent's `rewrap`: a DEK already held takes this encrypted material (and deletion
    /// state) instead of the request being a conflict.
    pub rewrap: bool,
}

/// Checks a KEK name as Confluent does: a letter or `_` first, then letters, digits, `_`
/// and `-`.
pub fn check_name(name: &str) -> DekResult<()> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        && name.chars().count() <= MAX_NAME_CHARS;
    if valid {
        Ok(())
    } else {
        Err(DekError::InvalidKey("name".into()))
    }
}

/// Checks a DEK's subject: not empty, no control characters.
pub fn check_subject(subject: &str) -> DekResult<()> {
    if subject.is_empty() || subject.chars().any(char::is_control) {
        Err(DekError::InvalidKey("subject".into()))
    } else {
        Ok(())
    }
}

/// The algorithm named (the default when none is), or 42271.
pub fn algorithm(name: Option<&str>) -> DekResult<&'static str> {
    match name {
        None => Ok(ALGORITHMS[0]),
        Some(n) => ALGORITHMS
            .into_iter()
            .find(|a| a.eq_ignore_ascii_case(n.trim()))
            .ok_or_else(|| DekError::InvalidKey("algorithm".into())),
    }
}

/// Confluent's spelling of the cloud KMS types (`aws…` is `aws-kms`, and so on).
fn normalize_kms_type(kms_type: &str) -> String {
    let lower = kms_type.to_lowercase();
    for cloud in ["aws", "azure", "gcp"] {
        if lower.starts_with(cloud) {
            return format!("{cloud}-kms");
        }
    }
    kms_type.to_string()
}

fn no_kms() -> DekError {
    DekError::InvalidKey(
        "shared (this registry has no KMS driver, so it cannot hold shared KEKs; create the KEK with shared false and let clients use their own KMS)".into(),
    )
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Whether two KEKs are the same key (everything but time and deletion).
fn same_kek(a: &Kek, b: &Kek) -> bool {
    a.kms_type == b.kms_type
        && a.kms_key_id == b.kms_key_id
        && a.kms_props == b.kms_props
        && a.doc == b.doc
        && a.shared == b.shared
}

/// How many KEKs, and how many DEKs, a registry holds at most by default (Confluent's
/// `dek.registry.max.keys`).
pub const DEFAULT_MAX_KEYS: usize = 20_000;

/// The DEK Registry over its store.
pub struct DekRegistry {
    store: Arc<dyn DekStore>,
    max_keys: usize,
}

impl DekRegistry {
    pub fn new(store: Arc<dyn DekStore>) -> DekRegistry {
        DekRegistry {
            store,
            max_keys: DEFAULT_MAX_KEYS,
        }
    }

    /// At most `max_keys` KEKs and `max_keys` DEKs (versions count, soft-deleted keys too);
    /// creating one more is refused with 409 `40972`.
    pub fn with_max_keys(mut self, max_keys: usize) -> DekRegistry {
        self.max_keys = max_keys;
        self
    }

    /// 40972 when the registry holds its most KEKs (`deks: false`) or DEKs already. Keys
    /// are created once per subject and key rotation, so counting the stored keys here (one
    /// `COUNT` each) costs less than keeping a counter consistent across nodes.
    async fn room_for_one_more(&self, deks: bool) -> DekResult<()> {
        let (keks, all_deks) = self.store.key_counts().await?;
        let held = if deks { all_deks } else { keks };
        if held >= self.max_keys as u64 {
            return Err(DekError::TooManyKeys(self.max_keys));
        }
        Ok(())
    }

    /// The names of the KEKs with a DEK for a subject that starts with one of `prefixes`
    /// (Confluent's `subjectPrefix`), in order, each once; `visible` says which subjects the
    /// caller may know of.
    pub async fn kek_names_for_subjects(
        &self,
        prefixes: &[&str],
        deleted: bool,
        visible: impl Fn(&str) -> bool,
    ) -> DekResult<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        for (kek, subject) in self.store.kek_subjects(deleted).await? {
            let listed = out.last() == Some(&kek);
            if !listed && prefixes.iter().any(|p| subject.starts_with(p)) && visible(&subject) {
                out.push(kek);
            }
        }
        Ok(out)
    }

    /// Confluent's `POST /keks/{name}/test`: for a shared KEK the registry would make a DEK
    /// with its KMS to prove it can; this registry holds no shared KEK, so a KEK that exists
    /// is answered with the invalid-key error for `shared`, as Confluent answers for one that
    /// is not shared.
    pub async fn test_kek(&self, name: &str) -> DekResult<Kek> {
        check_name(name)?;
        let kek = self.kek(name, false).await?;
        if kek.shared {
            return Ok(kek);
        }
        Err(DekError::InvalidKey("shared".into()))
    }

    /// KEK names in order; soft-deleted ones too with `deleted`.
    pub async fn kek_names(&self, deleted: bool) -> DekResult<Vec<String>> {
        Ok(self.store.kek_names(deleted).await?)
    }

    /// A KEK; a soft-deleted one only with `deleted`.
    pub async fn kek(&self, name: &str, deleted: bool) -> DekResult<Kek> {
        check_name(name)?;
        match self.store.kek(name).await? {
            Some(k) if deleted || !k.deleted => Ok(k),
            _ => Err(DekError::KeyNotFound(name.to_string())),
        }
    }

    /// Creates a KEK, or undeletes the same one soft-deleted.
    pub async fn create_kek(&self, request: NewKek, audit: AuditLine<'_>) -> DekResult<Kek> {
        let name = request.name.unwrap_or_default();
        check_name(&name)?;
        let kms_key_id = request
            .kms_key_id
            .filter(|k| !k.is_empty())
            .ok_or_else(|| DekError::InvalidKey("kmsKeyId".into()))?;
        let kms_type = request
            .kms_type
            .filter(|k| !k.is_empty())
            .ok_or_else(|| DekError::InvalidKey("kmsType".into()))?;
        if request.shared {
            return Err(no_kms());
        }
        self.room_for_one_more(false).await?;
        let kek = Kek {
            name: name.clone(),
            kms_type: normalize_kms_type(&kms_type),
            kms_key_id,
            kms_props: request.kms_props,
            doc: request.doc,
            shared: false,
            ts: now_millis(),
            deleted: false,
        };
        match self.store.insert_kek(&kek, audit).await? {
            KeyWrite::Done => Ok(kek),
            _ => match self.store.kek(&name).await? {
                Some(held) if held.deleted && same_kek(&held, &kek) => {
                    match self.store.update_kek(&kek, audit).await? {
                        KeyWrite::Done => Ok(kek),
                        _ => Err(DekError::AlreadyExists(name)),
                    }
                }
                _ => Err(DekError::AlreadyExists(name)),
            },
        }
    }

    /// Changes a live KEK's properties, doc or sharing; an unchanged KEK is answered as is.
    pub async fn update_kek(
        &self,
        name: &str,
        update: KekUpdate,
        audit: AuditLine<'_>,
    ) -> DekResult<Kek> {
        let held = self.kek(name, false).await?;
        if update.shared == Some(true) {
            return Err(no_kms());
        }
        let mut kek = held.clone();
        if let Some(props) = update.kms_props {
            kek.kms_props = props;
        }
        if let Some(doc) = update.doc {
            kek.doc = doc;
        }
        if let Some(shared) = update.shared {
            kek.shared = shared;
        }
        if same_kek(&kek, &held) {
            return Ok(held);
        }
        kek.ts = now_millis();
        match self.store.update_kek(&kek, audit).await? {
            KeyWrite::Done => Ok(kek),
            _ => Err(DekError::KeyNotFound(name.to_string())),
        }
    }

    /// Soft-deletes a KEK (nothing to do if it is already), or permanently removes a
    /// soft-deleted one.
    pub async fn delete_kek(
        &self,
        name: &str,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> DekResult<()> {
        self.kek(name, true).await?;
        match self.store.delete_kek(name, permanent, audit).await? {
            KeyWrite::NotSoftDeleted => Err(DekError::KeyNotSoftDeleted(name.to_string())),
            KeyWrite::Referenced => Err(DekError::ReferenceExists(name.to_string())),
            _ => Ok(()),
        }
    }

    /// Undeletes a soft-deleted KEK (nothing to do if it is live).
    pub async fn undelete_kek(&self, name: &str, audit: AuditLine<'_>) -> DekResult<()> {
        self.kek(name, true).await?;
        self.store.undelete_kek(name, audit).await?;
        Ok(())
    }

    /// The subjects with DEKs under a live KEK (or any, with `deleted`).
    pub async fn dek_subjects(&self, kek: &str, deleted: bool) -> DekResult<Vec<String>> {
        self.kek(kek, deleted).await?;
        Ok(self.store.dek_subjects(kek, deleted).await?)
    }

    /// The versions of a subject's DEK.
    pub async fn dek_versions(
        &self,
        kek: &str,
        subject: &str,
        algorithm_name: Option<&str>,
        deleted: bool,
    ) -> DekResult<Vec<i64>> {
        check_subject(subject)?;
        let algorithm = algorithm(algorithm_name)?;
        self.kek(kek, deleted).await?;
        Ok(self
            .store
            .dek_versions(kek, subject, algorithm, deleted)
            .await?)
    }

    /// One DEK: a version, or the latest for `None` (and Confluent's `-1`).
    pub async fn dek(
        &self,
        kek: &str,
        subject: &str,
        version: Option<i64>,
        algorithm_name: Option<&str>,
        deleted: bool,
    ) -> DekResult<Dek> {
        check_subject(subject)?;
        let algorithm = algorithm(algorithm_name)?;
        self.kek(kek, deleted).await?;
        let version = version.filter(|v| *v != -1);
        self.store
            .dek(kek, subject, algorithm, version, deleted)
            .await?
            .ok_or_else(|| DekError::KeyNotFound(subject.to_string()))
    }

    /// Stores a DEK a client made and encrypted with the KEK, or undeletes the same one
    /// soft-deleted; with `rewrap`, replaces a held one's encrypted material (Confluent's
    /// `rewrap-deks` tool re-encrypts every DEK after the KEK's KMS key was rotated).
    pub async fn create_dek(
        &self,
        kek_name: &str,
        request: NewDek,
        audit: AuditLine<'_>,
    ) -> DekResult<Dek> {
        let subject = request.subject.unwrap_or_default();
        check_subject(&subject)?;
        let algorithm = algorithm(request.algorithm.as_deref())?;
        let version = request.version.unwrap_or(1);
        if version < 1 {
            return Err(DekError::InvalidKey("version".into()));
        }
        let kek = self.kek(kek_name, false).await?;
        self.room_for_one_more(true).await?;
        if kek.shared {
            return Err(no_kms());
        }
        let encrypted = request
            .encrypted_key_material
            .filter(|m| !m.is_empty())
            .ok_or_else(|| DekError::InvalidKey("encryptedKeyMaterial".into()))?;
        let dek = Dek {
            kek_name: kek_name.to_string(),
            subject: subject.clone(),
            version,
            algorithm: algorithm.to_string(),
            encrypted_key_material: Some(encrypted),
            key_material: None,
            ts: now_millis(),
            deleted: false,
        };
        if request.rewrap {
            let rewrapped = Dek {
                deleted: request.deleted,
                ..dek.clone()
            };
            match self.store.rewrap_dek(&rewrapped, audit).await? {
                KeyWrite::Done => return Ok(rewrapped),
                KeyWrite::KekMissing => return Err(DekError::KeyNotFound(kek_name.to_string())),
                _ => {}
            }
        }
        match self.store.insert_dek(&dek, audit).await? {
            KeyWrite::Done => Ok(dek),
            KeyWrite::KekMissing => Err(DekError::KeyNotFound(kek_name.to_string())),
            _ => {
                let held = self
                    .store
                    .dek(kek_name, &subject, algorithm, Some(version), true)
                    .await?;
                match held {
                    Some(h)
                        if h.deleted && h.encrypted_key_material == dek.encrypted_key_material =>
                    {
                        let scope = DekScope {
                            kek_name,
                            subject: &subject,
                            algorithm,
                            version: Some(version),
                        };
                        self.store.undelete_deks(scope, audit).await?;
                        self.dek(kek_name, &subject, Some(version), Some(algorithm), false)
                            .await
                    }
                    _ => Err(DekError::AlreadyExists(subject)),
                }
            }
        }
    }

    /// Soft-deletes a subject's DEKs (every version, or one), or permanently removes them
    /// once soft-deleted; what is already gone is left as it is.
    pub async fn delete_deks(
        &self,
        kek: &str,
        subject: &str,
        version: Option<i64>,
        algorithm_name: Option<&str>,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> DekResult<()> {
        check_subject(subject)?;
        let algorithm = algorithm(algorithm_name)?;
        self.kek(kek, true).await?;
        let scope = DekScope {
            kek_name: kek,
            subject,
            algorithm,
            version,
        };
        match self.store.delete_deks(scope, permanent, audit).await? {
            KeyWrite::NotSoftDeleted => Err(DekError::KeyNotSoftDeleted(subject.to_string())),
            _ => Ok(()),
        }
    }

    /// Undeletes a subject's soft-deleted DEKs (every version, or one) under a live KEK.
    pub async fn undelete_deks(
        &self,
        kek: &str,
        subject: &str,
        version: Option<i64>,
        algorithm_name: Option<&str>,
        audit: AuditLine<'_>,
    ) -> DekResult<()> {
        check_subject(subject)?;
        let algorithm = algorithm(algorithm_name)?;
        if self.kek(kek, true).await?.deleted {
            return Err(DekError::KeySoftDeleted(kek.to_string()));
        }
        let scope = DekScope {
            kek_name: kek,
            subject,
            algorithm,
            version,
        };
        self.store.undelete_deks(scope, audit).await?;
        Ok(())
    }

    /// Every KEK and DEK, deleted or not (for export).
    pub async fn all_keys(&self) -> DekResult<(Vec<Kek>, Vec<Dek>)> {
        Ok(self.store.all_keys().await?)
    }
}

impl Registry {
    /// Adds the DEK Registry; without it, its routes answer that it is not enabled.
    pub fn with_deks(mut self, store: Arc<dyn DekStore>) -> Registry {
        self.deks = Some(Arc::new(DekRegistry::new(store)));
        self
    }

    /// At most `max_keys` KEKs and DEKs in the DEK Registry (see [`DekRegistry::with_max_keys`]).
    pub fn with_dek_max_keys(mut self, max_keys: usize) -> Registry {
        self.deks = self.deks.map(|d| {
            Arc::new(DekRegistry {
                store: d.store.clone(),
                max_keys,
            })
        });
        self
    }

    /// The DEK Registry, if this registry has one.
    pub fn deks(&self) -> DekResult<&DekRegistry> {
        self.deks.as_deref().ok_or(DekError::Disabled)
    }
}

impl Registry {
    /// The fields of a stored version that carry personal data or are encrypted, each with the
    /// KEK its rule set's `ENCRYPT` rule names (none: clear text): the console's view of what
    /// the DEK Registry protects in a subject.
    pub async fn protected_fields(
        &self,
        record: &covenant_store::SchemaRecord,
    ) -> crate::RegistryResult<Vec<covenant_policy::ProtectedField>> {
        let parsed = self.parse_record(record).await?;
        let context = covenant_policy::PolicyContext {
            metadata: record
                .metadata
                .as_ref()
                .and_then(|m| serde_json::from_value(m.clone()).ok())
                .unwrap_or_default(),
            encryption: Some(covenant_policy::Encryption::of_rule_set(
                record.rule_set.as_ref(),
            )),
            ..Default::default()
        };
        self.judge_here(|m| {
            covenant_policy::protected_fields(&covenant_policy::field_tree(m, &parsed), &context)
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_subjects_and_algorithms_are_checked_as_confluent_checks_them() {
        for ok in ["k1", "_k", "team-a-kek", "Ü_1"] {
            assert_eq!(check_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "1k",
            "-k",
            "k.1",
            "k/1",
            &"k".repeat(MAX_NAME_CHARS + 1),
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_subject("orders-value").is_ok());
        assert!(check_subject("").is_err());
        assert!(check_subject("a\u{7}b").is_err());
        assert_eq!(algorithm(None), Ok("AES256_GCM"));
        assert_eq!(algorithm(Some("aes128_gcm")), Ok("AES128_GCM"));
        assert_eq!(
            algorithm(Some("DES")),
            Err(DekError::InvalidKey("algorithm".into()))
        );
        assert_eq!(normalize_kms_type("AWS"), "aws-kms");
        assert_eq!(normalize_kms_type("local-kms"), "local-kms");
        assert_eq!(DekError::KeyNotFound("k".into()).error_code(), 40470);
        assert_eq!(
            DekError::KeyNotFound("k".into()).to_string(),
            "Key 'k' not found"
        );
    }
}
