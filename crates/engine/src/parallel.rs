//! Short CPU-bound work shared with a helper thread.
//!
//! Linux starts a new thread on its parent's processor and moves it to an idle one only when
//! it next balances load. Measured on a 2-core machine, two threads of 3 ms of work each took
//! 6.5 ms together in seven runs of eight, the other core idle. A command that compiles two
//! files and judges them in tens of milliseconds lost most of its parallelism that way, so a
//! helper thread moves itself off its parent's processor first, and then gives the scheduler
//! back every processor it may use.

use std::thread::{Scope, ScopedJoinHandle};

/// `scope.spawn(work)`, on another processor than the caller's when there is one.
pub fn spawn_beside<'scope, T: Send + 'scope>(
    scope: &'scope Scope<'scope, '_>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    let parent = current_processor();
    scope.spawn(move || {
        leave(parent);
        work()
    })
}

#[cfg(target_os = "linux")]
fn current_processor() -> Option<usize> {
    Some(rustix::thread::sched_getcpu())
}

/// Moves the calling thread off `parent`, then lets it run anywhere it could before. A failure
/// of either call leaves the thread where the scheduler put it: only the speed is at stake.
#[cfg(target_os = "linux")]
fn leave(parent: Option<usize>) {
    if let Some(allowed) = parent.and_then(move_off) {
        let _ = rustix::thread::sched_setaffinity(None, &allowed);
    }
}

/// Restricts the calling thread to its processors other than `parent`, which moves it off
/// `parent` before the call returns; answers the processors it may use, to be given back,
/// when it did.
#[cfg(target_os = "linux")]
fn move_off(parent: usize) -> Option<rustix::thread::CpuSet> {
    use rustix::thread::{sched_getaffinity, sched_setaffinity};
    let allowed = sched_getaffinity(None).ok()?;
    if allowed.count() < 2 || !allowed.is_set(parent) {
        return None;
    }
    let mut elsewhere = allowed;
    elsewhere.unset(parent);
    sched_setaffinity(None, &elsewhere).ok()?;
    Some(allowed)
}

#[cfg(not(target_os = "linux"))]
fn current_processor() -> Option<usize> {
    None
}

#[cfg(not(target_os = "linux"))]
fn leave(_parent: Option<usize>) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_runs_its_work_and_keeps_every_processor() {
        let allowed = processors();
        let (value, helper_allowed) = std::thread::scope(|scope| {
            let helper = spawn_beside(scope, || (6 * 7, processors()));
            helper.join().expect("the helper finishes")
        });
        assert_eq!(value, 42);
        // Moved, then given back the whole mask: later balancing is the scheduler's again.
        assert_eq!(helper_allowed, allowed);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_moved_off_a_processor_runs_elsewhere_until_given_it_back() {
        use rustix::thread::{sched_getaffinity, sched_getcpu, sched_setaffinity};
        if sched_getaffinity(None).expect("affinity").count() < 2 {
            println!("one processor: nothing to move to");
            return;
        }
        std::thread::spawn(|| {
            let here = sched_getcpu();
            let allowed = move_off(here).expect("moved");
            // While restricted, the thread cannot be on `here`, whatever else runs.
            assert_ne!(sched_getcpu(), here);
            sched_setaffinity(None, &allowed).expect("given back");
            // A processor outside the thread's set is not one to move off.
            let mut outside = 0;
            while allowed.is_set(outside) {
                outside += 1;
            }
            assert!(move_off(outside).is_none());
        })
        .join()
        .expect("the thread finishes");
    }

    fn processors() -> Vec<usize> {
        #[cfg(target_os = "linux")]
        {
            let set = rustix::thread::sched_getaffinity(None).expect("affinity");
            (0..1024).filter(|&i| set.is_set(i)).collect()
        }
        #[cfg(not(target_os = "linux"))]
        {
            Vec::new()
        }
    }
}
