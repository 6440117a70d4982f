//! Soft and permanent deletes of versions and subjects, refused while a version that blocks
//! references what would go.

use crate::error::GuardRefusal;
use crate::register::REGISTER_ATTEMPTS;
use crate::{Registry, RegistryError, RegistryResult, VersionSpec};
use covenant_store::{Audit, Rejection, Scope, StoreError, StoredVersion};

/// Whether a guarded delete found every version it was asked to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Deleted {
    Done,
    /// One was permanently deleted concurrently; nothing was changed.
    Vanished,
}

impl Registry {
    /// Deletes versions inside the store's write, refusing with 42206 when a version that
    /// blocks (any for a permanent delete, live ones otherwise; same-subject ones are ignored
    /// when the whole subject goes) references one of them. Checking inside the write means a
    /// concurrent registration cannot add a reference between the check and the delete.
    pub(crate) async fn delete_unreferenced(
        &self,
        subject: &str,
        versions: &[i64],
        permanent: bool,
        ignore_same_subject: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Deleted> {
        let guard = |referencing: &[StoredVersion]| -> Result<(), Rejection> {
            for &version in versions {
                let blocked = referencing.iter().any(|r| {
                    (permanent || !r.deleted)
                        && !(ignore_same_subject && r.subject == subject)
                        && r.schema
                            .references
                            .iter()
                            .any(|x| x.subject == subject && x.version == version)
                });
                if blocked {
                    return Err(Rejection::new(GuardRefusal::Domain(
                        RegistryError::Referenced(subject.to_string(), version),
                    )));
                }
            }
            Ok(())
        };
        match self
            .store
            .delete_guarded(subject, versions, permanent, &guard, audit)
            .await
        {
            Ok(()) => {
                // A permanent delete takes the subject's config and mode with it.
                self.answers.scope_changed(Some(subject.to_string()));
                Ok(Deleted::Done)
            }
            // A concurrent permanent delete got there first: decide again on what is left.
            Err(StoreError::NoSuchVersion { .. }) => Ok(Deleted::Vanished),
            Err(StoreError::Rejected(rejection)) => {
                match rejection.into_inner().downcast::<GuardRefusal>() {
                    Ok(refusal) => match *refusal {
                        GuardRefusal::Domain(e) => Err(e),
                        GuardRefusal::Retry => Err(RegistryError::Store(
                            "deleting versions: unexpected retry".into(),
                        )),
                    },
                    Err(other) => Err(RegistryError::Store(format!("deleting versions: {other}"))),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `DELETE /subjects/{s}/versions/{v}`: soft unless `permanent` (which needs a prior soft
    /// delete). Returns the version number.
    ///
    /// Decided on a read of the subject and applied only to versions that still exist; when
    /// a concurrent permanent delete removed one first, the decision is made again, so a race
    /// ends in Confluent's 404 or 422 rather than a store error.
    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<i64> {
        for _ in 0..REGISTER_ATTEMPTS {
            if let Some(version) = self
                .delete_version_once(subject, spec, permanent, audit)
                .await?
            {
                return Ok(version);
            }
        }
        Err(RegistryError::Store(
            "deleting a version: the subject kept changing".into(),
        ))
    }

    pub(crate) async fn delete_version_once(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Option<i64>> {
        self.ensure_writable(Scope::Subject(subject)).await?;
        let all = self.store.subject_versions(subject).await?;
        // Only a subject without any version, soft-deleted ones included, is missing: a
        // version deleted twice is "soft deleted" even when it was the subject's last one.
        if all.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let target = match spec {
            VersionSpec::Latest if permanent => all.last(),
            VersionSpec::Latest => all.iter().rev().find(|v| !v.deleted),
            VersionSpec::Number(n) => all.iter().find(|v| v.version == n),
        };
        let Some(target) = target else {
            return Err(RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "-1".into(),
                VersionSpec::Number(n) => n.to_string(),
            }));
        };
        let version = target.version;
        if permanent {
            if !target.deleted {
                return Err(RegistryError::VersionNotSoftDeleted(
                    subject.to_string(),
                    version,
                ));
            }
            if self
                .delete_unreferenced(subject, &[version], true, false, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            self.forget_all();
            self.forget_samples(subject, &[version]).await;
        } else {
            if target.deleted {
                return Err(RegistryError::VersionSoftDeleted(
                    subject.to_string(),
                    version,
                ));
            }
            if self
                .delete_unreferenced(subject, &[version], false, false, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
        }
        Ok(Some(version))
    }

    /// `DELETE /subjects/{s}`: returns the versions deleted (decided again, like
    /// [`Registry::delete_version`], when a concurrent delete removed one first).
    pub async fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Vec<i64>> {
        for _ in 0..REGISTER_ATTEMPTS {
            if let Some(versions) = self.delete_subject_once(subject, permanent, audit).await? {
                return Ok(versions);
            }
        }
        Err(RegistryError::Store(
            "deleting a subject: the subject kept changing".into(),
        ))
    }

    pub(crate) async fn delete_subject_once(
        &self,
        subject: &str,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Option<Vec<i64>>> {
        self.ensure_writable(Scope::Subject(subject)).await?;
        let all = self.store.subject_versions(subject).await?;
        if all.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let live: Vec<i64> = all
            .iter()
            .filter(|v| !v.deleted)
            .map(|v| v.version)
            .collect();
        if permanent {
            if !live.is_empty() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_string()));
            }
            let every: Vec<i64> = all.iter().map(|v| v.version).collect();
            if self
                .delete_unreferenced(subject, &every, true, true, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            self.forget_all();
            self.forget_samples(subject, &every).await;
            self.forget_profiles(subject).await;
            Ok(Some(every))
        } else {
            if live.is_empty() {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_string()));
            }
            if self
                .delete_unreferenced(subject, &live, false, true, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            Ok(Some(live))
        }
    }
}
