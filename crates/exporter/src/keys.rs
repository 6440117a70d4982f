//! The DEK Registry's keys of exported subjects, copied with them: for each subject, its
//! DEKs (every version and algorithm, soft-deleted ones too) under the subject's
//! destination name, and the KEKs they are encrypted with under their destination names
//! (`kekRenameFormat`; KEK names are registry-wide, contexts do not apply). A consumer
//! reading copied messages against the destination then finds the DEK its messages name.
//!
//! Keys are read from this registry through [`DekRegistry`] and written through the
//! destination's `/dek-registry/v1`, as Confluent's exporters write them. Like schemas,
//! a copy writes only what the destination lacks: a key already there with the same content
//! and deleted state is left alone, so copying again writes nothing. A KEK at the
//! destination for another KMS key (`kmsType`, `kmsKeyId`, `shared`), or a DEK version with
//! other encrypted material, is a conflict: nothing is overwritten and the exporter pauses.
//! A KEK's `kmsProps` and `doc`, which describe the same KMS key, follow the source's.
//! Permanent deletes are not copied: a key removed is lost for good, and so is every message
//! encrypted with it, so only the destination's operator removes keys there.
//!
//! Only encrypted material travels (Covenant holds no key in the clear); it is compared and
//! sent, never logged, and conflicts name keys, never their material.

use crate::destination::{HeldKey, KeyWritten};
use crate::runner::{Conflict, Copier, CopyError};
use covenant_registry::deks::DekError;
use covenant_store::deks::{Dek, Kek};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};

/// Every key of this registry, read once per page of work: KEKs by name, DEKs by subject.
#[derive(Debug, Default)]
pub(crate) struct KeySnapshot {
    keks: HashMap<String, Kek>,
    by_subject: BTreeMap<String, Vec<Dek>>,
}

impl KeySnapshot {
    /// The keys of `deks`; none on a registry without a DEK Registry.
    pub(crate) async fn read(
        deks: Option<&covenant_registry::deks::DekRegistry>,
    ) -> Result<KeySnapshot, CopyError> {
        let Some(deks) = deks else {
            return Ok(KeySnapshot::default());
        };
        let (keks, all) = match deks.all_keys().await {
            Ok(keys) => keys,
            Err(DekError::Disabled) => return Ok(KeySnapshot::default()),
            Err(e) => return Err(CopyError::Spec(format!("reading the keys: {e}"))),
        };
        let mut by_subject: BTreeMap<String, Vec<Dek>> = BTreeMap::new();
        for dek in all {
            by_subject.entry(dek.subject.clone()).or_default().push(dek);
        }
        let keks = keks.into_iter().map(|k| (k.name.clone(), k)).collect();
        Ok(KeySnapshot { keks, by_subject })
    }

    /// The subjects that have DEKs.
    pub(crate) fn subjects(&self) -> impl Iterator<Item = &String> {
        self.by_subject.keys()
    }

    /// A subject's DEKs grouped by KEK, with the KEK.
    fn of(&self, subject: &str) -> Vec<(&Kek, Vec<&Dek>)> {
        let mut grouped: BTreeMap<&str, Vec<&Dek>> = BTreeMap::new();
        for dek in self.by_subject.get(subject).into_iter().flatten() {
            grouped.entry(&dek.kek_name).or_default().push(dek);
        }
        grouped
            .into_iter()
            .filter_map(|(name, deks)| self.keks.get(name).map(|kek| (kek, deks)))
            .collect()
    }
}

/// Whether the destination's KEK stands for the same KMS key as ours.
fn same_kms_key(ours: &Kek, theirs: &HeldKey) -> bool {
    let shared = theirs.fields.get("shared").and_then(Value::as_bool) == Some(true);
    theirs.text("kmsType") == Some(ours.kms_type.as_str())
        && theirs.text("kmsKeyId") == Some(ours.kms_key_id.as_str())
        && shared == ours.shared
}

/// Whether the destination's KEK has our `kmsProps` and `doc` (empty is the same as none).
fn same_description(ours: &Kek, theirs: &HeldKey) -> bool {
    let props: BTreeMap<String, String> = theirs
        .fields
        .get("kmsProps")
        .and_then(|p| serde_json::from_value(p.clone()).ok())
        .unwrap_or_default();
    let doc = |d: Option<&str>| d.filter(|d| !d.is_empty()).map(str::to_string);
    props == ours.kms_props && doc(theirs.text("doc")) == doc(ours.doc.as_deref())
}

fn description(kek: &Kek) -> Value {
    json!({"kmsProps": kek.kms_props, "doc": kek.doc})
}

