//! Fault injection: failures a test arms on a `MockGpu` (copies) and on the mock data paths
//! (file system calls), to drive every error path without real hardware misbehaving.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use hipfile_core::sync::lock;
use hipfile_core::{Error, HipError, Result};

/// The faults armed on one mock GPU and the data paths built on it. Unarmed, each check is
/// one relaxed atomic load.
#[derive(Debug, Default)]
pub struct Faults {
    armed: AtomicBool,
    copies: AtomicU64,
    gathers: AtomicU64,
    events_recorded: AtomicU64,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    fail_copy: Option<(u64, HipError)>,
    copy_delay: Option<Duration>,
    short_io: Option<usize>,
    eio_at: Option<u64>,
    eintr: u32,
    no_path: Option<i32>,
    refuse_host_register: Option<HipError>,
    no_stream_waits: bool,
}

impl Faults {
    fn arm(&self, f: impl FnOnce(&mut State)) {
        f(&mut lock(&self.state));
        self.armed.store(true, Ordering::Release);
    }

    fn state(&self) -> Option<std::sync::MutexGuard<'_, State>> {
        self.armed.load(Ordering::Acquire).then(|| lock(&self.state))
    }

    /// The `nth` copy from now (1 = the next one) fails with `error`.
    pub fn fail_copy(&self, nth: u64, error: HipError) {
        let at = self.copies.load(Ordering::Relaxed) + nth.max(1);
        self.arm(|s| s.fail_copy = Some((at, error)));
    }

    /// Every copy sleeps `delay` first.
    pub fn delay_copies(&self, delay: Duration) {
        self.arm(|s| s.copy_delay = Some(delay));
    }

    /// Each file read or write system call moves at most `max` bytes (short reads and writes).
    pub fn short_io(&self, max: usize) {
        self.arm(|s| s.short_io = Some(max.max(1)));
    }

    /// A file system call that covers byte `offset` of the file fails with `EIO`.
    pub fn eio_at(&self, offset: u64) {
        self.arm(|s| s.eio_at = Some(offset));
    }

    /// The next `count` file system calls fail with `EINTR`.
    pub fn eintr_storm(&self, count: u32) {
        self.arm(|s| s.eintr = count);
    }

    /// The direct data path fails every request with `errno` (`ENODEV`, `EREMOTEIO`: "no
    /// path", which the driver retries on bounce; anything else is returned).
    pub fn fail_direct_path(&self, errno: i32) {
        self.arm(|s| s.no_path = Some(errno));
    }

    /// `hipHostRegister` fails with `error` (as where a runtime cannot pin such memory).
    pub fn refuse_host_register(&self, error: HipError) {
        self.arm(|s| s.refuse_host_register = Some(error));
    }

    /// Stream waits (`hipStreamWaitValue32`) fail with `hipErrorNotSupported`, as on a runtime
    /// or device without stream memory operations.
    pub fn refuse_stream_waits(&self) {
        self.arm(|s| s.no_stream_waits = true);
    }

    /// Disarms everything.
    pub fn clear(&self) {
        *lock(&self.state) = State::default();
        self.armed.store(false, Ordering::Release);
    }

    /// Copies performed so far.
    pub fn copy_count(&self) -> u64 {
        self.copies.load(Ordering::Relaxed)
    }

    /// Gathered copies queued so far (each counts its pieces among the copies too).
    pub fn gather_count(&self) -> u64 {
        self.gathers.load(Ordering::Relaxed)
    }

    pub(crate) fn gathered(&self) {
        self.gathers.fetch_add(1, Ordering::Relaxed);
    }

    /// Events recorded on streams so far.
    pub fn events_recorded(&self) -> u64 {
        self.events_recorded.load(Ordering::Relaxed)
    }

    pub(crate) fn event_recorded(&self) {
        self.events_recorded.fetch_add(1, Ordering::Relaxed);
    }

    /// Called before each copy.
    pub(crate) fn before_copy(&self) -> Result<(), HipError> {
        let n = self.copies.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(mut s) = self.state() else { return Ok(()) };
        if let Some(delay) = s.copy_delay {
            std::thread::sleep(delay);
        }
        match s.fail_copy {
            Some((at, error)) if at == n => {
                s.fail_copy = None;
                Err(error)
            }
            _ => Ok(()),
        }
    }

    /// Called before a file system call of `len` bytes at `offset`: how many bytes it may
    /// move, or the error it fails with.
    pub(crate) fn before_file_io(&self, offset: u64, len: usize) -> Result<usize> {
        let Some(mut s) = self.state() else { return Ok(len) };
        if s.eintr > 0 {
            s.eintr -= 1;
            return Err(Error::Os(libc::EINTR));
        }
        let len = s.short_io.map_or(len, |max| len.min(max));
        match s.eio_at {
            Some(at) if at >= offset && at - offset < len as u64 => Err(Error::Os(libc::EIO)),
            _ => Ok(len),
        }
    }

    /// Called before a host registration.
    pub(crate) fn before_stream_wait(&self) -> Result<(), HipError> {
        match self.state().is_some_and(|s| s.no_stream_waits) {
            true => Err(HipError::NOT_SUPPORTED),
            false => Ok(()),
        }
    }

    pub(crate) fn before_host_register(&self) -> Result<(), HipError> {
        self.state().and_then(|s| s.refuse_host_register).map_or(Ok(()), Err)
    }

    /// Called before the p2p path serves a request.
    pub(crate) fn before_direct(&self) -> Result<()> {
        match self.state().and_then(|s| s.no_path) {
            Some(errno) => Err(Error::Os(errno)),
            None => Ok(()),
        }
    }
}
