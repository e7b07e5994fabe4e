//! io_uring with the lane's staging buffers registered, for direct (`O_DIRECT`) I/O: with
//! fixed buffers the kernel does not pin the pages again for every request.
//!
//! Where io_uring is missing, disabled (`kernel.io_uring_disabled`, seccomp), lacks the fixed
//! opcodes, or refuses the registration (the memlock limit), the lane goes without and the
//! file I/O uses `pread`/`pwrite`. The first refusal switches the attempt off for the backend.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hipfile_core::io::{pread, pwrite};
use hipfile_core::{Error, Result};

use io_uring::{IoUring, Probe, opcode, types};

/// The memory side of one file transfer: filled by a read, sent by a write.
pub(crate) enum IoBuf<'a> {
    Read(&'a mut [u8]),
    Write(&'a [u8]),
}

impl IoBuf<'_> {
    pub(crate) fn len(&self) -> usize {
        match self {
            IoBuf::Read(b) => b.len(),
            IoBuf::Write(b) => b.len(),
        }
    }

    pub(crate) fn is_write(&self) -> bool {
        matches!(self, IoBuf::Write(_))
    }

    /// Bytes `[from, to)` of the buffer, the same way round.
    pub(crate) fn part(&mut self, from: usize, to: usize) -> IoBuf<'_> {
        match self {
            IoBuf::Read(b) => IoBuf::Read(&mut b[from..to]),
            IoBuf::Write(b) => IoBuf::Write(&b[from..to]),
        }
    }

    /// One `pread` or `pwrite` of the whole buffer at `offset`.
    pub(crate) fn syscall(self, fd: i32, offset: u64) -> Result<usize> {
        match self {
            IoBuf::Read(b) => pread(fd, b, offset),
            IoBuf::Write(b) => pwrite(fd, b, offset),
        }
    }
}

/// A small ring whose fixed buffers are a lane's two stages.
pub(crate) struct LaneRing {
    ring: IoUring,
    /// `(start, len)` of each registered buffer, in registration order.
    buffers: [(usize, usize); 2],
    /// The `user_data` of the request in flight.
    tag: u64,
    /// The kernel refused to take a request: syscalls from now on.
    broken: bool,
}

impl std::fmt::Debug for LaneRing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LaneRing").field("buffers", &self.buffers).finish_non_exhaustive()
    }
}

/// Whether io_uring is still worth trying, and how many requests it has served.
#[derive(Debug)]
pub(crate) struct UringState {
    enabled: AtomicBool,
    registered: AtomicU64,
    pub(crate) ops: AtomicU64,
}

impl UringState {
    pub(crate) fn new(enabled: bool) -> Self {
        UringState { enabled: AtomicBool::new(enabled), registered: AtomicU64::new(0), ops: AtomicU64::new(0) }
    }

    /// A ring for a lane whose stages are `buffers`, or `None` (and io_uring off from now on)
    /// when the kernel or the memlock limit does not allow it.
    pub(crate) fn ring_for(&self, buffers: [(usize, usize); 2]) -> Option<LaneRing> {
        if !self.enabled.load(Ordering::Relaxed) {
            return None;
        }
        let bytes: u64 = buffers.iter().map(|b| b.1 as u64).sum();
        let already = self.registered.load(Ordering::Relaxed);
        let ring =
            fits_memlock(already, bytes, memlock_limit(), privileged()).then(|| LaneRing::new(buffers)).flatten();
        match ring {
            Some(ring) => {
                self.registered.fetch_add(bytes, Ordering::Relaxed);
                Some(ring)
            }
            None => {
                self.enabled.store(false, Ordering::Relaxed);
                None
            }
        }
    }
}

/// Whether registering `extra` more bytes stays within the memlock limit (`None`: unlimited).
/// Privileged processes (`CAP_IPC_LOCK`; approximated as root) are not limited.
fn fits_memlock(already: u64, extra: u64, limit: Option<u64>, privileged: bool) -> bool {
    privileged || limit.is_none_or(|l| already.saturating_add(extra) <= l)
}

fn memlock_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `lim` is writable.
    if unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut lim) } != 0 || lim.rlim_cur == libc::RLIM_INFINITY {
        return None;
    }
    Some(lim.rlim_cur)
}

fn privileged() -> bool {
    // SAFETY: no preconditions.
    unsafe { libc::geteuid() == 0 }
}

