//! What the tool's end-to-end tests share: running it.
#![allow(dead_code, unreachable_pub)]

use std::process::Command;

/// Runs `hipfile ARGS`, with no `HIPFILE_BACKEND` or `HIPFILE_LOG` from the environment:
/// whether it succeeded, its stdout and its stderr.
pub fn hipfile(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(args)
        .env_remove("HIPFILE_BACKEND")
        .env_remove("HIPFILE_LOG")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

/// `hipfile ARGS` fails, and says `says` on stderr.
pub fn refused(args: &[&str], says: &str) {
    let (ok, _, err) = hipfile(args);
    assert!(!ok && err.contains(says), "{err}");
}
