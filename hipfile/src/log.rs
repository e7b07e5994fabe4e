//! Where the library's diagnostics go, for the boundaries that own a process (the C library and
//! the `hipfile` tool): [`install`] listens to the library's `tracing` events where
//! `HIPFILE_LOG` says (read once), and [`ProcessLog`] applies a driver's logging parameters
//! (semantics §13). A Rust program that installs its own subscriber needs neither.
//!
//! `HIPFILE_LOG`:
//! - unset: the caller's default (the C ABI: nothing; the tool: warnings on standard error);
//! - empty, `0`, `off`, `false`, `none`: nothing;
//! - `1`, `on`, `true`, `stderr`: standard error, at level `info`;
//! - `error`, `warn`, `info`, `debug`, `trace`: standard error, at that level;
//! - anything else: a file path, appended to, at level `info`.
//!
//! The logging parameters (`hipFileParamLoggingLevel`, `hipFileParamLogDir`,
//! `hipFileParamEnvLogfilePath`) change the level and destination from the next driver open
//! until it closes. A log file the library creates is created without following a symbolic
//! link and readable by its owner only. A write that fails (a closed pipe, a full disk) is
//! dropped: a log line never fails I/O, and a closed pipe never raises `SIGPIPE` in the
//! application.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, RwLock};

use hipfile_core::log::Level;
use hipfile_core::sync::{read, write};
use rustix::fs::{Mode, OFlags};

/// Where diagnostics go now, and where `HIPFILE_LOG` (or the default) said at install.
static CURRENT: RwLock<Option<Sink>> = RwLock::new(None);
static FROM_ENV: RwLock<Option<Sink>> = RwLock::new(None);
/// The current sink's level as a number (0: off, 1: error ... 5: trace), for the filter's
/// check without a lock.
static LEVEL: AtomicU8 = AtomicU8::new(0);

/// Where diagnostics go.
#[derive(Clone, Debug)]
pub enum Sink {
    /// Nowhere.
    Off,
    /// Standard error (descriptor 2), at a level.
    Stderr(Level),
    /// A file the library opened itself, at a level.
    File(Arc<OwnedFd>, Level),
}

impl Sink {
    /// The sink `HIPFILE_LOG`'s value names; `default` when it is unset.
    pub fn from_setting(value: Option<&str>, default: fn() -> Sink) -> Sink {
        let Some(value) = value else { return default() };
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "0" | "off" | "false" | "none" => Sink::Off,
            "1" | "on" | "true" | "stderr" => Sink::Stderr(Level::INFO),
            word => match level_named(word) {
                Some(level) => Sink::Stderr(level),
                None => open_append(value.trim()).map_or(Sink::Off, |fd| Sink::File(Arc::new(fd), Level::INFO)),
            },
        }
    }

    fn fd(&self) -> Option<BorrowedFd<'_>> {
        match self {
            Sink::Off => None,
            Sink::Stderr(_) => Some(rustix::stdio::stderr()),
            Sink::File(fd, _) => Some(fd.as_fd()),
        }
    }

    fn level(&self) -> Option<Level> {
        match self {
            Sink::Off => None,
            Sink::Stderr(level) | Sink::File(_, level) => Some(*level),
        }
    }
}

/// `error`, `warn`, `info`, `debug`, `trace` (any case).
fn level_named(word: &str) -> Option<Level> {
    Some(match word.trim().to_ascii_lowercase().as_str() {
        "error" => Level::ERROR,
        "warn" => Level::WARN,
        "info" => Level::INFO,
        "debug" => Level::DEBUG,
        "trace" => Level::TRACE,
        _ => return None,
    })
}

fn rank(level: Level) -> u8 {
    match level {
        Level::ERROR => 1,
        Level::WARN => 2,
        Level::INFO => 3,
        Level::DEBUG => 4,
        Level::TRACE => 5,
    }
}

fn set_current(sink: Sink) {
    LEVEL.store(sink.level().map_or(0, rank), Ordering::Release);
    *write(&CURRENT) = Some(sink);
}

/// Whether the sink in force takes an event at `level`.
fn takes(level: Level) -> bool {
    LEVEL.load(Ordering::Acquire) >= rank(level)
}

/// Listens to the library's events where `HIPFILE_LOG` asks, with `default` when it is unset
/// (the `hipfile` tool passes `|| Sink::Stderr(Level::WARN)`; the C ABI, `|| Sink::Off`).
/// Only the first call counts. Nothing is installed while the sink is off (until
/// [`ProcessLog`] needs it); an application's own global subscriber takes precedence.
pub fn install(default: fn() -> Sink) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let sink = Sink::from_setting(std::env::var("HIPFILE_LOG").ok().as_deref(), default);
        *write(&FROM_ENV) = Some(sink.clone());
        if sink.fd().is_some() && subscribed() {
            set_current(sink);
        }
    });
}

