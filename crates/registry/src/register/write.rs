//! The registration's write step: the commit, guarded by the snapshot. Config and mode must
//! still be the judged ones: read again from memory just before, where this process is the
//! store's only writer; read by the store inside its write transaction otherwise
//! (`Store::register_checked`, on PostgreSQL under the subject's lock and with no round trip of
//! its own). Inside that transaction the subject's versions must still be exactly the
//! snapshot's ([`same_versions`]). Either change sends the registration back to judge again.
//! The store assigns the id (the existing one if the same schema is known under any subject)
//! and the version, and appends the audit entry, which names the approvals the verdict used,
//! in the same transaction.

use super::judge::same_versions;
use super::snapshot::Snapshot;
use crate::config::ChainSettings;
use crate::error::GuardRefusal;
use crate::{
    AcceptedRisk, AuditContext, ConfigView, Mode, Registry, RegistryError, RegistryResult,
};
use covenant_engine::Level;
use covenant_store::context::{context_of, public_id};
use covenant_store::{
    Audit, NewSchema, Placement, Registered, Rejection, Settings, SettingsCheck, SharedGuard,
    StoreError, StoredVersion,
};
use std::sync::Arc;

/// A committed registration.
pub(crate) struct Written {
    pub outcome: Registered,
    /// The answers cache's epoch just before the commit.
    pub before_commit: u64,
}

impl Registry {
    /// Commits `schema` under `subject` if the subject is still `snapshot`; `None` when it is
    /// not (judge again).
    pub(crate) async fn write(
        &self,
        subject: &str,
        snapshot: &Snapshot,
        schema: &NewSchema,
        placement: Placement,
        audit: Audit<'_>,
        approvals: &[AcceptedRisk],
    ) -> RegistryResult<Option<Written>> {
        let judged = Arc::clone(&snapshot.versions);
        let unchanged: SharedGuard = Arc::new(move |now: &[StoredVersion]| {
            if same_versions(now, &judged) {
                Ok(())
            } else {
                Err(Rejection::new(GuardRefusal::Retry))
            }
        });
        let before_commit = self.answers.epoch();
        let approved_audit = naming_approvals(audit, approvals);
        let audit = approved_audit.as_ref().or(audit);
        let written = if self.store.only_writer() {
            // The rows are in memory, and only this process changes them.
            let now = self.chain_settings(Some(subject)).await?;
            if !JudgedSettings::of(self, snapshot).hold_in(&now) {
                return Ok(None);
            }
            self.store
                .register_shared(subject, schema, placement, unchanged, audit)
                .await
        } else {
            let settings = self.settings_check(snapshot);
            self.store
                .register_checked(subject, schema, placement, unchanged, settings, audit)
                .await
        };
        match written {
            Ok(outcome) => {
                self.known_subjects.seen(subject);
                Ok(Some(Written {
                    outcome,
                    before_commit,
                }))
            }
            Err(StoreError::Rejected(_)) => Ok(None),
            Err(e) => Err(refusal(subject, e)),
        }
    }
}

/// The config and mode a snapshot was judged under, and the level that applies where no
/// scope sets one.
struct JudgedSettings {
    config: ConfigView,
    mode: Mode,
    default_level: Level,
}

impl JudgedSettings {
    fn of(registry: &Registry, snapshot: &Snapshot) -> JudgedSettings {
        JudgedSettings {
            config: snapshot.config.clone(),
            mode: snapshot.mode,
            default_level: registry.default_level,
        }
    }

    /// Whether `now` gives the judged config and mode.
    fn hold_in(&self, now: &ChainSettings) -> bool {
        now.config(self.default_level) == self.config
            && now.mode().is_ok_and(|mode| mode == self.mode)
    }
}

impl Registry {
    /// The check the store runs on the snapshot's scopes when it writes: their rows read then
    /// must give the judged config and mode.
    fn settings_check(&self, snapshot: &Snapshot) -> SettingsCheck {
        let scopes = snapshot.settings.scopes();
        let (chain, keys) = (snapshot.settings.clone(), scopes.clone());
        let judged = JudgedSettings::of(self, snapshot);
        SettingsCheck {
            scopes,
            unchanged: Arc::new(move |rows: &[Settings]| {
                if judged.hold_in(&chain.with_rows(&keys, rows)) {
                    Ok(())
                } else {
                    Err(Rejection::new(GuardRefusal::Retry))
                }
            }),
        }
    }
}

/// The registration's audit entry names the approvals it used.
fn naming_approvals(audit: Audit<'_>, approvals: &[AcceptedRisk]) -> Option<AuditContext> {
    audit.filter(|_| !approvals.is_empty()).map(|c| {
        let lines: Vec<String> = approvals.iter().map(AcceptedRisk::describe).collect();
        AuditContext {
            detail: Some(format!("accepted risk: {}", lines.join("; "))),
            ..c.clone()
        }
    })
}

/// What a store's refusal of the commit means to the client.
fn refusal(subject: &str, e: StoreError) -> RegistryError {
    match e {
        StoreError::IdConflict { id } => RegistryError::OperationNotPermitted(format!(
            "Overwrite new schema with id {} in context {} is not permitted.",
            public_id(id),
            context_of(subject)
        )),
        // A referenced version was deleted after the references were resolved.
        StoreError::NoSuchVersion { subject, version } => RegistryError::InvalidSchema(format!(
            "No schema reference found for subject \"{subject}\" and version {version}"
        )),
        StoreError::VersionExists { version, .. } => RegistryError::OperationNotPermitted(format!(
            "Overwrite new schema for subject {subject} version {version} in context {} is not permitted.",
            context_of(subject)
        )),
        e => e.into(),
    }
}