/// A refusal by the destination's DEK Registry, as a conflict naming `what` was refused.
fn refused(written: KeyWritten, conflict: impl FnOnce(i64) -> Conflict) -> Result<(), CopyError> {
    match written {
        KeyWritten::Done => Ok(()),
        KeyWritten::Refused(code) => Err(CopyError::Conflict(conflict(code))),
    }
}

impl Copier<'_> {
    /// Reads this registry's keys once for the page of work under way.
    async fn load_keys(&mut self) -> Result<(), CopyError> {
        if self.keys.is_none() {
            self.keys = Some(KeySnapshot::read(self.deks).await?);
        }
        Ok(())
    }

    /// The exported subjects that have DEKs (none when keys are not exported).
    pub(crate) async fn subjects_with_keys(&mut self) -> Result<Vec<String>, CopyError> {
        if !self.spec.exports_keys() {
            return Ok(Vec::new());
        }
        self.load_keys().await?;
        Ok(self
            .keys
            .iter()
            .flat_map(KeySnapshot::subjects)
            .filter(|s| self.spec.exports(s))
            .cloned()
            .collect())
    }

    /// Copies the keys of `subject` (at the destination, `target`): every KEK its DEKs use
    /// that the exporter's creator may read, then those DEKs.
    pub(crate) async fn copy_keys(&mut self, subject: &str, target: &str) -> Result<(), CopyError> {
        if !self.spec.exports_keys() {
            return Ok(());
        }
        self.load_keys().await?;
        let Some(keys) = self.keys.as_ref() else {
            return Ok(());
        };
        for (kek, deks) in keys.of(subject) {
            if !self.authority.may_read_kek(self.creator, &kek.name) {
                tracing::info!(kek = %kek.name, "KEK not exported: the exporter's creator may not read it");
                continue;
            }
            KeyCopy {
                copier: &*self,
                kek,
                name: self.spec.destination_kek(&kek.name),
                subject,
                target,
                live: false,
            }
            .run(&deks)
            .await?;
        }
        Ok(())
    }
}

/// The copy of one KEK and the DEKs of one subject under it.
struct KeyCopy<'c, 'a> {
    copier: &'c Copier<'a>,
    kek: &'c Kek,
    /// The KEK's destination name.
    name: String,
    subject: &'c str,
    target: &'c str,
    /// Whether the destination's KEK is live now (DEKs can only be written under a live one).
    live: bool,
}

impl KeyCopy<'_, '_> {
    async fn run(mut self, deks: &[&Dek]) -> Result<(), CopyError> {
        let destination = self.copier.destination;
        let held = destination.kek(&self.name).await?;
        match &held {
            None => {
                let mut body = description(self.kek);
                body["name"] = json!(self.name);
                body["kmsType"] = json!(self.kek.kms_type);
                body["kmsKeyId"] = json!(self.kek.kms_key_id);
                body["shared"] = json!(false);
                let written = destination.create_kek(&body).await?;
                refused(written, |code| self.conflict("refused the KEK", code))?;
                self.live = true;
            }
            Some(theirs) if !same_kms_key(self.kek, theirs) => {
                return Err(CopyError::Conflict(self.kek_conflict()));
            }
            Some(theirs) => self.live = !theirs.deleted,
        }
        for dek in deks {
            self.copy_dek(dek).await?;
        }
        if held.is_some_and(|theirs| !same_description(self.kek, &theirs)) {
            self.make_live().await?;
            let written = destination
                .update_kek(&self.name, &description(self.kek))
                .await?;
            refused(written, |code| self.conflict("refused a KEK change", code))?;
        }
        if self.kek.deleted == self.live {
            let written = destination
                .set_kek_deleted(&self.name, self.kek.deleted)
                .await?;
            refused(written, |code| {
                self.conflict("refused to delete or undelete the KEK", code)
            })?;
        }
        Ok(())
    }

    /// Undeletes the destination's KEK so a DEK can be written under it (deleted again at
    /// the end if ours is).
    async fn make_live(&mut self) -> Result<(), CopyError> {
        if !self.live {
            let written = self
                .copier
                .destination
                .set_kek_deleted(&self.name, false)
                .await?;
            refused(written, |code| {
                self.conflict("refused to undelete the KEK", code)
            })?;
            self.live = true;
        }
        Ok(())
    }

