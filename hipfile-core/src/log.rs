//! Diagnostics on stderr, once per distinct message: C callers only see codes, and a loop
//! hitting the same condition should not flood the log.

use std::collections::HashSet;
use std::sync::RwLock;

static SEEN: RwLock<Option<HashSet<String>>> = RwLock::new(None);

/// Writes `hipfile: <message>` to stderr the first time this process sees `message`.
pub fn log_once(message: &str) {
    log_once_keyed(message, || message.to_owned());
}

/// Writes `hipfile: <message()>` to stderr the first time this process sees `key`. Seen keys
/// cost a shared lock and a lookup, and `message` is only built the first time: cheap enough
/// for an I/O path that keeps meeting the same condition.
pub fn log_once_keyed(key: &str, message: impl FnOnce() -> String) {
    let seen = |s: &Option<HashSet<String>>| s.as_ref().is_some_and(|s| s.contains(key));
    if seen(&SEEN.read().unwrap_or_else(|e| e.into_inner())) {
        return;
    }
    let mut all = SEEN.write().unwrap_or_else(|e| e.into_inner());
    if all.get_or_insert_with(HashSet::new).insert(key.to_owned()) {
        eprintln!("hipfile: {}", message());
    }
}
