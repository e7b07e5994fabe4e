//! Building and running C and C++ against the libraries `cargo test` just built: `libhipfile.so`
//! (`hipfile-capi`), `libhipfile_mockhip.so` and `libcufile.so.0` (`hipfile-cufile`), all in
//! `target/<profile>/deps`: each crate whose tests use this module has the ones it needs as
//! dev-dependencies (or is one), so `cargo test -p CRATE` alone builds them ([`needed`]).
#![allow(dead_code, unreachable_pub)] // each test binary uses part of it

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where Debian's `libamdhip64-dev` puts the HIP headers (`cargo xtask ci` installs it).
pub const HIP_HEADER: &str = "/usr/include/hip/hip_runtime_api.h";

/// The shared libraries the tests of the crate being tested load: what its dev-dependencies
/// (and itself) build.
fn needed() -> &'static [&'static str] {
    match env!("CARGO_PKG_NAME") {
        "hipfile-capi" => &["libhipfile_capi.so", "libhipfile_mockhip.so", "libhipfile_cufile.so"],
        // hipfile-cxx links its own archive, and runs on the mock HIP runtime.
        _ => &["libhipfile_mockhip.so"],
    }
}

/// The directory holding the freshly built shared libraries.
pub fn deps_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory").to_path_buf();
    for lib in needed() {
        assert!(deps.join(lib).exists(), "{lib} not built in {}", deps.display());
    }
    deps
}

/// A directory laid out as an installed library: `libhipfile.so` and the `libhipfile.so.0`
/// its SONAME names (what programs load at run time), and the mock HIP runtime; links into
/// [`deps_dir`].
pub fn lib_dir() -> PathBuf {
    let deps = deps_dir();
    let profile = deps.parent().and_then(Path::file_name).expect("profile directory");
    let lib = scratch(&format!("lib-{}", profile.to_string_lossy()));
    for (link, target) in [
        ("libhipfile.so", "libhipfile_capi.so"),
        ("libhipfile.so.0", "libhipfile_capi.so"),
        ("libhipfile_mockhip.so", "libhipfile_mockhip.so"),
        ("libhipfile_mockhip.so.0", "libhipfile_mockhip.so"),
        ("libcufile.so", "libhipfile_cufile.so"),
        ("libcufile.so.0", "libhipfile_cufile.so"),
    ] {
        let (target, link) = (deps.join(target), lib.join(link));
        // A link left by an older layout of the build would run the tests on a stale
        // library: replace any link that points elsewhere, atomically (tests run in parallel
        // processes, or threads).
        if std::fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
            // A name of this thread's own: `cargo test` runs tests as threads of one process.
            static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let name = link.file_name().unwrap().to_string_lossy();
            let fresh = lib.join(format!(".{name}.{}.{n}", std::process::id()));
            let _ = std::fs::remove_file(&fresh);
            std::os::unix::fs::symlink(&target, &fresh)
                .unwrap_or_else(|e| panic!("cannot link {}: {e}", fresh.display()));
            std::fs::rename(&fresh, &link).unwrap_or_else(|e| panic!("cannot link {}: {e}", link.display()));
        }
    }
    lib
}

/// The repository's `include` directory.
pub fn include_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../include")
}

/// Scratch space for this test binary.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

/// Fails with the way to get the HIP headers when they are missing.
pub fn require_hip_headers() {
    assert!(
        Path::new(HIP_HEADER).exists(),
        "{HIP_HEADER} is missing: install Debian's HIP headers (apt-get install -y libamdhip64-dev; `cargo xtask ci` does)"
    );
}

/// How long a compiler or test program may run: generous, for a loaded 2-core machine running
/// the sanitized builds (they take seconds when the machine is idle).
const PROGRAM_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(240);

/// Runs a compiler or a test program and returns its output; kills it (saying which program,
/// and what it wrote) if it runs past [`PROGRAM_TIMEOUT`].
pub fn run(cmd: &mut Command) -> Output {
    use std::process::Stdio;
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(PROGRAM_TIMEOUT) {
        Ok(out) => out.unwrap_or_else(|e| panic!("{cmd:?}: {e}")),
        Err(_) => {
            // SAFETY: signals the child started above, not yet reaped (its waiter still waits).
            unsafe { libc::kill(pid, libc::SIGKILL) };
            let out = rx.recv().ok().and_then(|o| o.ok());
            let text = |b: Option<&Vec<u8>>| b.map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
            panic!(
                "{cmd:?} timed out after {} s and was killed\n--- stdout\n{}\n--- stderr\n{}",
                PROGRAM_TIMEOUT.as_secs(),
                text(out.as_ref().map(|o| &o.stdout)),
                text(out.as_ref().map(|o| &o.stderr))
            );
        }
    }
}

/// [`run`], then panics with the output unless the program succeeded.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({})\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The C compiler (`$CC`, else `cc`).
pub fn cc() -> Command {
    Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()))
}

/// The C++ compiler (`$CXX`, else `c++`).
pub fn cxx() -> Command {
    Command::new(std::env::var("CXX").unwrap_or_else(|_| "c++".into()))
}

/// A program's run environment: no inherited `HIPFILE_*` settings, then `env`.
pub fn program(exe: &Path, args: &[&Path], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    for (key, _) in std::env::vars() {
        if key.starts_with("HIPFILE_") {
            cmd.env_remove(key);
        }
    }
    // Test runners put target directories on LD_LIBRARY_PATH, which outranks the programs'
    // RUNPATH: a stale library there would be loaded instead of the one under test.
    cmd.env("LD_LIBRARY_PATH", lib_dir());
    cmd.envs(env.iter().copied());
    cmd
}

#[allow(unused_imports)] // not every test binary uses it
pub use hipfile_backend_mock::pattern;
