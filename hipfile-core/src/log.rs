//! Diagnostics on stderr, once per distinct message: C callers only see codes, and a loop
//! hitting the same condition should not flood the log.

use std::collections::HashSet;
use std::sync::Mutex;

/// Writes `hipfile: <message>` to stderr the first time this process sees `message`.
pub fn log_once(message: &str) {
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
    if seen.get_or_insert_with(HashSet::new).insert(message.to_owned()) {
        eprintln!("hipfile: {message}");
    }
}