impl LaneRing {
    fn new(buffers: [(usize, usize); 2]) -> Option<LaneRing> {
        let ring = IoUring::new(4).ok()?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe).ok()?;
        if !probe.is_supported(opcode::ReadFixed::CODE) || !probe.is_supported(opcode::WriteFixed::CODE) {
            return None;
        }
        let iovecs = buffers.map(|(start, len)| libc::iovec { iov_base: start as *mut libc::c_void, iov_len: len });
        // SAFETY: the stages are pinned host memory owned by the lane, which owns this ring and
        // drops it (unregistering) before freeing them.
        unsafe { ring.submitter().register_buffers(&iovecs) }.ok()?;
        Some(LaneRing { ring, buffers, tag: 0, broken: false })
    }

    fn index_of(&self, ptr: *const u8, len: usize) -> Option<u16> {
        let (p, end) = (ptr as usize, ptr as usize + len);
        self.buffers.iter().position(|&(start, blen)| p >= start && end <= start + blen).map(|i| i as u16)
    }

    /// One read (`write == false`) or write at `offset` through a registered buffer, waited for.
    /// `None` when the range is not inside a registered buffer, the ring is out of use, or the
    /// kernel canceled the request before running it: the caller then uses a syscall. Once the
    /// request is queued, this returns only after its completion.
    ///
    /// The wait ends only with this request's completion. `io_uring_enter` returns as soon as
    /// a signal interrupts its wait, with the submission counted and no completion yet; a
    /// caller that took that as done would reuse the buffer while the kernel still fills or
    /// drains it, and read the late completion as its next request's.
    ///
    /// The buffer is borrowed for the whole call, which returns only once the kernel is done
    /// with it.
    pub(crate) fn transfer(
        &mut self,
        state: &UringState,
        fd: i32,
        buf: &mut IoBuf<'_>,
        offset: u64,
    ) -> Option<Result<usize>> {
        if self.broken {
            return None;
        }
        let len = buf.len();
        let len32 = u32::try_from(len).ok()?;
        let entry = match buf {
            IoBuf::Read(b) => {
                let index = self.index_of(b.as_ptr(), len)?;
                opcode::ReadFixed::new(types::Fd(fd), b.as_mut_ptr(), len32, index).offset(offset).build()
            }
            IoBuf::Write(b) => {
                let index = self.index_of(b.as_ptr(), len)?;
                opcode::WriteFixed::new(types::Fd(fd), b.as_ptr(), len32, index).offset(offset).build()
            }
        };
        self.tag = self.tag.wrapping_add(1);
        let entry = entry.user_data(self.tag);
        // SAFETY: the entry names a range of a registered buffer, borrowed (`buf`) until its
        // completion is reaped below, before returning.
        if unsafe { self.ring.submission().push(&entry) }.is_err() {
            return None; // the queue is empty between calls; a full one means misuse: use a syscall
        }
        let mut in_kernel = false;
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                if cqe.user_data() != self.tag {
                    continue; // not ours (none can be: every request is reaped before the next)
                }
                let res = cqe.result();
                if res == -libc::ECANCELED {
                    // The kernel dropped the request before running it: a signal made it fail
                    // to start an io-wq worker (seen at 10 kHz SIGALRM). The buffer is free
                    // again; a syscall does the transfer.
                    return None;
                }
                state.ops.fetch_add(1, Ordering::Relaxed);
                return Some(if res < 0 { Err(Error::Os(-res)) } else { Ok(res as usize) });
            }
            match self.ring.submit_and_wait(1) {
                Ok(submitted) => in_kernel |= submitted > 0,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINTR | libc::EAGAIN | libc::EBUSY)) => {}
                Err(_) if in_kernel => {
                    // The kernel may still use the buffer: wait for the completion whatever
                    // the wait says (no error but the ones above exists for a ring in use).
                    std::thread::yield_now();
                }
                Err(e) => {
                    // io_uring_enter reports a count once it submitted anything, so nothing is
                    // in flight: the ring goes out of use.
                    self.broken = true;
                    return Some(Err(Error::Os(e.raw_os_error().unwrap_or(libc::EIO))));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memlock_rule() {
        assert!(fits_memlock(0, 8 << 20, Some(8 << 20), false));
        assert!(!fits_memlock(4 << 20, 8 << 20, Some(8 << 20), false));
        assert!(fits_memlock(4 << 20, 8 << 20, Some(8 << 20), true));
        assert!(fits_memlock(u64::MAX, 1, None, false));
    }
}
