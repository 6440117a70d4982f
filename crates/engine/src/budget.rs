//! A per-request budget for work whose cost depends on the input: CPU time, a bound on the
//! units of work (a proxy for memory: memo entries, nodes visited), and cancellation when the
//! client has gone away.
//!
//! The budget is installed for the current thread with [`Budget::run`], so deep walkers poll
//! it with [`spent`] or [`charge`] without every signature in between carrying it. A walker
//! that finds the budget spent stops early; `run` then answers [`BudgetExceeded`] and the
//! partial result is discarded, so a spent budget can never turn into a wrong verdict.
//!
//! That a budget is installed is checked by the compiler. `run` hands its closure a
//! [`Metered`] token, which only `run` (and [`Inherited::run`], on a thread a walk spawns)
//! makes, which cannot leave the call that made it, and which cannot be sent to another
//! thread. Every public entry point of work whose cost depends on the input (a structural
//! check, a judgement, a field tree, the decoding of a sample, the replay of samples) takes
//! one as its first parameter, so a caller that has no budget installed does not compile:
//!
//! ```compile_fail,E0061
//! // The lowering of a field tree charges the budget for every node: without a budget there
//! // is no token to give it, and the call does not compile.
//! let nodes = covenant_engine::TreeAllowance::new();
//! ```
//!
//! Nor can a token be made outside this module, or carried to a thread where its budget is
//! not installed, or kept after its budget is uninstalled:
//!
//! ```compile_fail,E0451
//! use covenant_engine::budget::Metered;
//! use std::marker::PhantomData;
//! let forged = Metered { scope: PhantomData, thread: PhantomData };
//! ```
//!
//! ```compile_fail,E0277
//! use covenant_engine::budget::{Budget, Metered};
//! fn walk(_m: Metered<'_>, input: &str) -> usize {
//!     input.len()
//! }
//! let _ = Budget::default().run(|m| {
//!     // `Metered` is not `Send`: the budget is installed on this thread only.
//!     std::thread::spawn(move || walk(m, "schema")).join()
//! });
//! ```
//!
//! ```compile_fail,E0521
//! use covenant_engine::budget::{Budget, Metered};
//! // The token cannot outlive the `run` that made it.
//! let mut kept: Option<Metered<'static>> = None;
//! let _ = Budget::default().run(|m| kept = Some(m));
//! ```
//!
//! A thread a walk spawns takes the budget with it through [`inherit`], whose
//! [`Inherited::run`] installs it there and gives that thread its own token:
//!
//! ```
//! use covenant_engine::budget::{self, Budget, BudgetExceeded, Metered};
//! fn walk(_m: Metered<'_>, units: u64) -> bool {
//!     budget::charge(units)
//! }
//! let spent = Budget::new(None, Some(10)).run(|m| {
//!     let inherited = budget::inherit(m);
//!     std::thread::scope(|s| s.spawn(|| inherited.run(|m| walk(m, 11))).join().unwrap())
//! });
//! assert_eq!(spent, Err(BudgetExceeded::Work(10)));
//! ```
//!
//! Private walkers below an entry point keep calling [`charge`] and [`spent`] without a
//! token: the token their entry point took proves the budget is there. The run-time check of
//! [`require`] remains behind this, for work charged by code no entry point leads to.

use std::cell::RefCell;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Limits for one request. `None` fields are unlimited.
#[derive(Clone, Debug, Default)]
pub struct Budget {
    pub deadline: Option<Instant>,
    pub max_work: Option<u64>,
    pub cancelled: Option<Arc<AtomicBool>>,
}

/// Proof that a budget is installed on the current thread, for the duration of `'a`.
///
/// Made only by [`Budget::run`] and [`Inherited::run`], and handed to their closure: it
/// cannot be returned from it (its lifetime is the call's), nor sent to another thread (it is
/// neither `Send` nor `Sync`), where the thread-local budget is not installed. An entry point
/// of work whose cost depends on the input takes one, so a caller without a budget does not
/// compile. It is a zero-sized `Copy` value: passing it on costs nothing.
#[derive(Clone, Copy)]
pub struct Metered<'a> {
    scope: PhantomData<&'a ()>,
    thread: PhantomData<*const ()>,
}

