//! `POST /subjects/{s}/versions` and its dry run.

use crate::answers::{Answer, RequestKey, Route};
use crate::contract::validate_rule_set;
use crate::error::GuardRefusal;
use crate::evolution::Evidence;
use crate::identity::{content_key, identity_key, same_identity, stored_text};
use crate::judged::{Attempt, Judged, retry_pause, same_versions};
use crate::parsing::{parse_schema_with, parse_type};
use crate::{
    AcceptedRisk, AuditContext, Contract, RegisterOptions, Registration, Registry, RegistryError,
    RegistryResult, SchemaRequest, SubjectUse, WouldRegister, check_budget, validate_subject,
};
use covenant_engine::{InfoFindings, Level};
use covenant_schema::ParsedSchema;
use covenant_store::{
    Dedupe, NewSchema, Placement, Rejection, SchemaRecord, StoreError, StoredVersion,
};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// How often a registration is judged again when a concurrent write changed the subject (or
/// its config or mode) between the snapshot it was judged on and the commit.
pub(crate) const REGISTER_ATTEMPTS: usize = 12;

/// Whether a registration round writes what it judged ([`Registry::judge_registration`]
/// judges only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Commit {
    Yes,
    No,
}

impl Registry {
    /// A candidate parsed with its references, its stored text and identity.
    pub(crate) async fn prepare(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        allow_deleted_refs: bool,
    ) -> RegistryResult<(ParsedSchema, NewSchema)> {
        let schema_type = parse_type(request.schema_type.as_deref())?;
        let (references, resolved) = self
            .resolve_references(&request.references, subject, allow_deleted_refs)
            .await?;
        let metadata = request.metadata.clone().filter(|m| !m.is_null());
        let rule_set = request.rule_set.clone().filter(|r| !r.is_null());
        let ty = schema_type.as_str();
        // Parsing a large schema takes a while: off the async workers, so that other requests
        // (and the shutdown signal) are served meanwhile.
        let (parsed, text, key) = check_budget::off_workers(|| -> RegistryResult<_> {
            let parsed =
                parse_schema_with(schema_type, &request.schema, &resolved, &self.schema_limits)?;
            let (text, avro_json) = stored_text(schema_type, &request.schema, &parsed, normalize);
            let key = match (&avro_json, &parsed) {
                (Some(json), _) => {
                    let identity = covenant_avro::identity_of(json);
                    identity_key(ty, &identity, &references, &metadata, &rule_set)
                }
                (None, ParsedSchema::Protobuf(p)) => {
                    identity_key(ty, &p.canonical_text(), &references, &metadata, &rule_set)
                }
                (None, _) => content_key(ty, &text, &references, &metadata, &rule_set),
            };
            Ok((parsed, text, key))
        })?;
        Ok((
            parsed,
            NewSchema {
                schema_type: schema_type.as_str().to_string(),
                schema: text,
                references,
                metadata,
                rule_set,
                content_key: key,
            },
        ))
    }

