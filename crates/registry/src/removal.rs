//! The hook through which consumer governance may refuse a version that drops fields.
//!
//! The registry only knows which fields a candidate drops compared with the subject's latest
//! live version (a diff of the neutral field trees); whether they may go is decided by a
//! [`RemovalCheck`] installed with [`Registry::set_removal_check`]. Deciding needs evidence
//! from another store (asynchronous), while the registration guard runs synchronously inside
//! the write: so the evidence is gathered just before the write ([`RemovalCheck::prepare`])
//! and the returned [`RemovalVerdict`] runs inside it, on the versions the write really sees.
//! A usage report or a stage change landing between the two is not seen by that verdict;
//! the diff itself cannot race.

use crate::{Registry, RegistryError, RegistryResult};
use covenant_engine::NodeKind;
use covenant_engine::budget::Metered;
use covenant_schema::ParsedSchema;
use covenant_store::StoredVersion;
use covenant_store::governance::normalize_field_path;
use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future, for the object-safe hook below.
pub type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Runs inside the registration's write with the dropped field paths; `Err` holds the
/// readable reasons for refusing.
pub type RemovalVerdict = Box<dyn Fn(&[String]) -> Result<(), String> + Send + Sync>;

/// Decides whether fields may be dropped from a subject.
pub trait RemovalCheck: Send + Sync {
    /// Gathers what deciding about `subject` needs, just before the write.
    fn prepare<'a>(&'a self, subject: &'a str) -> HookFuture<'a, Result<RemovalVerdict, String>>;

    /// Told after `version` of `subject` was written without `fields`.
    fn removed<'a>(
        &'a self,
        subject: &'a str,
        fields: &'a [String],
        version: i64,
    ) -> HookFuture<'a, ()>;
}

/// The field paths of a parsed schema, normalized to dotted names (`customer.id`; Protobuf
/// fields keep their message: `acme.Order.amount`), under the budget `m` proves installed.
pub fn field_paths(m: Metered<'_>, schema: &ParsedSchema) -> BTreeSet<String> {
    covenant_policy::field_tree(m, schema)
        .nodes()
        .into_iter()
        .filter(|n| n.kind == NodeKind::Field)
        .map(|n| normalize_field_path(&n.path))
        .filter(|p| !p.is_empty())
        .collect()
}

/// Fields `old` has and `new` does not, as normalized paths, under the budget `m` proves
/// installed.
pub fn removed_fields(m: Metered<'_>, old: &ParsedSchema, new: &ParsedSchema) -> Vec<String> {
    let kept = field_paths(m, new);
    field_paths(m, old)
        .into_iter()
        .filter(|p| !kept.contains(p))
        .collect()
}

impl Registry {
    /// Installs the check consulted by every registration that drops fields (IMPORT mode
    /// excepted: imports copy history as it was).
    pub fn set_removal_check(&self, check: Arc<dyn RemovalCheck>) {
        if let Ok(mut slot) = self.removal_check.write() {
            *slot = Some(check);
        }
    }

    pub(crate) fn removal_check(&self) -> Option<Arc<dyn RemovalCheck>> {
        self.removal_check.read().ok().and_then(|c| c.clone())
    }

    /// The normalized field paths of the schema with this global id.
    pub async fn schema_field_paths(&self, id: i64) -> RegistryResult<Vec<String>> {
        let record = self.schema_by_id(id).await?;
        let parsed = self.parse_record(&record).await?;
        self.judge_here(|m| field_paths(m, &parsed).into_iter().collect())
            .await
    }

