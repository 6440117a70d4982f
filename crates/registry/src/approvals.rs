//! Accepted risk: approvals that let one exact candidate through findings that would refuse it.
//!
//! A principal holding `Approve` on a subject accepts the error findings of one rule (at one
//! path, when given) for one candidate schema, named by its fingerprint. The approvals live
//! in the governance store; the registry reads the live ones for a candidate through an
//! [`ApprovalSource`] installed with [`Registry::set_approval_source`], just before judging,
//! and the verdict (`register/judge.rs`) turns the matching error findings into accepted
//! ones. Any error left refuses the registration as before; when none is left the
//! registration goes through and names the approvals it used in its answer and in its audit
//! entry.

use crate::removal::HookFuture;
use crate::{Registry, RegistryError, RegistryResult, SchemaRequest};
use covenant_engine::{Finding, Severity};
use covenant_store::NewSchema;
use covenant_store::governance::normalize_field_path;
use serde::Serialize;
use std::sync::Arc;

/// One live approval as the verdict uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AcceptedRisk {
    pub id: i64,
    pub rule: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub approver: String,
    pub reason: String,
    #[serde(rename = "expiresAt", skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
}

impl AcceptedRisk {
    /// Whether this approval accepts `finding` (an error of its rule, at its path if it names one).
    pub fn accepts(&self, finding: &Finding) -> bool {
        if finding.rule != self.rule.as_str() {
            return false;
        }
        let Some(path) = &self.path else {
            return true;
        };
        let trimmed = |p: &str| p.trim_end_matches('/').to_string();
        trimmed(path) == trimmed(&finding.path)
            || normalize_field_path(path) == normalize_field_path(&finding.path)
    }

    /// The approval as one line of an audit entry.
    pub fn describe(&self) -> String {
        let path = self
            .path
            .as_deref()
            .map(|p| format!(" at '{p}'"))
            .unwrap_or_default();
        format!(
            "approval #{} ({}{}) by {}: {}",
            self.id, self.rule, path, self.approver, self.reason
        )
    }
}

/// Where the live approvals of a candidate come from (the governance store).
pub trait ApprovalSource: Send + Sync {
    /// The approvals of `subject` for the candidate with `fingerprint` that count now: not
    /// revoked, not expired.
    fn live_approvals<'a>(
        &'a self,
        subject: &'a str,
        fingerprint: &'a str,
    ) -> HookFuture<'a, Result<Vec<AcceptedRisk>, String>>;
}

/// The fingerprint an approval names its candidate by: the registry's identity key of the
/// schema as it is stored (type, text, references), without metadata or rule set, so the same
/// schema sent by a producer that carries no metadata matches.
pub fn approval_fingerprint(schema: &NewSchema) -> String {
    crate::content_key(
        &schema.schema_type,
        &schema.schema,
        &schema.references,
        &None,
        &None,
    )
}

/// Splits `errors` into those no approval accepts and the approvals that accepted some (each
/// once, in the order given).
pub fn accept(errors: &[Finding], approvals: &[AcceptedRisk]) -> (Vec<Finding>, Vec<AcceptedRisk>) {
    let mut left = Vec::new();
    let mut used: Vec<AcceptedRisk> = Vec::new();
    for finding in errors.iter().filter(|f| f.severity == Severity::Error) {
        match approvals.iter().find(|a| a.accepts(finding)) {
            Some(approval) => {
                if !used.iter().any(|u| u.id == approval.id) {
                    used.push(approval.clone());
                }
            }
            None => left.push(finding.clone()),
        }
    }
    (left, used)
}

impl Registry {
    /// Installs where registrations read the approvals of their candidate.
    pub fn set_approval_source(&self, source: Arc<dyn ApprovalSource>) {
        if let Ok(mut slot) = self.approval_source.write() {
            *slot = Some(source);
        }
    }

