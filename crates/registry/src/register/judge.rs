//! The registration's judge step: the verdict on the candidate, computed outside the store's
//! write lock and off the async workers, under the check budget, against the snapshot of the
//! subject (the next version's number, compatibility with the approvals on record, the removal
//! gate), and what makes it safe to commit later (optimistic concurrency).

use crate::admission::Admitted;
use crate::approvals::{AcceptedRisk, accept};
use crate::config::group_value;
use crate::error::GuardRefusal;
use crate::evolution::{self, Evolution};
use crate::removal::{RemovalVerdict, removed_fields};
use crate::{CheckBudget, Mode, Registration, Registry, RegistryError, RegistryResult};
use covenant_engine::Level;
use covenant_engine::budget::Budget;
use covenant_schema::ParsedSchema;
use covenant_store::StoredVersion;
use serde_json::Value;
use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, Weak};
use std::time::Duration;

/// How one judge-then-commit round of a registration ended.
pub(crate) enum Attempt {
    Done(Registration),
    /// A dry run passed: what the registration would have done.
    Judged(WouldRegister),
    /// The subject, its config or its mode changed between snapshot and commit.
    Retry,
}

/// What a registration would do, judged exactly as one without committing anything
/// ([`Registry::judge_registration`]).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct WouldRegister {
    /// The live version that already holds this schema: a registration would return it and
    /// write nothing.
    #[serde(rename = "existingVersion", skip_serializing_if = "Option::is_none")]
    pub existing_version: Option<i64>,
    /// The fields the candidate drops from the latest version, which the removal gate lets go.
    pub removes: Vec<String>,
    /// The approvals whose accepted risk would let it through.
    pub approvals: Vec<AcceptedRisk>,
}

/// Everything a registration's verdict depends on, owned so that it can be judged on a
/// blocking thread.
pub(crate) struct Judged {
    pub subject: String,
    pub mode: Mode,
    pub level: Level,
    pub group: Option<String>,
    pub explicit_version: Option<i64>,
    pub evolution: Option<Evolution>,
    /// Live approvals for this exact candidate (see `approvals.rs`).
    pub approvals: Vec<AcceptedRisk>,
    pub removal: Option<RemovalVerdict>,
    pub removal_enabled: bool,
    pub candidate: ParsedSchema,
    pub metadata: Option<Value>,
    /// The subject's versions the verdict is about (the snapshot).
    pub versions: Arc<Vec<StoredVersion>>,
    /// Parsed priors of the snapshot, by schema id.
    pub prepared: HashMap<i64, Arc<ParsedSchema>>,
    /// The bound on the removal gate's field diff (the verdict's is in `evolution`).
    pub check_budget: CheckBudget,
    /// Judged on the request's thread: a small candidate and no prior to read it against.
    pub in_place: bool,
}

impl Judged {
    /// Whether the candidate may follow the snapshot; on success, the fields it drops and the
    /// approvals whose accepted risk it needed.
    pub fn verdict(&self) -> Result<(Vec<String>, Vec<AcceptedRisk>), GuardRefusal> {
        let versions = self.versions.as_slice();
        self.next_version(versions)?;
        let accepted = self.compatible(versions)?;
        Ok((self.removal(versions)?, accepted))
    }

    fn next_version(&self, versions: &[StoredVersion]) -> Result<(), GuardRefusal> {
        let Some(wanted) = self.explicit_version.filter(|_| !self.mode.is_import()) else {
            return Ok(());
        };
        let next = versions.iter().map(|x| x.version).max().unwrap_or(0) + 1;
        if wanted == next {
            return Ok(());
        }
        Err(GuardRefusal::Domain(RegistryError::InvalidSchema(
            "Version is not one more than previous version".into(),
        )))
    }

