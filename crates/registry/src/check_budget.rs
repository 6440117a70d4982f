//! The bound on one check's judging: every verdict, plan and field diff the registry computes
//! for a request runs through [`CheckBudget::run`], the one place where that work is bounded
//! in time and size. A spent budget is [`RegistryError::CheckBudgetExceeded`] (422), never a
//! partial verdict: the walks stop early and their result is discarded. `run` hands its work
//! the [`Metered`] token that every budgeted entry point (`covenant_policy::judge`, field
//! trees, sample decoding) takes: judging without a budget does not compile.

use crate::{RegistryError, RegistryResult};
use covenant_engine::budget::{Budget, Metered};
use std::time::Duration;

/// CPU time and units of work one check may spend. A unit is about 64 bytes held by a walk:
/// a memoized pair of nodes costs one, a node of a lowered field tree eight, so the work
/// bound also bounds the memory a check can grow to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckBudget {
    pub time: Duration,
    pub max_work: u64,
}

impl Default for CheckBudget {
    /// 5 s and 8,000,000 units (about 512 MiB): room for schemas at the default limits
    /// (100,000 fields lower into trees of about 800,000 units each).
    fn default() -> Self {
        CheckBudget {
            time: Duration::from_secs(5),
            max_work: 8_000_000,
        }
    }
}

impl CheckBudget {
    /// Runs `f` under this budget on the current thread, with the token that proves it.
    pub fn run<T>(&self, f: impl FnOnce(Metered<'_>) -> T) -> RegistryResult<T> {
        Budget::new(Some(self.time), Some(self.max_work))
            .run(f)
            .map_err(RegistryError::CheckBudgetExceeded)
    }
}

/// The largest schema text whose parse, and whose verdict when it has no earlier version to be
/// read against, run on the request's own thread. Handing the async worker to another thread
/// first (`block_in_place`, or the blocking pool) costs more than such work: doing both in
/// place took new registrations from 3,739-4,064/s to 4,081-5,006/s, and an import of 20,000
/// versions through the API from 5.8 to 5.2 s (benches/RESULTS.md). Larger work still leaves
/// the workers, so that other requests are served meanwhile.
pub(crate) const IN_PLACE_SCHEMA_BYTES: usize = 16 * 1024;

/// Whether work on a schema of this text is small enough to run in place (see
/// [`IN_PLACE_SCHEMA_BYTES`]).
pub(crate) fn fits_in_place(text: &str) -> bool {
    text.len() <= IN_PLACE_SCHEMA_BYTES
}

/// Runs CPU-bound work that is not a check (parsing a submitted schema) without holding up
/// the async workers: on a multi-threaded runtime the worker hands its other tasks to another
/// thread first.
pub(crate) fn off_workers<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

impl crate::Registry {
    /// Bounds the judging of every check.
    pub fn with_check_budget(mut self, budget: CheckBudget) -> crate::Registry {
        self.check_budget = budget;
        self
    }

    /// Bounds how many checks are judged at once and the memory they may hold together (see
    /// [`crate::AdmissionLimits`]).
    pub fn with_admission(mut self, limits: crate::AdmissionLimits) -> crate::Registry {
        self.admission = crate::admission::Admission::new(limits);
        self
    }

    pub fn admission_limits(&self) -> crate::AdmissionLimits {
        self.admission.limits()
    }

    /// Checks admitted and still being judged.
    pub fn checks_running(&self) -> usize {
        self.admission.running()
    }

    /// For a server shutting down: refuses new checks and stops those running at their next
    /// budget poll, so that none holds the exit.
    pub fn stop_checks(&self) {
        self.admission.stop_all();
    }

    /// Judges `work` once admitted, off the async workers and under the check budget; see
    /// [`crate::register::judge::off_runtime`].
    pub(crate) async fn off_runtime<T, F>(&self, work: F) -> RegistryResult<T>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let admitted = self.admission.admit(self.check_budget.max_work).await?;
        crate::register::judge::off_runtime(admitted, work).await
    }

    /// Judges `work` once admitted, on this thread, under the check budget: for short walks
    /// over borrowed schemas (field diffs).
    pub(crate) async fn judge_here<T>(
        &self,
        work: impl FnOnce(Metered<'_>) -> T,
    ) -> RegistryResult<T> {
        self.in_place(|| self.check_budget.run(work)).await?
    }

    /// [`Registry::off_runtime`] on this thread, for work smaller than handing it to another
    /// thread (see [`IN_PLACE_SCHEMA_BYTES`]): admitted, and stopped by the admission's cancel
    /// flag; like there, `work` takes its token from a [`CheckBudget::run`] inside.
    pub(crate) async fn in_place<T>(&self, work: impl FnOnce() -> T) -> RegistryResult<T> {
        let admitted = self.admission.admit(self.check_budget.max_work).await?;
        Budget::default()
            .with_cancel(admitted.cancel.clone())
            .run(|_| work())
            .map_err(RegistryError::CheckBudgetExceeded)
    }

    /// Bounds the size and shape of every schema parsed (see [`covenant_engine::Limits`]).
    pub fn with_schema_limits(mut self, limits: covenant_engine::Limits) -> crate::Registry {
        self.schema_limits = limits;
        self
    }

    pub fn check_budget(&self) -> CheckBudget {
        self.check_budget
    }

    pub fn schema_limits(&self) -> covenant_engine::Limits {
        self.schema_limits
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_engine::budget::{BudgetExceeded, charge};

    #[test]
    fn spent_work_is_an_error_and_unspent_work_a_value() {
        let small = CheckBudget {
            time: Duration::from_secs(5),
            max_work: 10,
        };
        assert_eq!(small.run(|_| charge(5)).ok(), Some(false));
        match small.run(|_| charge(11)) {
            Err(RegistryError::CheckBudgetExceeded(BudgetExceeded::Work(10))) => {}
            other => panic!("expected a spent work budget, got {other:?}"),
        }
    }
}
