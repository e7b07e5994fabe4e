//! Fork awareness (semantics §8). After `fork`, the child has one thread: worker threads of the
//! parent are gone, io_uring instances are shared with the parent, and locks other threads held
//! stay held. The driver notices a fork by this generation counter, which the child side of
//! every `fork` increments, and gives the child backends of its own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Once, RwLock, RwLockReadGuard, RwLockWriteGuard};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static WATCH: Once = Once::new();

/// Short critical sections that must not be cut in two by a `fork` (a lock held at that
/// moment would stay held in the child forever) take this as readers; the `pthread_atfork`
/// prepare handler takes it as the writer ([`crate::Driver::hold_for_fork`]), so a fork happens
/// only between such sections. Never held across a wait.
static SECTIONS: RwLock<()> = RwLock::new(());

/// Enters a section a `fork` may not cut (see [`SECTIONS`]).
pub(crate) fn section() -> RwLockReadGuard<'static, ()> {
    crate::sync::read(&SECTIONS)
}

/// Holds off every [`section`] (until dropped): taken just before `fork`.
pub(crate) fn exclude_sections() -> RwLockWriteGuard<'static, ()> {
    crate::sync::write(&SECTIONS)
}

extern "C" fn in_child() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// How many forks lie between this process and the one that first asked: 0 in the process
/// that first called it, more in its (grand)children. The first call starts counting.
pub fn generation() -> u64 {
    WATCH.call_once(|| {
        // SAFETY: registers a handler that only touches an atomic. pthread_atfork fails only
        // for lack of memory; then forks go unnoticed, as before this module existed.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    GENERATION.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_sees_a_new_generation() {
        let parent = generation();
        // SAFETY: the child only reads an atomic and calls _exit.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0);
        if pid == 0 {
            let code = if generation() == parent + 1 { 0 } else { 1 };
            // SAFETY: leaves the child without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for the child made above.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "{status:#x}");
        assert_eq!(generation(), parent);
    }
}