    /// `POST /subjects/{s}/versions`, following Confluent's registration algorithm.
    ///
    /// The candidate is judged outside the store's write lock against a snapshot of the
    /// subject, so a slow check never delays other subjects' writes; the store then commits
    /// only if the subject's versions are still exactly the snapshot, and config and mode were
    /// still the judged ones just before the commit. Otherwise the whole registration is
    /// judged again, a bounded number of times (optimistic concurrency).
    pub async fn register(
        &self,
        subject: &str,
        request: SchemaRequest,
        options: RegisterOptions<'_>,
    ) -> RegistryResult<Registration> {
        // Registrations of one subject on this node take turns: each would invalidate the
        // others' verdicts anyway. Other subjects never wait for this.
        let _turn = self.registering.turn(subject).await;
        let route = Route::Register {
            normalize: options.normalize,
        };
        let key = RequestKey::of(route, subject, &request);
        for attempt in 1..=REGISTER_ATTEMPTS {
            if let Attempt::Done(registration) = self
                .register_attempt(subject, request.clone(), options, key, Commit::Yes)
                .await?
            {
                return Ok(registration);
            }
            tracing::debug!(
                subject,
                attempt,
                "subject changed while judging; judging again"
            );
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "registering schema: the subject kept changing".into(),
        ))
    }

    /// What `POST /subjects/{s}/versions` would do with `request`, judged by the very steps a
    /// registration takes (modes, data contracts, the verdict with approvals, the removal
    /// gate) without writing anything: the same refusal a registration would meet, or what it
    /// would register. Needs only the right to read the subject.
    pub async fn judge_registration(
        &self,
        subject: &str,
        request: SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<WouldRegister> {
        let options = RegisterOptions {
            normalize,
            force: false,
            audit: None,
        };
        for attempt in 1..=REGISTER_ATTEMPTS {
            if let Attempt::Judged(would) = self
                .register_attempt(subject, request.clone(), options, None, Commit::No)
                .await?
            {
                return Ok(would);
            }
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "judging a registration: the subject kept changing".into(),
        ))
    }

    /// One judge-then-commit round of [`Registry::register`] (with [`Commit::No`], of
    /// [`Registry::judge_registration`]: judged, never written).
    pub(crate) async fn register_attempt(
        &self,
        subject: &str,
        mut request: SchemaRequest,
        options: RegisterOptions<'_>,
        key: Option<RequestKey>,
        commit: Commit,
    ) -> RegistryResult<Attempt> {
        validate_subject(subject, SubjectUse::Schemas)?;
        validate_rule_set(&request.rule_set)?;
        let epoch = self.answers.epoch();
        let config = self.effective_config(subject).await?;
        let normalize = options.normalize
            || config
                .extra
                .get("normalize")
                .and_then(Value::as_bool)
                .unwrap_or(false);
        let mode = self.effective_mode(subject).await?;
        let versions = Arc::new(self.store.subject_versions(subject).await?);
        let latest_live = versions.iter().rev().find(|v| !v.deleted);

        if !mode.is_import() {
            if request.schema.trim().is_empty()
                && let Some(latest) = latest_live
            {
                request.schema = latest.schema.schema.clone();
                request.schema_type = Some(latest.schema.schema_type.clone());
                request.references = latest.schema.references.clone();
            }
            if let Some(latest) = latest_live {
                if request.metadata.is_none() {
                    request.metadata = latest.schema.metadata.clone();
                }
                if request.rule_set.is_none() {
                    request.rule_set = latest.schema.rule_set.clone();
                }
            }
            // Data contracts from config: merge(merge(default, specific), override).
            let contract = Contract::from_extra(&config.extra);
            if !contract.is_empty() {
                request.metadata = contract.metadata(request.metadata.take());
                request.rule_set = contract.rule_set(request.rule_set.take());
                validate_rule_set(&request.rule_set)?;
            }
        }
        let (candidate, new_schema) = self.prepare(subject, &request, normalize, false).await?;
        self.check_candidate_samples(&candidate, &request.samples)?;

        let (dedupe, explicit_version) = match request.version {
            None | Some(0) => (Dedupe::AnyLive, None),
            Some(-1) => (Dedupe::LatestOnly, None),
            Some(v) if v > 0 && v <= i64::from(i32::MAX) => (Dedupe::Never, Some(v)),
            Some(v) => return Err(RegistryError::InvalidVersion(v.to_string())),
        };

        // Fast path: an existing live version is returned without mode or compatibility checks.
        let mut existing = match dedupe {
            Dedupe::AnyLive => versions
                .iter()
                .find(|v| !v.deleted && same_identity(&v.schema, &new_schema.content_key)),
            Dedupe::LatestOnly => {
                latest_live.filter(|v| same_identity(&v.schema, &new_schema.content_key))
            }
            Dedupe::Never => None,
        };
        if existing.is_none() {
            let candidates: Vec<&StoredVersion> = match dedupe {
                Dedupe::AnyLive => versions.iter().filter(|v| !v.deleted).collect(),
                Dedupe::LatestOnly => latest_live.into_iter().collect(),
                Dedupe::Never => Vec::new(),
            };
            existing = self.same_protobuf(candidates, &new_schema).await;
        }
        if let Some(v) = existing {
            if commit == Commit::No {
                return Ok(Attempt::Judged(WouldRegister {
                    existing_version: Some(v.version),
                    removes: Vec::new(),
                    approvals: Vec::new(),
                }));
            }
            let schema = Arc::new(v.schema.clone());
            self.remember(schema.clone());
            if let Some(key) = key {
                self.answers
                    .insert(epoch, subject, key, Answer::of(v, schema.clone()));
            }
            return Ok(Attempt::Done(Registration {
                id: v.schema.id,
                version: v.version,
                schema,
                created: false,
                approvals: Vec::new(),
            }));
        }

        if mode.is_read_only() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is in read-only mode",
                covenant_store::context::context_of(subject)
            )));
        }
        if request.id.is_some() && !mode.is_import() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is not in import mode",
                covenant_store::context::context_of(subject)
            )));
        }
        // A subject in IMPORT mode takes only versions with the ids they were given (an
        // exporter's, a migration's): an id drawn here would diverge from the source's.
        if request.id.is_none() && mode.is_import() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is not in read-write mode",
                covenant_store::context::context_of(subject)
            )));
        }
        if let Some(id) = request.id
            && !(1..=i64::from(i32::MAX)).contains(&id)
        {
            return Err(RegistryError::InvalidSchema(format!(
                "Invalid schema id {id}"
            )));
        }

        let run_check = !mode.is_import() && !options.force && config.level != Level::None;
        let placement = Placement {
            id: request.id,
            version: if mode.is_import() {
                explicit_version
            } else {
                None
            },
            dedupe: if mode.is_import() && explicit_version.is_some() {
                Dedupe::Never
            } else {
                dedupe
            },
        };

        let evolution = if run_check {
            let evidence = if versions.is_empty() {
                Evidence::NoHistory
            } else {
                Evidence::Read
            };
            let mut evolution = self
                .evolution_with(
                    subject,
                    &config.extra,
                    new_schema.metadata.as_ref(),
                    evidence,
                )
                .await?;
            evolution.candidate_samples = request.samples.clone();
            // A registration keeps only the errors of its verdict.
            evolution.options.info_findings = InfoFindings::Skipped;
            Some(evolution)
        } else {
            None
        };
        // Accepted risk on record for this exact candidate (see approvals.rs).
        let approvals = if run_check && !versions.is_empty() {
            self.live_approvals(subject, &new_schema).await?
        } else {
            Vec::new()
        };
        // Consumer governance: may the fields this candidate drops go? (see removal.rs)
        let removal = if mode.is_import() {
            None
        } else {
            self.prepare_removal(subject, &versions, &candidate).await?
        };
        let mut prepared: HashMap<i64, Arc<ParsedSchema>> = HashMap::new();
        if run_check || (!mode.is_import() && self.removal_check().is_some()) {
            let mut live = versions.iter().filter(|v| !v.deleted);
            let wanted: Vec<&StoredVersion> = if run_check {
                live.collect()
            } else {
                live.next_back().into_iter().collect()
            };
            for v in wanted {
                prepared.insert(v.schema.id, self.parse_record(&v.schema).await?);
            }
        }
        let judged = Judged {
            subject: subject.to_string(),
            mode,
            level: config.level,
            group: config
                .extra
                .get("compatibilityGroup")
                .and_then(Value::as_str)
                .map(str::to_string),
            explicit_version,
            evolution,
            approvals,
            removal,
            removal_enabled: self.removal_check().is_some(),
            candidate,
            metadata: new_schema.metadata.clone(),
            versions: versions.clone(),
            prepared,
            check_budget: self.check_budget,
        };
        // The expensive part: outside the store's write lock and off the async workers.
        let (dropped, accepted) = match self.off_runtime(move || judged.verdict()).await? {
            Ok(passed) => passed,
            Err(GuardRefusal::Domain(e)) => return Err(e),
            Err(GuardRefusal::Retry) => return Ok(Attempt::Retry),
        };
        if commit == Commit::No {
            return Ok(Attempt::Judged(WouldRegister {
                existing_version: None,
                removes: dropped,
                approvals: accepted,
            }));
        }
        if self.effective_config(subject).await? != config
            || self.effective_mode(subject).await? != mode
        {
            return Ok(Attempt::Retry);
        }
        let unchanged = |now: &[StoredVersion]| -> Result<(), Rejection> {
            if same_versions(now, &versions) {
                Ok(())
            } else {
                Err(Rejection::new(GuardRefusal::Retry))
            }
        };
        let before_commit = self.answers.epoch();
        // The registration's audit entry names the approvals it used.
        let approved_audit = options.audit.filter(|_| !accepted.is_empty()).map(|c| {
            let lines: Vec<String> = accepted.iter().map(AcceptedRisk::describe).collect();
            AuditContext {
                detail: Some(format!("accepted risk: {}", lines.join("; "))),
                ..c.clone()
            }
        });
        let audit = approved_audit.as_ref().or(options.audit);
        let outcome = match self
            .store
            .register(subject, &new_schema, placement, &unchanged, audit)
            .await
        {
            Ok(r) => r,
            Err(StoreError::Rejected(_)) => return Ok(Attempt::Retry),
            Err(StoreError::IdConflict { id }) => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Overwrite new schema with id {} in context {} is not permitted.",
                    covenant_store::context::public_id(id),
                    covenant_store::context::context_of(subject)
                )));
            }
            Err(StoreError::NoSuchVersion { subject, version }) => {
                // A referenced version was deleted after the references were resolved.
                return Err(RegistryError::InvalidSchema(format!(
                    "No schema reference found for subject \"{subject}\" and version {version}"
                )));
            }
            Err(StoreError::VersionExists { version, .. }) => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Overwrite new schema for subject {subject} version {version} in context {} is not permitted.",
                    covenant_store::context::context_of(subject)
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let schema = Arc::new(SchemaRecord {
            id: outcome.id,
            schema_type: new_schema.schema_type.clone(),
            schema: new_schema.schema.clone(),
            references: new_schema.references.clone(),
            metadata: new_schema.metadata.clone(),
            rule_set: new_schema.rule_set.clone(),
            content_key: new_schema.content_key.clone(),
        });
        // An id shared with an earlier registration answers with that schema as stored.
        let schema = match outcome.schema_created {
            true => schema,
            false => match self.store.schema_by_id(outcome.id).await? {
                Some(stored) => Arc::new(stored),
                None => schema,
            },
        };
        self.remember(schema.clone());
        self.answer_registered(subject, key, before_commit, &outcome, &schema);
        if outcome.created
            && !dropped.is_empty()
            && let Some(check) = self.removal_check()
        {
            check.removed(subject, &dropped, outcome.version).await;
        }
        if outcome.created {
            tracing::info!(
                subject,
                id = outcome.id,
                version = outcome.version,
                "registered schema"
            );
        }
        Ok(Attempt::Done(Registration {
            id: outcome.id,
            version: outcome.version,
            schema,
            created: outcome.created,
            approvals: if outcome.created {
                accepted
            } else {
                Vec::new()
            },
        }))
    }

    /// Forgets the subject's cached answers after a registration wrote a version, then keeps
    /// this one's, unless anything else was invalidated since `before_commit` (see [`answers`]).
    pub(crate) fn answer_registered(
        &self,
        subject: &str,
        key: Option<RequestKey>,
        before_commit: u64,
        outcome: &covenant_store::Registered,
        schema: &Arc<SchemaRecord>,
    ) {
        // A write forgets the subject's answers; a version found in the store changed nothing.
        let (epoch, expected) = if outcome.created {
            (self.answers.forget_subject(subject), before_commit + 1)
        } else {
            (before_commit, before_commit)
        };
        if let Some(key) = key
            && epoch == expected
        {
            // Registration answers carry no time.
            let answer = Answer::new(outcome.version, false, 0, schema.clone());
            self.answers.insert(epoch, subject, key, answer);
        }
    }
}