    /// The fields a candidate would drop from the subject's latest live version (empty for a
    /// new subject).
    pub async fn fields_removed_by(
        &self,
        subject: &str,
        request: &crate::SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<Vec<String>> {
        let versions = self.store.subject_versions(subject).await?;
        let Some(latest) = versions.iter().rev().find(|v| !v.deleted) else {
            return Ok(Vec::new());
        };
        let (candidate, _) = self.prepare(subject, request, normalize, true).await?;
        let old = self.parse_record(&latest.schema).await?;
        self.judge_here(|m| removed_fields(m, &old, &candidate))
            .await
    }

    /// The verdict for a candidate, gathered before the write when it drops fields from the
    /// current latest version (the guard asks again if the latest changed meanwhile).
    pub(crate) async fn prepare_removal(
        &self,
        subject: &str,
        versions: &[StoredVersion],
        candidate: &ParsedSchema,
    ) -> RegistryResult<Option<RemovalVerdict>> {
        let Some(check) = self.removal_check() else {
            return Ok(None);
        };
        let Some(latest) = versions.iter().rev().find(|v| !v.deleted) else {
            return Ok(None);
        };
        let old = self.parse_record(&latest.schema).await?;
        if self
            .judge_here(|m| removed_fields(m, &old, candidate))
            .await?
            .is_empty()
        {
            return Ok(None);
        }
        check
            .prepare(subject)
            .await
            .map(Some)
            .map_err(|e| RegistryError::Store(format!("consulting consumer governance: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RegisterOptions, SchemaRequest};
    use covenant_store::SqliteStore;
    use std::sync::Mutex;

    const V1: &str = r#"{"type":"record","name":"Sub","fields":[{"name":"id","type":"string"},{"name":"plan_name","type":"string"},{"name":"plan","type":{"type":"record","name":"Plan","fields":[{"name":"code","type":"string"}]}}]}"#;
    const V2: &str = r#"{"type":"record","name":"Sub","fields":[{"name":"id","type":"string"},{"name":"plan","type":{"type":"record","name":"Plan","fields":[{"name":"code","type":"string"}]}}]}"#;

    /// Refuses dropping `plan_name` until told otherwise; remembers what it was told.
    #[derive(Default)]
    struct Gate {
        allow: Mutex<bool>,
        prepared: Mutex<usize>,
        removed: Mutex<Vec<(String, Vec<String>, i64)>>,
    }

    impl RemovalCheck for Gate {
        fn prepare<'a>(
            &'a self,
            _subject: &'a str,
        ) -> HookFuture<'a, Result<RemovalVerdict, String>> {
            Box::pin(async move {
                *self.prepared.lock().expect("lock") += 1;
                let allow = *self.allow.lock().expect("lock");
                let verdict: RemovalVerdict = Box::new(move |fields: &[String]| {
                    if allow {
                        Ok(())
                    } else {
                        Err(format!(
                            "[recent_usage] someone reads {}",
                            fields.join(", ")
                        ))
                    }
                });
                Ok(verdict)
            })
        }

        fn removed<'a>(
            &'a self,
            subject: &'a str,
            fields: &'a [String],
            version: i64,
        ) -> HookFuture<'a, ()> {
            Box::pin(async move {
                self.removed.lock().expect("lock").push((
                    subject.to_string(),
                    fields.to_vec(),
                    version,
                ));
            })
        }
    }

    fn request(text: &str) -> SchemaRequest {
        SchemaRequest {
            schema: text.to_string(),
            ..SchemaRequest::default()
        }
    }

    #[test]
    fn nested_fields_have_dotted_paths() {
        let parsed =
            crate::parse_schema(covenant_schema::SchemaType::Avro, V1, &[]).expect("parse");
        let paths: Vec<String> = covenant_engine::budget::unlimited(|m| field_paths(m, &parsed))
            .into_iter()
            .collect();
        assert_eq!(paths, vec!["id", "plan", "plan.code", "plan_name"]);
    }

    #[tokio::test]
    async fn a_drop_is_refused_inside_registration_and_reported_after() {
        let dir = tempfile::tempdir().expect("temp dir");
        let registry = Registry::new(Arc::new(SqliteStore::open(dir.path()).expect("store")));
        let gate = Arc::new(Gate::default());
        registry.set_removal_check(gate.clone());
        let options = RegisterOptions {
            force: true,
            ..RegisterOptions::default()
        };
        registry
            .register("s", request(V1), options)
            .await
            .expect("v1");
        assert_eq!(*gate.prepared.lock().expect("lock"), 0, "nothing dropped");
        assert_eq!(
            registry
                .fields_removed_by("s", &request(V2), false)
                .await
                .expect("preview"),
            vec!["plan_name".to_string()]
        );
        // force skips compatibility, never governance.
        let refused = registry.register("s", request(V2), options).await;
        match refused {
            Err(RegistryError::RemovalBlocked { subject, blockers }) => {
                assert_eq!(subject, "s");
                assert!(blockers.contains("someone reads plan_name"), "{blockers}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(gate.removed.lock().expect("lock").is_empty());
        *gate.allow.lock().expect("lock") = true;
        let v2 = registry
            .register("s", request(V2), options)
            .await
            .expect("v2");
        assert_eq!(
            *gate.removed.lock().expect("lock"),
            vec![("s".to_string(), vec!["plan_name".to_string()], v2.version)]
        );
    }
}