impl fmt::Debug for Metered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Metered")
    }
}

impl Metered<'_> {
    /// Made only where a budget has just been installed on this thread.
    fn installed() -> Self {
        Metered {
            scope: PhantomData,
            thread: PhantomData,
        }
    }
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
    /// The walk met a structure past its size or depth bound (see [`exhaust`]).
    Size,
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
            BudgetExceeded::Size => write!(
                f,
                "the check would nest or grow past the bounds one check may reach"
            ),
        }
    }
}

impl std::error::Error for BudgetExceeded {}

/// The state of one installed budget, shared with threads a walk spawns ([`inherit`]).
struct Active {
    budget: Budget,
    started: Instant,
    work: AtomicU64,
    exceeded: Mutex<Option<BudgetExceeded>>,
}

thread_local! {
    static ACTIVE: RefCell<Vec<Arc<Active>>> = const { RefCell::new(Vec::new()) };
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
    /// checked first, and spending it does not spend the outer one. An inner budget without a
    /// cancel flag takes the enclosing one's: when the caller stops waiting, everything
    /// running for it stops, whatever time or work it was allowed.
    ///
    /// `f` gets the [`Metered`] token that the entry points of budgeted work take.
    pub fn run<T>(&self, f: impl FnOnce(Metered<'_>) -> T) -> Result<T, BudgetExceeded> {
        let mut budget = self.clone();
        if budget.cancelled.is_none() {
            budget.cancelled = ACTIVE.with(|a| {
                a.borrow()
                    .last()
                    .and_then(|outer| outer.budget.cancelled.clone())
            });
        }
        let active = Arc::new(Active {
            budget,
            started: Instant::now(),
            work: AtomicU64::new(0),
            exceeded: Mutex::new(None),
        });
        let value = Installed::install(active.clone(), f);
        match *lock(&active.exceeded) {
            Some(e) => Err(e),
            None => Ok(value),
        }
    }
}

/// Installs a budget on the current thread for the duration of one call, uninstalling it
/// even when the call unwinds.
struct Installed;

impl Installed {
    fn install<T>(active: Arc<Active>, f: impl FnOnce(Metered<'_>) -> T) -> T {
        ACTIVE.with(|a| a.borrow_mut().push(active));
        let _installed = Installed;
        f(Metered::installed())
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        ACTIVE.with(|a| {
            a.borrow_mut().pop();
        });
    }
}

/// The budget of the current thread (the one `m` proves installed), to carry into a thread a
/// walk spawns (a walk that needs its own stack): [`Inherited::run`] there charges the same
/// budget.
pub fn inherit(m: Metered<'_>) -> Inherited {
    let _ = m;
    let active = ACTIVE.with(|a| a.borrow().last().cloned());
    // A token exists only while `run` keeps its budget installed on this thread (it cannot be
    // carried elsewhere), so there is one.
    Inherited(active.expect("a Metered token is made only where a budget is installed"))
}

/// A handle on a budget, to install on another thread, see [`inherit`].
#[derive(Clone)]
pub struct Inherited(Arc<Active>);

impl Inherited {
    /// Runs `f` on this thread under the inherited budget, with the token that proves it.
    pub fn run<T>(&self, f: impl FnOnce(Metered<'_>) -> T) -> T {
        Installed::install(self.0.clone(), f)
    }
}

/// Runs `f` under a budget without limits, for work meant to be unlimited (tests, tools that
/// judge files the user gave them) that still needs the token of an entry point. Such a budget
/// is never exceeded except by [`exhaust`] (a walk that met a structure past its size or depth
/// bound) or by the cancellation of an enclosing budget, which it takes over (see
/// [`Budget::run`]); then this panics, since `f`'s partial result cannot be trusted. Callers
/// that must answer such inputs use [`Budget::run`] and handle [`BudgetExceeded`].
pub fn unlimited<T>(f: impl FnOnce(Metered<'_>) -> T) -> T {
    match Budget::default().run(f) {
        Ok(value) => value,
        Err(e) => panic!("an unlimited budget was spent: {e}"),
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn poll(active: &Active, units: u64) -> bool {
    let mut exceeded = lock(&active.exceeded);
    if exceeded.is_some() {
        return true;
    }
    let work = active
        .work
        .fetch_add(units, Ordering::Relaxed)
        .saturating_add(units);
    if let Some(max) = active.budget.max_work
        && work > max
    {
        *exceeded = Some(BudgetExceeded::Work(max));
    } else if let Some(flag) = &active.budget.cancelled
        && flag.load(Ordering::Relaxed)
    {
        *exceeded = Some(BudgetExceeded::Cancelled);
    } else if let Some(deadline) = active.budget.deadline
        && Instant::now() >= deadline
    {
        *exceeded = Some(BudgetExceeded::Time(deadline - active.started));
    }
    exceeded.is_some()
}

/// Charges `units` of work to the current budget; true when the budget is spent and the
/// caller should stop. Without a budget installed it is always false, and in a process that
/// [requires](require) budgets it is a defect ([`unbudgeted`]).
pub fn charge(units: u64) -> bool {
    match ACTIVE.with(|a| a.borrow().last().cloned()) {
        Some(active) => poll(&active, units),
        None => {
            unbudgeted();
            false
        }
    }
}

/// Set by a process in which all work must run under a budget (the server).
static REQUIRED: AtomicBool = AtomicBool::new(false);
/// Walks that charged work outside any budget in such a process.
static UNBUDGETED: AtomicU64 = AtomicU64::new(0);

/// Declares that every walk in this process runs under a budget: from now on, work charged
/// outside [`Budget::run`] is counted ([`unbudgeted_walks`]) and logged, and in debug builds
/// (every test of the server) it panics, so a path that nobody attached a budget to fails
/// the first test that takes it. Work meant to be unlimited says so with
/// `Budget::default().run(..)`.
pub fn require() {
    REQUIRED.store(true, Ordering::Relaxed);
}

/// How many walks charged work outside any budget since [`require`].
pub fn unbudgeted_walks() -> u64 {
    UNBUDGETED.load(Ordering::Relaxed)
}

fn unbudgeted() {
    if !REQUIRED.load(Ordering::Relaxed) {
        return;
    }
    if UNBUDGETED.fetch_add(1, Ordering::Relaxed) == 0 {
        eprintln!(
            "covenant: work was charged outside any budget (a path without a budget); \
             this is a defect: {}",
            std::backtrace::Backtrace::force_capture()
        );
    }
    debug_assert!(
        false,
        "work charged outside any budget in a process that requires one"
    );
}

/// Spends the current budget at once: for a walk that met a structure it must not continue
/// into (deeper than its stack allows, larger than its size bound), whatever the limits.
pub fn exhaust() {
    if let Some(active) = ACTIVE.with(|a| a.borrow().last().cloned()) {
        lock(&active.exceeded).get_or_insert(BudgetExceeded::Size);
    }
}

/// Units of work charged so far to the current budget (0 without one): what a walk costs,
/// counted rather than timed.
pub fn work_spent() -> u64 {
    ACTIVE.with(|a| {
        a.borrow()
            .last()
            .map_or(0, |active| active.work.load(Ordering::Relaxed))
    })
}

/// True when the current budget is spent (polls the clock and the cancel flag).
pub fn spent() -> bool {
    charge(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Run in a process of its own (below): `require` is process-wide.
    #[test]
    fn required_budget_child() {
        if std::env::var_os("COVENANT_BUDGET_CHILD").is_none() {
            return;
        }
        require();
        let inside = Budget::new(None, Some(10)).run(|_| charge(1));
        assert_eq!(inside, Ok(false), "work under a budget is fine");
        assert_eq!(unbudgeted_walks(), 0);
        let _ = charge(1);
        // Release builds count and go on.
        assert_eq!(unbudgeted_walks(), 1);
        println!("counted, not stopped");
    }

    #[test]
    fn work_outside_a_required_budget_is_a_defect() {
        let child = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "budget::tests::required_budget_child",
                "--nocapture",
            ])
            .env("COVENANT_BUDGET_CHILD", "1")
            .output()
            .expect("run the child test");
        let stderr = String::from_utf8_lossy(&child.stderr);
        let stdout = String::from_utf8_lossy(&child.stdout);
        assert!(
            stderr.contains("work was charged outside any budget"),
            "{stderr}"
        );
        if cfg!(debug_assertions) {
            assert!(!child.status.success(), "debug builds stop: {stdout}");
        } else {
            assert!(stdout.contains("counted, not stopped"), "{stdout}");
        }
    }

    #[test]
    fn no_budget_never_spent() {
        assert!(!charge(u64::MAX));
        assert!(!spent());
    }

    #[test]
    fn work_budget_stops_and_reports() {
        let r = Budget::new(None, Some(10)).run(|_| {
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
        let r = Budget::new(Some(Duration::from_millis(5)), None).run(|_| while !spent() {});
        assert!(matches!(r, Err(BudgetExceeded::Time(_))));
    }

    #[test]
    fn cancel_flag_stops() {
        let flag = Arc::new(AtomicBool::new(false));
        let r = Budget::default().with_cancel(flag.clone()).run(|_| {
            flag.store(true, Ordering::Relaxed);
            spent()
        });
        assert_eq!(r, Err(BudgetExceeded::Cancelled));
    }

    #[test]
    fn an_inherited_budget_is_charged_from_another_thread() {
        let r = Budget::new(None, Some(10)).run(|m| {
            let inherited = inherit(m);
            std::thread::scope(|scope| {
                scope
                    .spawn(|| inherited.run(|_| charge(11)))
                    .join()
                    .unwrap_or(false)
            })
        });
        assert_eq!(r, Err(BudgetExceeded::Work(10)));
        assert!(!charge(1000), "nothing installed once the run is over");
    }

    #[test]
    fn an_inner_budget_stops_when_the_outer_one_is_cancelled() {
        let flag = Arc::new(AtomicBool::new(false));
        let outer = Budget::default().with_cancel(flag.clone()).run(|_| {
            Budget::new(None, Some(1_000)).run(|_| {
                flag.store(true, Ordering::Relaxed);
                spent()
            })
        });
        assert_eq!(outer, Ok(Err(BudgetExceeded::Cancelled)));
        // An inner budget with its own flag keeps it.
        let own = Arc::new(AtomicBool::new(false));
        let outer = Budget::default()
            .with_cancel(flag.clone())
            .run(|_| Budget::default().with_cancel(own.clone()).run(|_| spent()));
        assert_eq!(outer, Ok(Ok(false)));
    }

    #[test]
    fn exhaust_spends_even_an_unlimited_budget() {
        let r = Budget::default().run(|_| {
            exhaust();
            spent()
        });
        assert_eq!(r, Err(BudgetExceeded::Size));
        exhaust();
        assert!(!spent(), "nothing installed, nothing spent");
    }

    #[test]
    fn an_unlimited_budget_is_installed_and_answers_its_value() {
        assert!(!unlimited(|_| charge(u64::MAX / 2)), "no limit to reach");
        assert_eq!(unlimited(|_| work_spent()), 0);
        assert_eq!(
            unlimited(|_| {
                charge(5);
                work_spent()
            }),
            5,
            "the work is counted"
        );
        let exhausted = std::panic::catch_unwind(|| unlimited(|_| exhaust()));
        assert!(exhausted.is_err(), "a walk past its bounds spends it");
    }

    #[test]
    fn within_budget_returns_value() {
        assert_eq!(Budget::new(None, Some(100)).run(|_| 7), Ok(7));
        // and the budget is uninstalled afterwards
        assert!(!charge(1000));
    }
}
