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
    assert!(out.contains("read bounce: requests 1, bytes 16777216") && out.contains("copy_wait"), "{out}");
    let (ok, out, err) =
        hipfile(&["bench", "--size", "16M", "--runs", "1", "--backend", "bounce", "--profile", "--json"]);
    assert!(ok && out.contains("\"profile\": {\"bounce\": {\"requests\": 1"), "{out}{err}");
}