    pub(crate) fn approval_source(&self) -> Option<Arc<dyn ApprovalSource>> {
        self.approval_source.read().ok().and_then(|s| s.clone())
    }

    /// The fingerprint and schema type of a candidate for `subject`, as a registration of it
    /// would compute them (the subject's `normalize` config applies).
    pub async fn candidate_fingerprint(
        &self,
        subject: &str,
        request: &SchemaRequest,
    ) -> RegistryResult<(String, String)> {
        let config = self.effective_config(subject).await?;
        let normalize = config.normalizes(false);
        let (_, schema) = self.prepare(subject, request, normalize, false).await?;
        Ok((approval_fingerprint(&schema), schema.schema_type))
    }

    /// The live approvals for a candidate, or none without a source.
    pub(crate) async fn live_approvals(
        &self,
        subject: &str,
        schema: &NewSchema,
    ) -> RegistryResult<Vec<AcceptedRisk>> {
        let Some(source) = self.approval_source() else {
            return Ok(Vec::new());
        };
        source
            .live_approvals(subject, &approval_fingerprint(schema))
            .await
            .map_err(|e| RegistryError::Store(format!("reading approvals: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AuditContext, RegisterOptions};
    use covenant_store::SqliteStore;
    use std::sync::Mutex;

    /// Approvals held in memory: (fingerprint, approval).
    #[derive(Default)]
    struct Held(Mutex<Vec<(String, AcceptedRisk)>>);

    impl ApprovalSource for Held {
        fn live_approvals<'a>(
            &'a self,
            _subject: &'a str,
            fingerprint: &'a str,
        ) -> HookFuture<'a, Result<Vec<AcceptedRisk>, String>> {
            Box::pin(async move {
                Ok(self
                    .0
                    .lock()
                    .expect("lock")
                    .iter()
                    .filter(|(f, _)| f == fingerprint)
                    .map(|(_, a)| a.clone())
                    .collect())
            })
        }
    }

    fn request(fields: &str) -> SchemaRequest {
        SchemaRequest {
            schema: format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#),
            ..SchemaRequest::default()
        }
    }

    /// A refused candidate goes through once an approval for exactly it accepts each of its
    /// errors; the answer and the registration's audit entry name the approval. Approvals for
    /// another candidate or another rule do not count.
    #[tokio::test]
    async fn an_approval_lets_exactly_its_candidate_through_on_record() {
        let dir = tempfile::tempdir().expect("temp dir");
        let registry = Registry::new(Arc::new(SqliteStore::open(dir.path()).expect("store")));
        let held = Arc::new(Held::default());
        registry.set_approval_source(held.clone());
        let ctx = AuditContext {
            principal: "producer".into(),
            source: None,
            request_id: None,
            detail: None,
        };
        let options = RegisterOptions {
            audit: Some(&ctx),
            ..RegisterOptions::default()
        };
        registry
            .register("s", request(r#"{"name":"a","type":"int"}"#), options)
            .await
            .expect("v1");
        // A field without a default: not BACKWARD compatible.
        let candidate = request(r#"{"name":"a","type":"int"},{"name":"b","type":"int"}"#);
        let other = request(r#"{"name":"a","type":"int"},{"name":"c","type":"int"}"#);
        let refused = registry.register("s", candidate.clone(), options).await;
        let Err(RegistryError::Incompatible { findings, .. }) = &refused else {
            panic!("expected a refusal, got {refused:?}");
        };
        let rule = findings[0].rule.to_string();
        let message = refused.as_ref().expect_err("refused").to_string();
        assert!(
            message.contains("Ways forward: make the change each hint describes")
                && message.contains("holding the Approve operation on subject \"s\""),
            "{message}"
        );
        let (fingerprint, schema_type) = registry
            .candidate_fingerprint("s", &candidate)
            .await
            .expect("fingerprint");
        assert_eq!(schema_type, "AVRO");
        let (other_fingerprint, _) = registry
            .candidate_fingerprint("s", &other)
            .await
            .expect("fingerprint");
        assert_ne!(fingerprint, other_fingerprint);
        let approval = |id: i64, rule: &str| AcceptedRisk {
            id,
            rule: rule.to_string(),
            path: None,
            approver: "risk-office".to_string(),
            reason: "old readers are retired".to_string(),
            expires_at: None,
        };
        held.0.lock().expect("lock").extend([
            (other_fingerprint, approval(1, &rule)),
            (fingerprint.clone(), approval(2, "LIKELY_RENAME")),
        ]);
        assert!(matches!(
            registry.register("s", candidate.clone(), options).await,
            Err(RegistryError::Incompatible { .. })
        ));
        held.0
            .lock()
            .expect("lock")
            .push((fingerprint, approval(3, &rule)));
        let registered = registry
            .register("s", candidate, options)
            .await
            .expect("approved");
        assert_eq!((registered.version, registered.created), (2, true));
        assert_eq!(registered.approvals, vec![approval(3, &rule)]);
        let trail = registry
            .store()
            .audit_entries(&covenant_store::AuditQuery {
                limit: 10,
                ..Default::default()
            })
            .await
            .expect("trail");
        let last = trail.last().expect("entries");
        assert_eq!(
            (last.operation.as_str(), last.version),
            ("register", Some(2))
        );
        assert_eq!(
            last.detail.as_deref(),
            Some(
                format!(
                    "accepted risk: approval #3 ({rule}) by risk-office: old readers are retired"
                )
                .as_str()
            )
        );
        // The other candidate is still refused.
        assert!(matches!(
            registry.register("s", other, options).await,
            Err(RegistryError::Incompatible { .. })
        ));
    }

    fn finding(rule: &'static str, path: &str) -> Finding {
        Finding {
            rule: rule.into(),
            severity: Severity::Error,
            path: path.to_string(),
            message: "message".to_string(),
            hint: "hint".into(),
            version: None,
        }
    }

    fn approval(id: i64, rule: &str, path: Option<&str>) -> AcceptedRisk {
        AcceptedRisk {
            id,
            rule: rule.to_string(),
            path: path.map(str::to_string),
            approver: "risk-office".to_string(),
            reason: "accepted".to_string(),
            expires_at: None,
        }
    }

    #[test]
    fn an_approval_accepts_its_rule_at_its_path_only() {
        let rename = finding("LIKELY_RENAME", "/fields/plan_nmae");
        let identity = finding("LIKELY_IDENTITY_CHANGED", "/fields/plan_nmae");
        assert!(approval(1, "LIKELY_RENAME", None).accepts(&rename));
        assert!(approval(1, "LIKELY_RENAME", Some("/fields/plan_nmae")).accepts(&rename));
        assert!(approval(1, "LIKELY_RENAME", Some("plan_nmae")).accepts(&rename));
        assert!(!approval(1, "LIKELY_RENAME", Some("/fields/other")).accepts(&rename));
        assert!(!approval(1, "LIKELY_RENAME", None).accepts(&identity));
    }

    #[test]
    fn what_no_approval_accepts_still_refuses() {
        let errors = vec![
            finding("LIKELY_RENAME", "/fields/a"),
            finding("LIKELY_RENAME", "/fields/b"),
            finding("TYPE_CHANGED", "/fields/c"),
        ];
        let approvals = vec![approval(7, "LIKELY_RENAME", None)];
        let (left, used) = accept(&errors, &approvals);
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].rule, "TYPE_CHANGED");
        assert_eq!(used, approvals, "used once though it accepted two findings");
        let (left, used) = accept(&errors[..2], &approvals);
        assert!(left.is_empty());
        assert_eq!(used.len(), 1);
        assert_eq!(
            used[0].describe(),
            "approval #7 (LIKELY_RENAME) by risk-office: accepted"
        );
    }
}
