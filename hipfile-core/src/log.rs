//! Diagnostics, for the asking. A library must not write to a descriptor it was not given: the
//! application may have closed stderr and reused descriptor 2 for a data file, or made it a
//! pipe nobody reads. So nothing is written unless `HIPFILE_LOG` asks (read once, at the first
//! message):
//! - unset, empty, `0`, `off`, `false`, `none`: nothing (the default for the library);
//! - `1`, `on`, `true`, `stderr`: standard error;
//! - anything else: a file path, appended to (created if missing).
//!
//! Each distinct message is written once: a loop hitting the same condition should not flood
//! the log. A write that fails (a closed pipe, a full disk) is dropped: a log line never fails
//! I/O, and a closed pipe never raises `SIGPIPE` in the application.

use std::collections::HashSet;
use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{OnceLock, RwLock};

use crate::sync::{read, write};

static SEEN: RwLock<Option<HashSet<String>>> = RwLock::new(None);
static SINK: OnceLock<Sink> = OnceLock::new();

/// Where diagnostics go.
#[derive(Debug)]
pub enum Sink {
    /// Nowhere.
    Off,
    /// Standard error (descriptor 2).
    Stderr,
    /// A file the library opened itself.
    File(OwnedFd),
}

impl Sink {
    /// The sink `HIPFILE_LOG`'s value names; `default` when it is unset.
    pub fn from_setting(value: Option<&str>, default: fn() -> Sink) -> Sink {
        let Some(value) = value else { return default() };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "off" | "false" | "none" => Sink::Off,
            "1" | "on" | "true" | "stderr" => Sink::Stderr,
            _ => open_append(value.trim()).map_or(Sink::Off, Sink::File),
        }
    }

    fn fd(&self) -> Option<RawFd> {
        match self {
            Sink::Off => None,
            Sink::Stderr => Some(2),
            Sink::File(fd) => Some(fd.as_raw_fd()),
        }
    }
}

/// Chooses the sink from `HIPFILE_LOG`, with `default` when it is unset (a command-line tool
/// passes `|| Sink::Stderr`). Only the first choice counts; the library's own default, chosen
/// at its first message, is [`Sink::Off`].
pub fn init(default: fn() -> Sink) {
    SINK.get_or_init(|| Sink::from_setting(std::env::var("HIPFILE_LOG").ok().as_deref(), default));
}

/// Whether diagnostics are written anywhere.
pub fn enabled() -> bool {
    init(|| Sink::Off);
    SINK.get().is_some_and(|s| s.fd().is_some())
}

/// Writes `hipfile: <message>` the first time this process sees `message` (when asked to).
pub fn log_once(message: &str) {
    log_once_keyed(message, || message.to_owned());
}

/// Writes `hipfile: <message()>` the first time this process sees `key` (when asked to). Seen
/// keys cost a shared lock and a lookup, and `message` is only built the first time: cheap
/// enough for an I/O path that keeps meeting the same condition. With logging off it costs
/// one load.
pub fn log_once_keyed(key: &str, message: impl FnOnce() -> String) {
    if !enabled() {
        return;
    }
    let seen = |s: &Option<HashSet<String>>| s.as_ref().is_some_and(|s| s.contains(key));
    if seen(&read(&SEEN)) {
        return;
    }
    let mut all = write(&SEEN);
    if all.get_or_insert_with(HashSet::new).insert(key.to_owned())
        && let Some(fd) = SINK.get().and_then(Sink::fd)
    {
        write_quietly(fd, format!("hipfile: {}\n", message()).as_bytes());
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
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => {
                broke = std::io::Error::last_os_error().raw_os_error() == Some(libc::EPIPE);
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
        assert!(matches!(Sink::from_setting(None, || Sink::Stderr), Sink::Stderr));
        for off in ["", "0", "off", "OFF", "false", "none"] {
            assert!(matches!(Sink::from_setting(Some(off), || Sink::Stderr), Sink::Off), "{off}");
        }
        for on in ["1", "on", "true", "stderr", "Stderr"] {
            assert!(matches!(Sink::from_setting(Some(on), || Sink::Off), Sink::Stderr), "{on}");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let sink = Sink::from_setting(path.to_str(), || Sink::Off);
        write_quietly(sink.fd().unwrap(), b"one\n");
        assert_eq!(std::fs::read(&path).unwrap(), b"one\n");
        let missing = dir.path().join("no/such/dir/log");
        assert!(matches!(Sink::from_setting(missing.to_str(), || Sink::Stderr), Sink::Off));
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
