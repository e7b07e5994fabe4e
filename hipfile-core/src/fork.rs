//! Fork awareness (semantics §8). After `fork`, the child has one thread: worker threads of the
//! parent are gone, io_uring instances are shared with the parent, and locks other threads held
//! stay held. The driver notices a fork by this generation counter, which the child side of
//! every `fork` increments, and gives the child backends of its own.

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};

static GENERATION: AtomicU64 = AtomicU64::new(0);
static WATCH: Once = Once::new();

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