    fn compatible(&self, versions: &[StoredVersion]) -> Result<Vec<AcceptedRisk>, GuardRefusal> {
        let Some(evolution) = &self.evolution else {
            return Ok(Vec::new());
        };
        let group = self.group.as_deref();
        let mine = group.map(|g| group_value(&self.metadata, g).cloned());
        let mut parsed = Vec::new();
        for v in versions.iter().filter(|v| !v.deleted) {
            if let (Some(g), Some(mine)) = (group, &mine)
                && group_value(&v.schema.metadata, g) != mine.as_ref()
            {
                continue;
            }
            let prior = self.prepared.get(&v.schema.id).ok_or(GuardRefusal::Retry)?;
            parsed.push((v, prior));
        }
        let priors: Vec<evolution::Prior<'_>> = parsed
            .iter()
            .map(|(v, p)| evolution::Prior {
                version: v.version,
                registered_at: v.created_at,
                metadata: v.schema.metadata.as_ref(),
                schema: p.as_ref(),
            })
            .collect();
        let report =
            Registry::judge_and_count(evolution, self.level, &self.candidate, &priors, None)
                .map_err(GuardRefusal::Domain)?;
        if report.compatible {
            return Ok(Vec::new());
        }
        let errors: Vec<_> = report.errors().cloned().collect();
        let (left, accepted) = accept(&errors, &self.approvals);
        if left.is_empty() {
            return Ok(accepted);
        }
        Err(GuardRefusal::Domain(RegistryError::Incompatible {
            subject: self.subject.to_string(),
            findings: left,
        }))
    }

    /// Consumer governance: may the fields the candidate drops from the latest version go?
    fn removal(&self, versions: &[StoredVersion]) -> Result<Vec<String>, GuardRefusal> {
        if self.mode.is_import() || !self.removal_enabled {
            return Ok(Vec::new());
        }
        let Some(latest) = versions.iter().rev().find(|v| !v.deleted) else {
            return Ok(Vec::new());
        };
        let old = self
            .prepared
            .get(&latest.schema.id)
            .ok_or(GuardRefusal::Retry)?;
        let removed = self
            .check_budget
            .run(|m| removed_fields(m, old, &self.candidate))
            .map_err(GuardRefusal::Domain)?;
        if removed.is_empty() {
            return Ok(removed);
        }
        let verdict = self.removal.as_ref().ok_or(GuardRefusal::Retry)?;
        verdict(&removed).map_err(|blockers| {
            GuardRefusal::Domain(RegistryError::RemovalBlocked {
                subject: self.subject.clone(),
                blockers,
            })
        })?;
        Ok(removed)
    }
}

/// A verdict that lets the candidate through.
pub(crate) struct Passed {
    /// The fields the candidate drops from the latest version, which the removal gate lets go.
    pub removes: Vec<String>,
    /// The approvals whose accepted risk it needed.
    pub approvals: Vec<AcceptedRisk>,
}

impl Registry {
    /// Judges `judged` off the async workers (the expensive part: outside the store's write
    /// lock): the refusal, the verdict that passed, or `None` when the snapshot changed while
    /// its versions were parsed (judge again).
    pub(crate) async fn judge(&self, judged: Judged) -> RegistryResult<Option<Passed>> {
        // A small candidate with no earlier version to be read against (a new subject, an
        // import) is judged in place (see `IN_PLACE_SCHEMA_BYTES`).
        let verdict = if judged.in_place {
            self.in_place(|| judged.verdict()).await?
        } else {
            self.off_runtime(move || judged.verdict()).await?
        };
        match verdict {
            Ok((removes, approvals)) => Ok(Some(Passed { removes, approvals })),
            Err(GuardRefusal::Domain(e)) => Err(e),
            Err(GuardRefusal::Retry) => Ok(None),
        }
    }
}

/// Whether the subject still has exactly the versions a verdict was judged against: same
/// numbers, same schemas, same soft-deleted flags, none permanently deleted or added.
pub(crate) fn same_versions(now: &[StoredVersion], judged: &[StoredVersion]) -> bool {
    now.len() == judged.len()
        && now.iter().zip(judged).all(|(a, b)| {
            a.version == b.version && a.schema.id == b.schema.id && a.deleted == b.deleted
        })
}

/// A short, growing, jittered pause before judging again, so racing registrations of one
/// subject spread out instead of colliding in lockstep.
pub(crate) fn retry_pause(attempt: usize) -> Duration {
    let jitter = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
        % 5;
    let step = u64::try_from(attempt).unwrap_or(u64::MAX).min(10);
    Duration::from_millis(step * 2 + jitter)
}

