//! The mock GPU across `fork`: its tables (allocations, streams, events, faults) sit behind
//! locks, and a lock another thread held when the process forked stays held in the child
//! forever. A real runtime does not work in a forked child at all; the mock does, so that the
//! library's own fork handling can be tested (a child whose parent had reads in flight).
//!
//! Work on those tables happens inside a [`Pass`] (the mock HIP runtime's entry points, and
//! copies run by stream threads); [`watch`] registers `pthread_atfork` handlers that hold
//! new passes off and wait for those in progress before the fork. A pass is never held across
//! a wait for another thread (synchronizing entry points take none), else a fork could wait
//! for it forever. Passes nest on one thread.

use std::cell::Cell;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};

/// Threads inside a pass.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// A fork is about to happen: no new pass begins.
static FORKING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Passes this thread is inside (nested).
    static DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// Work on the mock's tables in progress, until dropped.
pub struct Pass {
    /// Not `Send`: a pass ends on the thread that began it.
    _thread: std::marker::PhantomData<*const ()>,
}

/// Begins a pass, waiting while a fork is being made.
pub fn pass() -> Pass {
    let depth = DEPTH.with(Cell::get);
    if depth == 0 {
        loop {
            while FORKING.load(SeqCst) {
                std::thread::yield_now();
            }
            ACTIVE.fetch_add(1, SeqCst);
            if !FORKING.load(SeqCst) {
                break;
            }
            ACTIVE.fetch_sub(1, SeqCst); // the fork goes first
        }
    }
    DEPTH.with(|d| d.set(depth + 1));
    Pass { _thread: std::marker::PhantomData }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let depth = DEPTH.with(Cell::get) - 1;
        DEPTH.with(|d| d.set(depth));
        if depth == 0 {
            ACTIVE.fetch_sub(1, SeqCst);
        }
    }
}

/// `pthread_atfork` prepare: no new pass, and those in progress (other than the forking
/// thread's own) end first.
extern "C" fn before_fork() {
    FORKING.store(true, SeqCst);
    let own = DEPTH.try_with(|d| usize::from(d.get() > 0)).unwrap_or(0);
    while ACTIVE.load(SeqCst) > own {
        std::thread::yield_now();
    }
}

/// `pthread_atfork` parent and child: passes may begin again.
extern "C" fn after_fork() {
    FORKING.store(false, SeqCst);
}

/// Registers the fork handlers, once. Handlers registered later run their prepare step first:
/// the library's (which waits for its own threads' short sections, some of which call the
/// mock) must be registered after these, so the mock HIP runtime calls this when it is loaded.
pub fn watch() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: the handlers only touch atomics and this thread's counter.
        unsafe { libc::pthread_atfork(Some(before_fork), Some(after_fork), Some(after_fork)) };
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_nest_and_a_fork_waits_for_them() {
        watch();
        let outer = pass();
        let inner = pass();
        drop(inner);
        drop(outer);
        let (tx, rx) = std::sync::mpsc::channel();
        let held = std::thread::spawn(move || {
            let _pass = pass();
            tx.send(()).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
        });
        rx.recv().unwrap();
        let started = std::time::Instant::now();
        // SAFETY: the child only calls _exit.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            // SAFETY: leaves the child at once.
            unsafe { libc::_exit(0) };
        }
        assert!(started.elapsed() >= std::time::Duration::from_millis(30), "the fork waited for the pass");
        held.join().unwrap();
        let mut status = 0;
        // SAFETY: waits for the child made above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    }
}
