//! The bound on one check's judging: every verdict, plan and field diff the registry computes
//! for a request runs through [`CheckBudget::run`], the one place where that work is bounded
//! in time and size. A spent budget is [`RegistryError::CheckBudgetExceeded`] (422), never a
//! partial verdict: the walks stop early and their result is discarded.

use crate::{RegistryError, RegistryResult};
use covenant_engine::budget::Budget;
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
    /// 5 s and 8,000,000 units (about 512 MiB): a check of the largest real schemas takes
    /// milliseconds and a few hundred thousand units.
    fn default() -> Self {
        CheckBudget {
            time: Duration::from_secs(5),
            max_work: 8_000_000,
        }
    }
}

impl CheckBudget {
    /// Runs `f` under this budget on the current thread.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> RegistryResult<T> {
        Budget::new(Some(self.time), Some(self.max_work))
            .run(f)
            .map_err(RegistryError::CheckBudgetExceeded)
    }
}

impl crate::Registry {
    /// Bounds the judging of every check.
    pub fn with_check_budget(mut self, budget: CheckBudget) -> crate::Registry {
        self.check_budget = budget;
        self
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
        assert_eq!(small.run(|| charge(5)).ok(), Some(false));
        match small.run(|| charge(11)) {
            Err(RegistryError::CheckBudgetExceeded(BudgetExceeded::Work(10))) => {}
            other => panic!("expected a spent work budget, got {other:?}"),
        }
    }
}
