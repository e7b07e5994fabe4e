//! Diagnostics, for the asking (semantics §8). The library reports through `tracing` events
//! (target `hipfile`), each distinct message once: a loop hitting the same condition should not
//! flood the log. With no subscriber listening, nothing is written anywhere, which is what a
//! library owes an application whose descriptor 2 may be a data file or a pipe nobody reads.
//!
//! A Rust program installs its own subscriber. The C ABI and the `hipfile` tool call
//! [`install`], which listens when `HIPFILE_LOG` asks (read once):
//! - unset, empty, `0`, `off`, `false`, `none`: nothing (the library's default);
//! - `1`, `on`, `true`, `stderr`: standard error, at level `info`;
//! - `error`, `warn`, `info`, `debug`, `trace`: standard error, at that level;
//! - anything else: a file path, appended to (created if missing), at level `info`.
//!
//! A write that fails (a closed pipe, a full disk) is dropped: a log line never fails I/O, and a
//! closed pipe never raises `SIGPIPE` in the application.

use std::collections::HashSet;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, RwLock};

use tracing::Level;

use crate::sync::{read, write};

static SEEN: RwLock<Option<HashSet<String>>> = RwLock::new(None);

/// Where diagnostics go.
#[derive(Clone, Debug)]
pub enum Sink {
    /// Nowhere.
    Off,
    /// Standard error (descriptor 2), at a level.
    Stderr(Level),
    /// A file the library opened itself, at `info`.
    File(Arc<OwnedFd>),
}

impl Sink {
    /// The sink `HIPFILE_LOG`'s value names; `default` when it is unset.
    pub fn from_setting(value: Option<&str>, default: fn() -> Sink) -> Sink {
        let Some(value) = value else { return default() };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "off" | "false" | "none" => Sink::Off,
            "1" | "on" | "true" | "stderr" | "info" => Sink::Stderr(Level::INFO),
            "error" => Sink::Stderr(Level::ERROR),
            "warn" => Sink::Stderr(Level::WARN),
            "debug" => Sink::Stderr(Level::DEBUG),
            "trace" => Sink::Stderr(Level::TRACE),
            _ => open_append(value.trim()).map_or(Sink::Off, |fd| Sink::File(Arc::new(fd))),
        }
    }

    fn fd(&self) -> Option<RawFd> {
        match self {
            Sink::Off => None,
            Sink::Stderr(_) => Some(2),
            Sink::File(fd) => Some(fd.as_raw_fd()),
        }
    }

    fn level(&self) -> Level {
        match self {
            Sink::Stderr(level) => *level,
            _ => Level::INFO,
        }
    }
}

/// Listens to the library's events where `HIPFILE_LOG` asks, with `default` when it is unset
/// (the `hipfile` tool passes `|| Sink::Stderr(Level::INFO)`; the C ABI, `|| Sink::Off`).
/// Only the first call counts; an application's own global subscriber takes precedence.
pub fn install(default: fn() -> Sink) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let sink = Sink::from_setting(std::env::var("HIPFILE_LOG").ok().as_deref(), default);
        if sink.fd().is_none() {
            return;
        }
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(sink.level())
            .without_time()
            .with_level(false)
            .with_target(true)
            .with_ansi(false)
            .with_writer(move || QuietWriter(sink.clone()))
            .finish();
        let _ = tracing::subscriber::set_global_default(subscriber);
    });
}

/// Reports `message` (target `hipfile`, level `info`) the first time this process sees it.
pub fn log_once(message: &str) {
    log_once_keyed(message, || message.to_owned());
}

/// Reports `message()` the first time this process sees `key`. With nobody listening it costs
/// one check; then seen keys cost a shared lock and a lookup, and `message` is only built the
/// first time: cheap enough for an I/O path that keeps meeting the same condition.
pub fn log_once_keyed(key: &str, message: impl FnOnce() -> String) {
    if !tracing::enabled!(target: "hipfile", Level::INFO) {
        return;
    }
    let seen = |s: &Option<HashSet<String>>| s.as_ref().is_some_and(|s| s.contains(key));
    if seen(&read(&SEEN)) {
        return;
    }
    if write(&SEEN).get_or_insert_with(HashSet::new).insert(key.to_owned()) {
        tracing::info!(target: "hipfile", "{}", message());
    }
}