/// Installs the formatter (once): whether it listens. Its filter asks the sink in force for
/// every event, so the library's "once" messages are not spent while nothing listens.
fn subscribed() -> bool {
    use tracing_subscriber::layer::SubscriberExt;
    static SUBSCRIBED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUBSCRIBED.get_or_init(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(Level::TRACE)
            .without_time()
            .with_level(false)
            .with_target(true)
            .with_ansi(false)
            .with_writer(CurrentSink)
            .finish()
            .with(tracing_subscriber::filter::filter_fn(|meta| takes(*meta.level())));
        tracing::subscriber::set_global_default(subscriber).is_ok()
    })
}

/// A driver's logging parameters applied to the process's diagnostics (semantics §13): what
/// the C library's driver uses. They change nothing unless [`install`] was called and no other
/// subscriber listens.
pub struct ProcessLog;

impl hipfile_core::log::LogParameters for ProcessLog {
    /// From this open: `level` (a level name) at the destination in force, or at `file`
    /// (appended to, created for the owner only), or at a `hipfile_<pid>.log` in `dir`.
    fn apply(&self, level: Option<&str>, file: Option<&str>, dir: Option<&str>) {
        let Some(from_env) = read(&FROM_ENV).clone() else { return };
        if !subscribed() {
            return;
        }
        let current = read(&CURRENT).clone().unwrap_or(from_env);
        let level = level.and_then(level_named).or(current.level()).unwrap_or(Level::ERROR);
        let path = file.map(str::to_owned).or_else(|| dir.map(|d| format!("{d}/hipfile_{}.log", std::process::id())));
        let sink = match (path, current) {
            (Some(path), _) => open_append(&path).map_or(Sink::Off, |fd| Sink::File(Arc::new(fd), level)),
            (None, Sink::File(fd, _)) => Sink::File(fd, level),
            (None, _) => Sink::Stderr(level),
        };
        set_current(sink);
    }

    /// Back to what `HIPFILE_LOG` (or the default) said.
    fn restore(&self) {
        if let Some(sink) = read(&FROM_ENV).clone()
            && read(&CURRENT).is_some()
        {
            set_current(sink);
        }
    }
}

/// The formatter's writers: the sink in force, for events at or above its level.
struct CurrentSink;

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for CurrentSink {
    type Writer = QuietWriter;

    fn make_writer(&'a self) -> QuietWriter {
        QuietWriter(None)
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> QuietWriter {
        let sink = takes(*meta.level()).then(|| read(&CURRENT).clone()).flatten();
        QuietWriter(sink)
    }
}

/// A formatter's writer: [`write_quietly`] to the sink's descriptor (none: the line is dropped).
struct QuietWriter(Option<Sink>);

impl io::Write for QuietWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(fd) = self.0.as_ref().and_then(Sink::fd) {
            write_quietly(fd, buf);
        }
        Ok(buf.len()) // a lost line is not the application's error
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Opens a log file for appending: never through a symbolic link (`O_NOFOLLOW`), and created
/// readable and writable by its owner only.
fn open_append(path: &str) -> Option<OwnedFd> {
    let flags = OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    rustix::fs::open(path, flags, Mode::from_raw_mode(0o600)).ok()
}

/// Writes `bytes` to `fd`, dropping them on any error. `SIGPIPE` is blocked in this thread
/// around the write, and one it raised is consumed, so a closed pipe is an `EPIPE` here rather
/// than the application's signal (rustix leaves signal masks to the C library: these are
/// `libc`'s calls).
fn write_quietly(fd: BorrowedFd<'_>, bytes: &[u8]) {
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
        match rustix::io::write(fd, rest) {
            Ok(n) if n > 0 => rest = &rest[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => {
                broke = e == rustix::io::Errno::PIPE;
                break;
            }
            Ok(_) => break,
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
        for on in ["1", "on", "true", "stderr", "Stderr", "info", "INFO"] {
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
    fn log_files_are_the_owners_and_never_reached_through_a_link() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        drop(open_append(path.to_str().unwrap()).unwrap());
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious\n").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(open_append(link.to_str().unwrap()).is_none());
        assert_eq!(std::fs::read(&target).unwrap(), b"precious\n");
    }

    #[test]
    fn a_closed_pipe_neither_fails_nor_signals() {
        let (r, w) = std::io::pipe().unwrap();
        drop(r);
        // With SIGPIPE at its default action (Rust programs start with it ignored), a raised
        // signal would end this test process.
        // SAFETY: installs the default action, restored below; no handler runs.
        let previous = unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
        write_quietly(w.as_fd(), b"lost\n");
        write_quietly(w.as_fd(), b"lost again\n");
        // SAFETY: restores the previous action.
        unsafe { libc::signal(libc::SIGPIPE, previous) };
    }
}
