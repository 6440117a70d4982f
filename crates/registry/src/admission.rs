//! The bound across checks. Each check is bounded by its [`crate::CheckBudget`]; admission
//! bounds how many run at once, so that concurrency cannot multiply a per-check bound into an
//! outage. A check takes a slot (CPU: about one per core) and reserves its work budget from a
//! pool of memory (a unit of work is about 64 bytes held), waits a short while when either is
//! spent, and is then refused with [`RegistryError::ChecksBusy`] (429 with `Retry-After`).
//!
//! Admission also stops checks: each admitted check has a cancel flag, raised when the caller
//! stops waiting and, for all of them at once, when the server begins to shut down.

use crate::{RegistryError, RegistryResult};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes a unit of check work stands for (see [`crate::CheckBudget`]).
pub const WORK_UNIT_BYTES: u64 = 64;

/// The budget across checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdmissionLimits {
    /// Checks judged at once.
    pub max_concurrent: usize,
    /// Memory all running checks may hold together, in MiB; each reserves its work budget.
    pub memory_mb: u64,
    /// How long a check waits for a slot and its memory before it is refused.
    pub queue: Duration,
}

impl AdmissionLimits {
    /// One check per core (at least two): checks are CPU-bound and their time budget is
    /// counted on the clock, so more at once than cores only makes each one slower.
    pub fn default_concurrency() -> usize {
        std::thread::available_parallelism()
            .map_or(2, std::num::NonZero::get)
            .max(2)
    }
}

impl Default for AdmissionLimits {
    /// A slot per core, 2 GiB (four checks at the default work budget of 512 MiB) and two
    /// seconds of queueing.
    fn default() -> Self {
        AdmissionLimits {
            max_concurrent: AdmissionLimits::default_concurrency(),
            memory_mb: 2048,
            queue: Duration::from_secs(2),
        }
    }
}

/// Slots, memory and the cancel flags of the checks running.
pub(crate) struct Admission {
    limits: AdmissionLimits,
    slots: Arc<Semaphore>,
    memory: Arc<Semaphore>,
    running: Mutex<HashMap<u64, Arc<AtomicBool>>>,
    next: AtomicU64,
    closing: AtomicBool,
}