/// The formatter's writer: [`write_quietly`] to the sink's descriptor.
struct QuietWriter(Sink);

impl io::Write for QuietWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(fd) = self.0.fd() {
            write_quietly(fd, buf);
        }
        Ok(buf.len()) // a lost line is not the application's error
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn open_append(path: &str) -> Option<OwnedFd> {
    let path = CString::new(path).ok()?;
    let flags = libc::O_WRONLY | libc::O_APPEND | libc::O_CREAT | libc::O_CLOEXEC;
    // SAFETY: `path` is NUL-terminated; the mode is passed as O_CREAT requires.
    let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644 as libc::c_uint) };
    // SAFETY: `open` just returned this descriptor and nothing else owns it.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Writes `bytes` to `fd`, dropping them on any error. `SIGPIPE` is blocked in this thread
/// around the write, and one it raised is consumed, so a closed pipe is an `EPIPE` here rather
/// than the application's signal.
fn write_quietly(fd: RawFd, bytes: &[u8]) {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut pipe: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut old: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: a valid sigset_t pointer.
    unsafe { libc::sigemptyset(&mut pipe) };
    // SAFETY: as above.
    unsafe { libc::sigaddset(&mut pipe, libc::SIGPIPE) };
    // SAFETY: valid sigset_t pointers; changes this thread's mask only, restored below.
    let blocked = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old) } == 0;
    let mut rest = bytes;
    let mut broke = false;
    while !rest.is_empty() {
        // SAFETY: `rest` is a valid buffer of its length.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        match n {
            n if n > 0 => rest = &rest[n as usize..],
            _ if io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => {
                broke = io::Error::last_os_error().raw_os_error() == Some(libc::EPIPE);
                break;
            }
        }
    }
    if blocked {
        // SAFETY: `old` holds the mask saved above.
        let was_blocked = unsafe { libc::sigismember(&old, libc::SIGPIPE) } == 1;
        if broke && !was_blocked {
            let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
            // SAFETY: valid pointers; takes the SIGPIPE this write raised, if it is pending.
            unsafe { libc::sigtimedwait(&pipe, std::ptr::null_mut(), &zero) };
        }
        // SAFETY: restores this thread's mask.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings() {
        assert!(matches!(Sink::from_setting(None, || Sink::Off), Sink::Off));
        assert!(matches!(Sink::from_setting(None, || Sink::Stderr(Level::INFO)), Sink::Stderr(Level::INFO)));
        for off in ["", "0", "off", "OFF", "false", "none"] {
            assert!(matches!(Sink::from_setting(Some(off), || Sink::Stderr(Level::INFO)), Sink::Off), "{off}");
        }
        for on in ["1", "on", "true", "stderr", "Stderr", "info"] {
            assert!(matches!(Sink::from_setting(Some(on), || Sink::Off), Sink::Stderr(Level::INFO)), "{on}");
        }
        assert!(matches!(Sink::from_setting(Some("debug"), || Sink::Off), Sink::Stderr(Level::DEBUG)));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let sink = Sink::from_setting(path.to_str(), || Sink::Off);
        write_quietly(sink.fd().unwrap(), b"one\n");
        assert_eq!(std::fs::read(&path).unwrap(), b"one\n");
        let missing = dir.path().join("no/such/dir/log");
        assert!(matches!(Sink::from_setting(missing.to_str(), || Sink::Stderr(Level::INFO)), Sink::Off));
    }

    #[test]
    fn a_closed_pipe_neither_fails_nor_signals() {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        // With SIGPIPE at its default action (Rust programs start with it ignored), a raised
        // signal would end this test process.
        // SAFETY: installs the default action, restored below; no handler runs.
        let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        write_quietly(w.as_raw_fd(), b"lost\n");
        write_quietly(w.as_raw_fd(), b"lost again\n");
        // SAFETY: restores the previous action.
        unsafe { libc::signal(libc::SIGPIPE, previous) };
    }
}