    async fn copy_dek(&mut self, dek: &Dek) -> Result<(), CopyError> {
        let destination = self.copier.destination;
        let key = (dek.version, dek.algorithm.as_str());
        let held = destination
            .dek(&self.name, self.target, dek.version, &dek.algorithm)
            .await?;
        let deleted_there = match held {
            None => {
                self.make_live().await?;
                let body = json!({
                    "version": dek.version,
                    "algorithm": dek.algorithm,
                    "encryptedKeyMaterial": dek.encrypted_key_material,
                });
                let written = destination
                    .create_dek(&self.name, self.target, &body)
                    .await?;
                refused(written, |code| self.dek_conflict(dek, Some(code)))?;
                false
            }
            Some(theirs)
                if theirs.text("encryptedKeyMaterial") != dek.encrypted_key_material.as_deref() =>
            {
                return Err(CopyError::Conflict(self.dek_conflict(dek, None)));
            }
            Some(theirs) => theirs.deleted,
        };
        if deleted_there != dek.deleted {
            self.make_live().await?;
            let written = destination
                .set_dek_deleted(&self.name, self.target, key, dek.deleted)
                .await?;
            refused(written, |code| self.dek_conflict(dek, Some(code)))?;
        }
        Ok(())
    }

    fn kek_conflict(&self) -> Conflict {
        Conflict::of_keys(
            self.subject,
            self.target,
            &format!(
                "the destination's KEK {} stands for another KMS key than this registry's KEK {}",
                self.name, self.kek.name
            ),
            "a KEK of the subject's DEKs is held at the destination for another KMS key",
        )
    }

    fn dek_conflict(&self, dek: &Dek, code: Option<i64>) -> Conflict {
        let what = match code {
            None => "holds other encrypted material for".to_string(),
            Some(code) => format!("refused (error {code})"),
        };
        let version = format!("DEK version {} {}", dek.version, dek.algorithm);
        Conflict::of_keys(
            self.subject,
            self.target,
            &format!("the destination {what} {version} under KEK {}", self.name),
            &format!("the destination {what} a DEK version of the subject"),
        )
    }

    fn conflict(&self, what: &str, code: i64) -> Conflict {
        Conflict::of_keys(
            self.subject,
            self.target,
            &format!("the destination {what} {} (error {code})", self.name),
            &format!("the destination {what} of the subject's DEKs (error {code})"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kek() -> Kek {
        Kek {
            name: "k".into(),
            kms_type: "aws-kms".into(),
            kms_key_id: "arn:1".into(),
            kms_props: BTreeMap::from([("region".to_string(), "eu".to_string())]),
            doc: None,
            shared: false,
            ts: 1,
            deleted: false,
        }
    }

    fn held(fields: Value) -> HeldKey {
        HeldKey {
            fields: fields.as_object().cloned().unwrap_or_default(),
            deleted: false,
        }
    }

    #[test]
    fn a_kek_is_the_same_key_by_its_kms_key_and_described_by_props_and_doc() {
        let ours = kek();
        let theirs = held(
            json!({"name": "k", "kmsType": "aws-kms", "kmsKeyId": "arn:1",
            "kmsProps": {"region": "eu"}, "doc": "", "shared": false, "ts": 9}),
        );
        assert!(same_kms_key(&ours, &theirs));
        assert!(same_description(&ours, &theirs), "an empty doc is no doc");
        let other_key = held(json!({"kmsType": "aws-kms", "kmsKeyId": "arn:2"}));
        assert!(!same_kms_key(&ours, &other_key));
        let shared = held(json!({"kmsType": "aws-kms", "kmsKeyId": "arn:1", "shared": true}));
        assert!(!same_kms_key(&ours, &shared));
        let redescribed = held(json!({"kmsType": "aws-kms", "kmsKeyId": "arn:1",
            "kmsProps": {"region": "us"}}));
        assert!(same_kms_key(&ours, &redescribed));
        assert!(!same_description(&ours, &redescribed));
    }

    #[test]
    fn a_snapshot_groups_a_subjects_deks_by_kek() {
        let dek = |kek: &str, subject: &str, version| Dek {
            kek_name: kek.into(),
            subject: subject.into(),
            version,
            algorithm: "AES256_GCM".into(),
            encrypted_key_material: Some("bQ==".into()),
            key_material: None,
            ts: 1,
            deleted: false,
        };
        let mut by_subject = BTreeMap::new();
        by_subject.insert(
            "orders".to_string(),
            vec![
                dek("k", "orders", 1),
                dek("k", "orders", 2),
                dek("gone", "orders", 1),
            ],
        );
        by_subject.insert("other".to_string(), vec![dek("k", "other", 1)]);
        let snapshot = KeySnapshot {
            keks: HashMap::from([("k".to_string(), kek())]),
            by_subject,
        };
        let grouped = snapshot.of("orders");
        assert_eq!(grouped.len(), 1, "a DEK without its KEK is not copied");
        assert_eq!(grouped[0].0.name, "k");
        assert_eq!(grouped[0].1.len(), 2);
        assert!(snapshot.of("nothing").is_empty());
        assert_eq!(snapshot.subjects().count(), 2);
    }
}