/// What an admitted check holds until it ends: its slot, its memory and its cancel flag.
pub(crate) struct Admitted {
    admission: Arc<Admission>,
    id: u64,
    pub cancel: Arc<AtomicBool>,
    _slot: OwnedSemaphorePermit,
    _memory: OwnedSemaphorePermit,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        lock(&self.admission.running).remove(&self.id);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Admission {
    pub fn new(limits: AdmissionLimits) -> Arc<Admission> {
        let limits = AdmissionLimits {
            max_concurrent: limits.max_concurrent.clamp(1, Semaphore::MAX_PERMITS),
            memory_mb: limits.memory_mb.clamp(1, u64::from(u32::MAX)),
            queue: limits.queue,
        };
        Arc::new(Admission {
            limits,
            slots: Arc::new(Semaphore::new(limits.max_concurrent)),
            memory: Arc::new(Semaphore::new(limits.memory_mb as usize)),
            running: Mutex::new(HashMap::new()),
            next: AtomicU64::new(0),
            closing: AtomicBool::new(false),
        })
    }

    pub fn limits(&self) -> AdmissionLimits {
        self.limits
    }

    /// The MiB a check of `max_work` units reserves: its whole work budget, at most the pool.
    fn reservation(&self, max_work: u64) -> u32 {
        let mb = max_work
            .saturating_mul(WORK_UNIT_BYTES)
            .div_ceil(1024 * 1024)
            .clamp(1, self.limits.memory_mb);
        u32::try_from(mb).unwrap_or(u32::MAX)
    }

    /// Admits a check of `max_work` units, waiting up to the queue time for a slot and its
    /// memory; refused when they stay spent or the server is shutting down.
    pub async fn admit(self: &Arc<Self>, max_work: u64) -> RegistryResult<Admitted> {
        if self.closing.load(Ordering::Relaxed) {
            return Err(self.busy("the server is shutting down"));
        }
        let slot = match tokio::time::timeout(self.limits.queue, self.slots.clone().acquire_owned())
            .await
        {
            Ok(Ok(slot)) => slot,
            _ => {
                return Err(self.busy(&format!(
                    "all {} check slots are taken",
                    self.limits.max_concurrent
                )));
            }
        };
        let wanted = self.reservation(max_work);
        let memory = match tokio::time::timeout(
            self.limits.queue,
            self.memory.clone().acquire_many_owned(wanted),
        )
        .await
        {
            Ok(Ok(memory)) => memory,
            _ => {
                return Err(self.busy(&format!(
                    "the {} MiB of check memory are reserved by running checks",
                    self.limits.memory_mb
                )));
            }
        };
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let cancel = Arc::new(AtomicBool::new(false));
        lock(&self.running).insert(id, cancel.clone());
        // A shutdown that began while this check queued stops it at once.
        if self.closing.load(Ordering::Relaxed) {
            cancel.store(true, Ordering::Relaxed);
        }
        Ok(Admitted {
            admission: self.clone(),
            id,
            cancel,
            _slot: slot,
            _memory: memory,
        })
    }

    fn busy(&self, what: &str) -> RegistryError {
        RegistryError::ChecksBusy {
            what: what.to_string(),
            retry_after_secs: self.limits.queue.as_secs().max(1),
        }
    }

    /// Refuses new checks and cancels the running ones: they stop at their next budget poll.
    pub fn stop_all(&self) {
        self.closing.store(true, Ordering::Relaxed);
        for flag in lock(&self.running).values() {
            flag.store(true, Ordering::Relaxed);
        }
    }

    /// Checks admitted and not yet ended.
    pub fn running(&self) -> usize {
        lock(&self.running).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_concurrent: usize, memory_mb: u64) -> AdmissionLimits {
        AdmissionLimits {
            max_concurrent,
            memory_mb,
            queue: Duration::from_millis(50),
        }
    }

    #[tokio::test]
    async fn slots_are_refused_once_taken_and_freed_when_checks_end() {
        let admission = Admission::new(limits(2, 1024));
        let a = admission.admit(1000).await.expect("first");
        let _b = admission.admit(1000).await.expect("second");
        match admission.admit(1000).await {
            Err(RegistryError::ChecksBusy { what, .. }) => {
                assert!(what.contains("slots"), "{what}")
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        drop(a);
        assert!(admission.admit(1000).await.is_ok());
    }

    #[tokio::test]
    async fn memory_is_reserved_per_check_from_the_pool() {
        // 8,000,000 units of 64 bytes: 489 MiB each, so two fit in 1,000 MiB and a third waits.
        let admission = Admission::new(limits(8, 1000));
        let _a = admission.admit(8_000_000).await.expect("first");
        let _b = admission.admit(8_000_000).await.expect("second");
        match admission.admit(8_000_000).await {
            Err(RegistryError::ChecksBusy { what, .. }) => {
                assert!(what.contains("memory"), "{what}")
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        // A check larger than the whole pool reserves the pool, not forever nothing.
        let alone = Admission::new(limits(8, 10));
        assert!(alone.admit(u64::MAX).await.is_ok());
    }

    #[tokio::test]
    async fn stopping_cancels_running_checks_and_refuses_new_ones() {
        let admission = Admission::new(limits(4, 1024));
        let running = admission.admit(10).await.expect("admitted");
        assert_eq!(admission.running(), 1);
        admission.stop_all();
        assert!(running.cancel.load(Ordering::Relaxed));
        assert!(admission.admit(10).await.is_err());
        drop(running);
        assert_eq!(admission.running(), 0);
    }
}