/// One async lock per subject being registered to, dropped when no one holds or waits for it.
#[derive(Default)]
pub(crate) struct SubjectTurns(std::sync::Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>);

impl SubjectTurns {
    /// Waits until no other registration of `subject` on this node is being judged.
    pub async fn turn(&self, subject: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            map.retain(|_, held| held.strong_count() > 0);
            match map.get(subject).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(tokio::sync::Mutex::new(()));
                    map.insert(subject.to_string(), Arc::downgrade(&lock));
                    lock
                }
            }
        };
        lock.lock_owned().await
    }
}

/// Runs an admitted check on tokio's blocking pool, so that a long check never occupies one
/// of the few async worker threads, under a budget whose cancel flag is raised when the
/// awaiting future is dropped (and by the server's shutdown, see [`Admitted`]). The HTTP
/// server drops a request's future when its client disconnects, so a check nobody waits for
/// any more stops at the walkers' next budget poll. The check keeps its admission until its
/// work has ended, not merely until nobody waits for it.
pub(crate) async fn off_runtime<T, F>(admitted: Admitted, work: F) -> RegistryResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    struct RaiseOnDrop(Arc<AtomicBool>);
    impl Drop for RaiseOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let cancel = admitted.cancel.clone();
    let raise = RaiseOnDrop(cancel.clone());
    let budget = Budget::default().with_cancel(cancel);
    let outcome = tokio::task::spawn_blocking(move || {
        let _admitted = admitted;
        // This budget only carries the cancel flag; the work takes its token from the
        // `CheckBudget::run` inside, which bounds its time and size.
        budget.run(|_| work())
    })
    .await;
    // Finished: nothing left to cancel.
    std::mem::forget(raise);
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(stopped)) => Err(RegistryError::CheckBudgetExceeded(stopped)),
        Err(failed) => Err(RegistryError::Store(format!("checking: {failed}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::AdmissionLimits;
    use crate::admission::Admission;
    use covenant_engine::budget::spent;
    use std::time::Instant;

    async fn admitted() -> Admitted {
        Admission::new(AdmissionLimits::default())
            .admit(1)
            .await
            .expect("admitted")
    }

    #[tokio::test]
    async fn dropping_the_caller_cancels_the_work() {
        let (tx, rx) = std::sync::mpsc::channel();
        let work = off_runtime(admitted().await, move || {
            let started = Instant::now();
            while !spent() && started.elapsed() < Duration::from_secs(20) {
                std::thread::yield_now();
            }
            let _ = tx.send((spent(), started.elapsed()));
        });
        // The caller gives up after 100 ms, dropping the future.
        assert!(
            tokio::time::timeout(Duration::from_millis(100), work)
                .await
                .is_err()
        );
        let (stopped, after) = tokio::task::spawn_blocking(move || {
            rx.recv_timeout(Duration::from_secs(10))
                .expect("the work ended")
        })
        .await
        .expect("join");
        assert!(stopped, "the work ended without seeing the cancellation");
        assert!(
            after < Duration::from_secs(5),
            "cancelled only after {after:?}"
        );
    }

    #[tokio::test]
    async fn work_nobody_abandons_runs_to_the_end() {
        assert_eq!(off_runtime(admitted().await, spent).await.ok(), Some(false));
    }

    #[test]
    fn a_changed_snapshot_is_noticed() {
        let version = |v: i64, id: i64, deleted: bool| StoredVersion {
            subject: "s".into(),
            version: v,
            deleted,
            created_at: 0,
            schema: covenant_store::SchemaRecord {
                id,
                schema_type: "AVRO".into(),
                schema: "\"int\"".into(),
                references: Vec::new(),
                metadata: None,
                rule_set: None,
                content_key: String::new(),
            },
        };
        let judged = vec![version(1, 1, false), version(2, 2, false)];
        assert!(same_versions(&judged.clone(), &judged));
        assert!(!same_versions(&[version(1, 1, false)], &judged), "a purge");
        assert!(
            !same_versions(&[version(1, 1, false), version(2, 2, true)], &judged),
            "a soft delete"
        );
        let mut added = judged.clone();
        added.push(version(3, 3, false));
        assert!(!same_versions(&added, &judged), "a new version");
    }
}
