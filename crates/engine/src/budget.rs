//! A per-request budget for work whose cost depends on the input: CPU time, a bound on the
//! units of work (a proxy for memory: memo entries, nodes visited), and cancellation when the
//! client has gone away.
//!
//! The budget is installed for the current thread with [`Budget::run`], so deep walkers poll
//! it with [`spent`] or [`charge`] without every signature in between carrying it. A walker
//! that finds the budget spent stops early; `run` then answers [`BudgetExceeded`] and the
//! partial result is discarded, so a spent budget can never turn into a wrong verdict.

use std::cell::RefCell;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Limits for one request. `None` fields are unlimited.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    pub deadline: Option<Instant>,
    pub max_work: Option<u64>,
    pub cancelled: Option<Arc<AtomicBool>>,
}

/// Why a budgeted computation was stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetExceeded {
    /// The CPU-time budget ran out.
    Time(Duration),
    /// More units of work than allowed (memo entries, nodes visited).
    Work(u64),
    /// The caller stopped waiting (the client disconnected).
    Cancelled,
}

impl fmt::Display for BudgetExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BudgetExceeded::Time(d) => write!(
                f,
                "the check ran out of its time budget of {} ms",
                d.as_millis()
            ),
            BudgetExceeded::Work(n) => {
                write!(f, "the check ran out of its work budget of {n} units")
            }
            BudgetExceeded::Cancelled => write!(f, "the check was cancelled"),
        }
    }
}

impl std::error::Error for BudgetExceeded {}

struct Active {
    budget: Budget,
    started: Instant,
    work: u64,
    exceeded: Option<BudgetExceeded>,
}

thread_local! {
    static ACTIVE: RefCell<Vec<Active>> = const { RefCell::new(Vec::new()) };
}

impl Budget {
    /// A budget of `time` from now and at most `max_work` units.
    pub fn new(time: Option<Duration>, max_work: Option<u64>) -> Self {
        Budget {
            deadline: time.map(|t| Instant::now() + t),
            max_work,
            cancelled: None,
        }
    }

    /// The same budget, also stopped when `flag` becomes true.
    pub fn with_cancel(mut self, flag: Arc<AtomicBool>) -> Self {
        self.cancelled = Some(flag);
        self
    }

    /// Runs `f` under this budget on the current thread. Budgets nest: an inner budget is
    /// checked first, and spending it does not spend the outer one.
    pub fn run<T>(&self, f: impl FnOnce() -> T) -> Result<T, BudgetExceeded> {
        ACTIVE.with(|a| {
            a.borrow_mut().push(Active {
                budget: self.clone(),
                started: Instant::now(),
                work: 0,
                exceeded: None,
            })
        });
        struct Pop;
        impl Drop for Pop {
            fn drop(&mut self) {
                ACTIVE.with(|a| {
                    a.borrow_mut().pop();
                });
            }
        }
        let pop = Pop;
        let value = f();
        let exceeded = ACTIVE.with(|a| a.borrow().last().and_then(|b| b.exceeded));
        drop(pop);
        match exceeded {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

fn poll(active: &mut Active, units: u64) -> bool {
    if active.exceeded.is_some() {
        return true;
    }
    active.work = active.work.saturating_add(units);
    if let Some(max) = active.budget.max_work
        && active.work > max
    {
        active.exceeded = Some(BudgetExceeded::Work(max));
    } else if let Some(flag) = &active.budget.cancelled
        && flag.load(Ordering::Relaxed)
    {
        active.exceeded = Some(BudgetExceeded::Cancelled);
    } else if let Some(deadline) = active.budget.deadline
        && Instant::now() >= deadline
    {
        active.exceeded = Some(BudgetExceeded::Time(deadline - active.started));
    }
    active.exceeded.is_some()
}

/// Charges `units` of work to the current budget; true when the budget is spent and the
/// caller should stop. Without a budget installed it is always false.
pub fn charge(units: u64) -> bool {
    ACTIVE.with(|a| a.borrow_mut().last_mut().is_some_and(|b| poll(b, units)))
}

/// True when the current budget is spent (polls the clock and the cancel flag).
pub fn spent() -> bool {
    charge(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_budget_never_spent() {
        assert!(!charge(u64::MAX));
        assert!(!spent());
    }

    #[test]
    fn work_budget_stops_and_reports() {
        let r = Budget::new(None, Some(10)).run(|| {
            let mut n = 0;
            while !charge(1) {
                n += 1;
            }
            n
        });
        assert_eq!(r, Err(BudgetExceeded::Work(10)));
    }

    #[test]
    fn time_budget_stops() {
        let r = Budget::new(Some(Duration::from_millis(5)), None).run(|| while !spent() {});
        assert!(matches!(r, Err(BudgetExceeded::Time(_))));
    }

    #[test]
    fn cancel_flag_stops() {
        let flag = Arc::new(AtomicBool::new(false));
        let r = Budget::default().with_cancel(flag.clone()).run(|| {
            flag.store(true, Ordering::Relaxed);
            spent()
        });
        assert_eq!(r, Err(BudgetExceeded::Cancelled));
    }

    #[test]
    fn within_budget_returns_value() {
        assert_eq!(Budget::new(None, Some(100)).run(|| 7), Ok(7));
        // and the budget is uninstalled afterwards
        assert!(!charge(1000));
    }
}
