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

/// The processor the calling thread last ran on, from the kernel's status line for it. Not
/// `sched_getcpu`: `rustix` answers it through the vDSO, whose lookup read unmapped memory and
/// crashed the process where the vDSO is hidden (under valgrind).
#[cfg(target_os = "linux")]
fn current_processor() -> Option<usize> {
    processor_in_stat(&std::fs::read_to_string("/proc/thread-self/stat").ok()?)
}

/// Field 39 of a `/proc/<pid>/stat` line. The second field, the command name in parentheses,
/// may itself hold spaces and parentheses, so fields are counted after its last `)`.
#[cfg(any(target_os = "linux", test))]
fn processor_in_stat(stat: &str) -> Option<usize> {
    let (_, after_name) = stat.rsplit_once(')')?;
    after_name.split_whitespace().nth(39 - 3)?.parse().ok()
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

    #[test]
    fn the_processor_is_read_after_the_command_name() {
        let stat = "6215 (a) b) c) R 6212 6212 1185 0 -1 4194304 127 0 0 0 0 0 0 0 20 0 1 0 \
                    795233 3133440 379 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 3 0 0 0";
        assert_eq!(processor_in_stat(stat), Some(3));
        assert_eq!(processor_in_stat("6215 (cut short) R 1 2"), None);
        assert_eq!(processor_in_stat("no name here"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_current_processor_is_one_the_thread_may_use() {
        let here = current_processor().expect("a processor");
        assert!(processors().contains(&here), "{here}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_moved_off_a_processor_runs_elsewhere_until_given_it_back() {
        use rustix::thread::{sched_getaffinity, sched_setaffinity};
        if sched_getaffinity(None).expect("affinity").count() < 2 {
            println!("one processor: nothing to move to");
            return;
        }
        let processor = || current_processor().expect("a processor");
        std::thread::spawn(move || {
            let here = processor();
            let allowed = move_off(here).expect("moved");
            // While restricted, the thread cannot be on `here`, whatever else runs.
            assert_ne!(processor(), here);
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
