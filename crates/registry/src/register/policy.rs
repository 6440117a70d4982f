//! The registration's policy step: everything the verdict needs besides the snapshot,
//! gathered before judging. Under the effective config's level (unless IMPORT mode, `force` or
//! NONE skip the check): the evolution policy with its settings, stored samples and usage
//! evidence ([`crate::evolution`]; for a subject with no version, only the settings), the
//! approvals on record for this exact candidate ([`crate::approvals`]); outside IMPORT mode,
//! the removal gate's evidence ([`crate::removal`]); and the parsed versions the verdict
//! compares with.

use super::judge::Judged;
use super::snapshot::Snapshot;
use crate::evolution::{Evidence, Evolution};
use crate::{Registry, RegistryResult, SchemaRequest};
use covenant_engine::{InfoFindings, Level};
use covenant_schema::ParsedSchema;
use covenant_store::{NewSchema, StoredVersion};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The candidate as the verdict judges it.
pub(crate) struct Candidate<'a> {
    pub request: &'a SchemaRequest,
    pub parsed: ParsedSchema,
    pub schema: &'a NewSchema,
    pub explicit_version: Option<i64>,
    /// `force=true`: no compatibility check.
    pub force: bool,
}

impl Registry {
    /// What the verdict on `candidate` following `snapshot` depends on, owned so that it can
    /// be judged on a blocking thread.
    pub(crate) async fn policy(
        &self,
        subject: &str,
        snapshot: &Snapshot,
        candidate: Candidate<'_>,
    ) -> RegistryResult<Judged> {
        let mode = snapshot.mode;
        let config = &snapshot.config;
        let run_check = !mode.is_import() && !candidate.force && config.level != Level::None;
        let evolution = match run_check {
            true => Some(
                self.registration_evolution(subject, snapshot, &candidate)
                    .await?,
            ),
            false => None,
        };
        // Accepted risk on record for this exact candidate (see approvals.rs).
        let approvals = if run_check && !snapshot.versions.is_empty() {
            self.live_approvals(subject, candidate.schema).await?
        } else {
            Vec::new()
        };
        // Consumer governance: may the fields this candidate drops go? (see removal.rs)
        let removal = if mode.is_import() {
            None
        } else {
            self.prepare_removal(subject, &snapshot.versions, &candidate.parsed)
                .await?
        };
        let prepared = self.priors(snapshot, run_check).await?;
        let in_place =
            prepared.is_empty() && crate::check_budget::fits_in_place(&candidate.schema.schema);
        Ok(Judged {
            subject: subject.to_string(),
            mode,
            level: config.level,
            group: config
                .extra
                .get("compatibilityGroup")
                .and_then(Value::as_str)
                .map(str::to_string),
            explicit_version: candidate.explicit_version,
            evolution,
            approvals,
            removal,
            removal_enabled: self.removal_check().is_some(),
            candidate: candidate.parsed,
            metadata: candidate.schema.metadata.clone(),
            versions: snapshot.versions.clone(),
            prepared,
            check_budget: self.check_budget,
            in_place,
        })
    }

    /// The evolution policy a registration is judged under: the subject's settings, its
    /// evidence (none before its first version), the samples sent with the candidate, and
    /// only the errors of the verdict kept.
    async fn registration_evolution(
        &self,
        subject: &str,
        snapshot: &Snapshot,
        candidate: &Candidate<'_>,
    ) -> RegistryResult<Evolution> {
        let evidence = if snapshot.versions.is_empty() {
            Evidence::NoHistory
        } else {
            Evidence::Read
        };
        let metadata = candidate.schema.metadata.as_ref();
        let mut evolution = self
            .evolution_with(subject, &snapshot.settings, metadata, evidence)
            .await?;
        evolution.candidate_samples = candidate.request.samples.clone();
        evolution.context.encryption = Some(covenant_policy::Encryption::of_rule_set(
            candidate.schema.rule_set.as_ref(),
        ));
        // A registration keeps only the errors of its verdict.
        evolution.options.info_findings = InfoFindings::Skipped;
        Ok(evolution)
    }

    /// The parsed live versions the verdict compares with, by schema id: all of them when the
    /// check runs, else the latest alone when the removal gate needs it.
    async fn priors(
        &self,
        snapshot: &Snapshot,
        run_check: bool,
    ) -> RegistryResult<HashMap<i64, Arc<ParsedSchema>>> {
        let mut prepared = HashMap::new();
        if run_check || (!snapshot.mode.is_import() && self.removal_check().is_some()) {
            let mut live = snapshot.versions.iter().filter(|v| !v.deleted);
            let wanted: Vec<&StoredVersion> = if run_check {
                live.collect()
            } else {
                live.next_back().into_iter().collect()
            };
            for v in wanted {
                prepared.insert(v.schema.id, self.parse_record(&v.schema).await?);
            }
        }
        Ok(prepared)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RegisterOptions;

    fn avro_record(fields: usize) -> String {
        let fields: Vec<String> = (0..fields)
            .map(|i| format!(r#"{{"name":"f{i}","type":"long","default":0}}"#))
            .collect();
        format!(
            r#"{{"type":"record","name":"R","fields":[{}]}}"#,
            fields.join(",")
        )
    }

    async fn judged(reg: &Registry, subject: &str, schema: String) -> Judged {
        let request = SchemaRequest {
            schema,
            ..SchemaRequest::default()
        };
        let snapshot = reg.snapshot(subject, false, None).await.expect("snapshot");
        let (parsed, schema) = reg
            .prepare(subject, &request, false, false)
            .await
            .expect("prepare");
        let candidate = Candidate {
            request: &request,
            parsed,
            schema: &schema,
            explicit_version: None,
            force: false,
        };
        reg.policy(subject, &snapshot, candidate)
            .await
            .expect("policy")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_small_candidates_without_priors_are_judged_in_place() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = covenant_store::SqliteStore::open(dir.path()).expect("store");
        let reg = Registry::new(Arc::new(store));
        let small = avro_record(3);
        let large = avro_record(600);
        assert!(small.len() <= crate::check_budget::IN_PLACE_SCHEMA_BYTES);
        assert!(large.len() > crate::check_budget::IN_PLACE_SCHEMA_BYTES);
        assert!(judged(&reg, "s", small.clone()).await.in_place);
        assert!(!judged(&reg, "s", large).await.in_place);
        let request = SchemaRequest {
            schema: small,
            ..SchemaRequest::default()
        };
        reg.register("s", request, RegisterOptions::default())
            .await
            .expect("register");
        assert!(
            !judged(&reg, "s", avro_record(4)).await.in_place,
            "a version to be read against is judged off the workers"
        );
    }
}
