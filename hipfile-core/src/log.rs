//! Diagnostics, for the asking (semantics §8, §13). The library reports through `tracing`
//! events (target `hipfile`), each distinct message once: a loop hitting the same condition
//! should not flood the log. With no subscriber listening, nothing is written anywhere, which is
//! what a library owes an application whose descriptor 2 may be a data file or a pipe nobody
//! reads. Where events go is not this crate's business: a Rust program installs its own
//! subscriber, and the C library and the tool install the `hipfile` crate's, which follows
//! `HIPFILE_LOG` and the logging parameters ([`LogParameters`]).
//!
//! Levels: a path the caller explicitly asked for and does not get is a warning; the p2p path
//! unavailable or declined under `auto`, and other choices the library makes for the caller, are
//! info (once per reason); errors the caller is told about through return codes are debug.

use std::collections::HashSet;
use std::sync::RwLock;

/// The levels of the library's messages.
pub use tracing::Level;

use crate::sync::{read, write};

/// The messages reported so far: "once" is per process, as a log is.
static SEEN: RwLock<Option<HashSet<String>>> = RwLock::new(None);

/// Where a driver's logging parameters (`hipFileParamLoggingLevel`, `hipFileParamLogDir`,
/// `hipFileParamEnvLogfilePath`) take effect (semantics §13): the driver reads them; the
/// boundary that owns the process's diagnostics applies them ([`Driver::with_log_parameters`](crate::Driver::with_log_parameters)).
pub trait LogParameters: Send + Sync {
    /// An open with these parameters (each as set, else `None`) begins: called before its
    /// backends are made, so that what the open itself reports goes where they say.
    fn apply(&self, level: Option<&str>, file: Option<&str>, dir: Option<&str>);
    /// The open they were for ended: its last close, or the open failed.
    fn restore(&self);
}

/// Whether anyone listens to the library's events at `level`.
pub fn enabled(level: Level) -> bool {
    match level {
        Level::ERROR => tracing::enabled!(target: "hipfile", Level::ERROR),
        Level::WARN => tracing::enabled!(target: "hipfile", Level::WARN),
        Level::INFO => tracing::enabled!(target: "hipfile", Level::INFO),
        Level::DEBUG => tracing::enabled!(target: "hipfile", Level::DEBUG),
        Level::TRACE => tracing::enabled!(target: "hipfile", Level::TRACE),
    }
}

/// Reports `message` at `info` the first time this process sees it.
pub fn log_once(message: &str) {
    log_once_at(Level::INFO, message, || message.to_owned());
}

/// Reports `message()` at `info` the first time this process sees `key`.
pub fn log_once_keyed(key: &str, message: impl FnOnce() -> String) {
    log_once_at(Level::INFO, key, message);
}

/// Reports `message()` at `level` the first time this process sees `key`. With nobody
/// listening at that level it costs one atomic load; then seen keys cost a shared lock and a
/// lookup, and `message` is only built the first time: cheap enough for an I/O path that
/// keeps meeting the same condition.
pub fn log_once_at(level: Level, key: &str, message: impl FnOnce() -> String) {
    if !enabled(level) {
        return;
    }
    let seen = |s: &Option<HashSet<String>>| s.as_ref().is_some_and(|s| s.contains(key));
    if seen(&read(&SEEN)) {
        return;
    }
    if write(&SEEN).get_or_insert_with(HashSet::new).insert(key.to_owned()) {
        let message = message();
        match level {
            Level::ERROR => tracing::error!(target: "hipfile", "{message}"),
            Level::WARN => tracing::warn!(target: "hipfile", "{message}"),
            Level::INFO => tracing::info!(target: "hipfile", "{message}"),
            Level::DEBUG => tracing::debug!(target: "hipfile", "{message}"),
            Level::TRACE => tracing::trace!(target: "hipfile", "{message}"),
        }
    }
}
