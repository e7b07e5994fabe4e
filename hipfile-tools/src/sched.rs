//! What the scheduler did to a bench run's threads, from Linux's per-thread statistics
//! (`/proc/<tid>/schedstat`: time on a CPU, time runnable but waiting for one, times run): the
//! question a slow run of many callers asks is whether its threads were waiting for CPUs.
//! Where the kernel keeps no such statistics (no `schedstat` files), the waits read 0.

use std::collections::HashMap;
use std::path::Path;

/// How long this thread has waited runnable for a CPU, in nanoseconds.
pub(crate) fn my_wait_ns() -> Option<u64> {
    wait_in(Path::new("/proc/thread-self/schedstat"))
}

/// The process's threads' CPU waits and preemptions at one moment.
pub(crate) struct Snapshot {
    waits: HashMap<u32, u64>,
    switches: u64,
}

impl Snapshot {
    pub(crate) fn now() -> Snapshot {
        Snapshot { waits: waits_by_thread(), switches: involuntary_switches() }
    }

    /// Since this snapshot: the CPU wait (ms) of the threads alive then and now, plus
    /// `ended_ns` for those started and ended in between (which say their own), and the
    /// preemptions of every thread.
    pub(crate) fn since(&self, ended_ns: u64) -> (f64, u64) {
        let waited = waited_between(&self.waits, &waits_by_thread()) + ended_ns;
        (waited as f64 / 1e6, involuntary_switches().saturating_sub(self.switches))
    }
}

/// Every thread of the process now, and how long each has waited for a CPU (ns).
fn waits_by_thread() -> HashMap<u32, u64> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return HashMap::new() };
    tasks
        .filter_map(|t| {
            let t = t.ok()?;
            let tid = t.file_name().to_str()?.parse().ok()?;
            Some((tid, wait_in(&t.path().join("schedstat"))?))
        })
        .collect()
}

/// Wait added between two snapshots by the threads alive at both (ns).
fn waited_between(before: &HashMap<u32, u64>, after: &HashMap<u32, u64>) -> u64 {
    after.iter().filter_map(|(tid, &a)| Some(a.saturating_sub(*before.get(tid)?))).sum()
}

/// Times the process's threads, living and ended, were switched out while still runnable.
fn involuntary_switches() -> u64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes at most one rusage, into memory that holds one.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    // SAFETY: a rusage is plain integers, so the zeroed value is one (and getrusage filled it).
    let usage = unsafe { usage.assume_init() };
    if ok { usage.ru_nivcsw as u64 } else { 0 }
}

/// The wait (ns) a schedstat file says.
fn wait_in(schedstat: &Path) -> Option<u64> {
    wait_ns(&std::fs::read_to_string(schedstat).ok()?)
}

/// The second field of a schedstat line: nanoseconds spent runnable on a run queue.
fn wait_ns(line: &str) -> Option<u64> {
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_wait_field() {
        assert_eq!(wait_ns("123 456 7\n"), Some(456));
        assert_eq!(wait_ns("123"), None);
        assert_eq!(wait_ns("1 x 2"), None);
    }

    #[test]
    fn only_threads_alive_at_both_snapshots_count() {
        let before = HashMap::from([(1, 100), (2, 50)]);
        let after = HashMap::from([(1, 160), (3, 1_000)]);
        assert_eq!(waited_between(&before, &after), 60);
    }

    #[test]
    fn this_thread_has_statistics_where_the_kernel_keeps_them() {
        if std::path::Path::new("/proc/thread-self/schedstat").exists() {
            assert!(my_wait_ns().is_some());
            assert!(!waits_by_thread().is_empty());
        }
    }
}
