//! `hipfile bench` end to end on this machine (the mock GPU, as it has no GPU).

use std::process::Command;

fn hipfile(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile")).args(args).env_remove("HIPFILE_BACKEND").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn every_mode_runs_verified_on_each_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.dat");
    for backend in ["bounce", "mock", "auto"] {
        let (ok, out, err) = hipfile(&[
            "bench",
            "--file",
            file.to_str().unwrap(),
            "--size",
            "8M",
            "--io-size",
            "1M",
            "--threads",
            "3",
            "--mode",
            "read,write,randread,randwrite",
            "--count",
            "6",
            "--runs",
            "2",
            "--backend",
            backend,
            "--json",
        ]);
        assert!(ok, "{backend}: {err}");
        assert_eq!(out.matches("\"verified\": true").count(), 4, "{backend}: {out}");
        let expected = if backend == "bounce" {
            "\"backends\": [\"bounce\"]"
        } else {
            "\"backends\": [\"mock-direct\", \"bounce\"]"
        };
        assert!(out.contains(expected), "{backend}: {out}");
    }
    // The data file is kept (so peers can read the same one); the write target is removed.
    assert!(file.exists() && !dir.path().join("bench.dat.out").exists());
}

#[test]
fn no_arguments_runs_a_short_verified_benchmark() {
    let (ok, out, err) = hipfile(&["bench"]);
    assert!(ok, "{err}");
    assert!(out.contains("platform: ") && out.lines().filter(|l| l.ends_with("yes")).count() == 2, "{out}");
}

#[test]
fn bad_options_say_what_is_wrong() {
    let (ok, _, err) = hipfile(&["bench", "--size", "big"]);
    assert!(!ok && err.contains("not a size"), "{err}");
    let (ok, _, err) = hipfile(&["frobnicate"]);
    assert!(!ok && err.contains("usage"), "{err}");
    let (ok, _, err) = hipfile(&["bench", "--backend", "warp"]);
    assert!(!ok && err.contains("HIPFILE_BACKEND"), "{err}");
}

#[test]
fn profile_reports_where_the_time_went() {
    let (ok, out, err) = hipfile(&["bench", "--size", "16M", "--runs", "1", "--backend", "bounce", "--profile"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("read bounce: served_requests 1, served_bytes 16777216, chunks 4") && out.contains("copy_wait"),
        "{out}"
    );
    let (ok, out, err) =
        hipfile(&["bench", "--size", "16M", "--runs", "1", "--backend", "bounce", "--profile", "--json"]);
    assert!(ok && out.contains("\"profile\": {\"bounce\": {\"served_requests\": 1"), "{out}{err}");
}

/// The profile's `io_uring_ops` of the write mode in a `--json --profile` report.
fn write_io_uring_ops(json: &str) -> u64 {
    let write = json.lines().find(|l| l.contains("\"mode\": \"write\"")).expect("a write result");
    let tail = &write[write.find("\"io_uring_ops\": ").expect("the counter") + 16..];
    tail[..tail.find([',', '}']).unwrap()].trim().parse().unwrap()
}

#[test]
fn io_uring_respects_the_memlock_limit_and_falls_back() {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root to run the benchmark as another user");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let file = dir.path().join("bench.dat");
    let args = ["bench", "--file", file.to_str().unwrap(), "--size", "16M", "--mode", "read,write", "--runs", "1"];
    let args: Vec<&str> = args.into_iter().chain(["--backend", "bounce", "--profile", "--json"]).collect();
    // As root (no memlock limit), durable writes go direct through io_uring.
    let (ok, root_out, err) = hipfile(&args);
    assert!(ok, "{err}");
    assert!(write_io_uring_ops(&root_out) > 0, "{root_out}");
    // As nobody with 64 KiB of memlock, registering the staging buffers would exceed the limit:
    // the backend goes without io_uring, and the data is still right.
    let out = Command::new("prlimit")
        .args(["--memlock=65536:65536", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_hipfile"))
        .args(&args)
        .env_remove("HIPFILE_BACKEND")
        .output()
        .expect("prlimit and setpriv (util-linux) run");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.matches("\"verified\": true").count(), 2, "{stdout}");
    assert_eq!(write_io_uring_ops(&stdout), 0, "{stdout}");
}
