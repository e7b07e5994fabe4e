//! `hipfile bench` end to end on this machine (the mock GPU, as it has no GPU).

mod common;

use std::process::Command;

use common::{hipfile, refused};
use serde_json::Value;

/// `hipfile bench` with the options written as one line (words split at spaces).
fn bench(options: &str) -> (bool, String, String) {
    hipfile(&std::iter::once("bench").chain(options.split_whitespace()).collect::<Vec<_>>())
}

#[test]
fn every_mode_runs_verified_on_each_backend() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.dat");
    for backend in ["bounce", "mock", "auto"] {
        let f = file.to_str().unwrap();
        let (ok, out, err) = bench(&format!(
            "--file {f} --size 8M --io-size 1M --threads 3 --mode read,write,randread,randwrite --count 6 --runs 2 \
             --backend {backend} --json"
        ));
        assert!(ok, "{backend}: {err}");
        let report: Value = serde_json::from_str(&out).expect("valid JSON");
        let results = report["results"].as_array().unwrap();
        assert_eq!(results.len(), 4, "{backend}: {out}");
        assert!(results.iter().all(|r| r["verified"] == true), "{backend}: {out}");
        let expected: &[&str] = if backend == "bounce" { &["bounce"] } else { &["mock-p2p", "bounce"] };
        assert_eq!(report["backends"], serde_json::json!(expected), "{backend}: {out}");
    }
    // The data file is kept (so peers can read the same one); the write target is removed.
    assert!(file.exists() && !dir.path().join("bench.dat.out").exists());
}

/// A file that exists is read as it is, never rewritten: its size is the benchmark's, and a
/// `--size` that differs is refused with the reason.
#[test]
fn an_existing_file_is_read_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.bin");
    let data: Vec<u8> = (0..3 << 20).map(|i: u32| (i * 7 % 253) as u8).collect();
    std::fs::write(&file, &data).unwrap();
    let f = file.to_str().unwrap();
    let (ok, _, err) = bench(&format!("--file {f} --size 8M --mode read --runs 1 --backend mock"));
    assert!(!ok && err.contains("3145728 bytes") && err.contains("does not rewrite"), "{err}");
    let (ok, out, err) =
        bench(&format!("--file {f} --mode read,randread --io-size 64K --count 16 --runs 1 --backend mock --json"));
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(report["size_bytes"], 3 << 20, "{out}");
    assert!(report["results"].as_array().unwrap().iter().all(|r| r["verified"] == true), "{out}");
    assert!(std::fs::read(&file).unwrap() == data, "the file is as it was");
}

#[test]
fn several_gpus_at_once_each_with_its_own_buffer_and_threads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.dat");
    for backend in ["bounce", "mock"] {
        let f = file.to_str().unwrap();
        let (ok, out, err) = bench(&format!(
            "--file {f} --size 8M --devices 0,2 --threads 2 --mode read,write,randread --io-size 1M --count 8 \
             --runs 2 --backend {backend} --json"
        ));
        assert!(ok, "{backend}: {err}");
        let report: Value = serde_json::from_str(&out).expect("valid JSON");
        for r in report["results"].as_array().unwrap() {
            assert_eq!(r["devices"], serde_json::json!([0, 2]), "{out}");
            assert_eq!(r["verified"], true, "{backend}: {out}");
            assert_eq!(r["run_gbps"].as_array().unwrap().len(), 2, "{out}");
            // The process's CPU time over the runs, per GB: the mock GPU's copies are the CPU's.
            assert!(r["cpu_s_per_gb"].as_f64().unwrap() > 0.0, "{out}");
        }
        assert_eq!(report["results"][0]["bytes_per_run"], 2 * (8 << 20), "both GPUs read the whole file: {out}");
    }
    refused(&["bench", "--devices", "1,1"], "twice");
    refused(&["bench", "--devices=-1"], "not a device");
}

#[test]
fn every_mode_runs_verified_as_batches() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.dat");
    let f = file.to_str().unwrap();
    for backend in ["bounce", "mock"] {
        let (ok, out, err) = bench(&format!(
            "--file {f} --size 8M --io-size 256K --threads 2 --batch 8 --mode read,write,randread,randwrite \
             --count 24 --runs 2 --backend {backend} --json --profile"
        ));
        assert!(ok, "{backend}: {err}");
        let report: Value = serde_json::from_str(&out).expect("valid JSON");
        let results = report["results"].as_array().unwrap();
        assert!(results.len() == 4 && results.iter().all(|r| r["verified"] == true), "{backend}: {out}");
        if backend == "bounce" {
            // Every entry of every run went through the backend: 24 calls, twice.
            assert_eq!(results[2]["profile"]["bounce"]["served_requests"], 48, "{out}");
        }
    }
    refused(&["bench", "--batch", "129"], "0 to 128");
}

#[test]
fn no_arguments_runs_a_short_verified_benchmark() {
    let (ok, out, err) = hipfile(&["bench"]);
    assert!(ok, "{err}");
    assert!(out.contains("platform: ") && out.lines().filter(|l| l.ends_with("yes")).count() == 2, "{out}");
}

#[test]
fn bad_options_say_what_is_wrong() {
    refused(&["bench", "--size", "big"], "not a size");
    refused(&["frobnicate"], "Usage");
    let (ok, _, err) = hipfile(&["bench", "--mode", "sideways"]);
    assert!(!ok && err.contains("sideways") && err.contains("randread"), "{err}");
    refused(&["bench", "--backend", "warp"], "HIPFILE_BACKEND");
}

#[test]
fn profile_reports_where_the_time_went() {
    let (ok, out, err) = hipfile(&["bench", "--size", "16M", "--runs", "1", "--backend", "bounce", "--profile"]);
    assert!(ok, "{err}");
    assert!(
        out.contains("read bounce: served_requests 1, served_bytes 16777216, chunks 8") && out.contains("copy_wait"),
        "{out}"
    );
    // Thread time with its share; a read's wall times apart, without one.
    let read = out.lines().find(|l| l.contains("read bounce:")).expect("a read line");
    assert!(read.contains("setup_wait ") && read.contains("%)"), "{read}");
    assert!(read.contains("last_copy ") && read.contains(" ms (wall)") && !read.contains("last_copy_wall"), "{read}");
    let (ok, out, err) =
        hipfile(&["bench", "--size", "16M", "--runs", "1", "--backend", "bounce", "--profile", "--json"]);
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).expect("valid JSON");
    assert_eq!(report["results"][0]["profile"]["bounce"]["served_requests"], 1, "{out}");
}

#[test]
fn json_is_valid_whatever_the_run_and_flags_take_either_spelling() {
    // A 1-byte file: runs too short to time are `null`, never `inf`.
    for args in [
        &["bench", "--size", "1", "--runs", "1", "--json"][..],
        &["bench", "--mode=randread", "--size=4K", "--io-size=4K", "--count=1", "--runs=1", "--json"],
        &["bench", "--mode=read,write", "--size", "64K", "--runs", "2", "--no-verify", "--json"],
    ] {
        let (ok, out, err) = hipfile(args);
        assert!(ok, "{args:?}: {err}");
        let report: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"));
        for r in report["results"].as_array().unwrap() {
            assert!(r["best_gbps"].is_number() || r["best_gbps"].is_null(), "{out}");
        }
    }
}

/// The profile's `io_uring_ops` of the write mode in a `--json --profile` report.
fn write_io_uring_ops(json: &str) -> u64 {
    let report: Value = serde_json::from_str(json).expect("valid JSON");
    let results = report["results"].as_array().expect("results");
    let write = results.iter().find(|r| r["mode"] == "write").expect("a write result");
    write["profile"]["bounce"]["io_uring_ops"].as_u64().expect("the counter")
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
    // As root (no memlock limit), durable writes that bypass the page cache go direct through
    // io_uring.
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(&args)
        .env_remove("HIPFILE_BACKEND")
        .env("HIPFILE_PAGE_CACHE", "bypass")
        .output()
        .unwrap();
    let (root_out, err) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(write_io_uring_ops(&root_out) > 0, "{root_out}");
    // As nobody with 64 KiB of memlock, registering the staging buffers would exceed the limit:
    // the backend goes without io_uring, and the data is still right.
    let out = Command::new("prlimit")
        .args(["--memlock=65536:65536", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_hipfile"))
        .args(&args)
        .env_remove("HIPFILE_BACKEND")
        .env("HIPFILE_PAGE_CACHE", "bypass")
        .output()
        .expect("prlimit and setpriv (util-linux) run");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("valid JSON");
    assert!(report["results"].as_array().unwrap().iter().all(|r| r["verified"] == true), "{stdout}");
    assert_eq!(write_io_uring_ops(&stdout), 0, "{stdout}");
}

/// One version for every artifact, set in the workspace's Cargo.toml: the tool's, the crates',
/// and hipFile's API version the library reports (`hipFileGetVersion`, `HIPFILE_VERSION_*`, the
/// wheel and Python's `__version__`, each checked where it is built).
#[test]
fn one_version_everywhere() {
    let (ok, out, err) = hipfile(&["--version"]);
    assert!(ok, "{err}");
    let (major, minor, patch) = hipfile::API_VERSION;
    let api = format!("{major}.{minor}.{patch}");
    assert_eq!(out.trim(), format!("hipfile {api}"));
    assert_eq!(env!("CARGO_PKG_VERSION"), api);
}

/// A table run says what it runs on before it measures, and each mode's row as that mode ends:
/// the platform, the header and the read row are out while the writes still run.
#[test]
fn bench_says_what_it_runs_on_first_and_each_mode_as_it_ends() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["bench", "--size", "64M", "--runs", "3", "--mode", "read,write", "--backend", "mock"])
        .env_remove("HIPFILE_LOG")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.starts_with("hipfile bench: 64 MiB file "), "{first}");
    assert_eq!(lines.next().unwrap().unwrap(), "platform: the mock GPU (host memory)");
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let read_row = line.starts_with("read ");
        seen.push(line);
        if read_row {
            break;
        }
    }
    // Three durable writes of 64 MiB, and their check, are still to come.
    assert!(child.try_wait().unwrap().is_none(), "the read row came only at the end: {seen:?}");
    let header = seen.iter().find(|l| l.starts_with("mode ")).expect("the table's header before its rows");
    assert!(header.contains("GPUs") && header.contains("io size"), "{header}");
    let row: Vec<&str> = seen.last().unwrap().split_whitespace().collect();
    assert_eq!(&row[..5], ["read", "1", "(#0)", "1", "64"], "one GPU, device 0, one thread, 64 MiB: {row:?}");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(child.wait().unwrap().success());
    assert!(rest.iter().any(|l| l.starts_with("write ")), "{rest:?}");
}

/// The in-process mock GPU honours the mock HIP runtime's AIS switches: with AIS absent its p2p
/// path is not there (and `--backend p2p` is refused with the reason); with every AIS call
/// failing `ENODEV`, the bytes go through bounce (the statistics say so) and stay right.
#[test]
fn the_mock_gpus_ais_switches_reach_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bench.dat");
    let f = file.to_str().unwrap();
    let run = |env: (&str, &str), options: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
            .args(std::iter::once("bench").chain(options.split_whitespace()))
            .env_remove("HIPFILE_BACKEND")
            .env_remove("HIPFILE_LOG")
            .env(env.0, env.1)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, err) = run(("HIPFILE_MOCK_AIS", "absent"), &format!("--file {f} --size 8M --runs 1 --json"));
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["backends"], serde_json::json!(["bounce"]), "{out}");
    let p2p = &report["capabilities"][0];
    assert_eq!((p2p["backend"].as_str(), p2p["available"].as_bool()), (Some("mock-p2p"), Some(false)), "{out}");
    assert!(p2p["reason"].as_str().unwrap_or_default().contains("HIPFILE_MOCK_AIS=absent"), "{out}");
    let (ok, _, err) = run(("HIPFILE_MOCK_AIS", "absent"), &format!("--file {f} --runs 1 --backend p2p"));
    assert!(!ok && err.contains("HIPFILE_MOCK_AIS=absent"), "{err}");
    // ENODEV from every p2p request: bounce serves them all, verified.
    let (ok, out, err) = run(("HIPFILE_MOCK_AIS_STATUS", "19"), &format!("--file {f} --runs 1 --profile --json"));
    assert!(ok, "{err}");
    let report: Value = serde_json::from_str(&out).unwrap();
    assert!(report["results"].as_array().unwrap().iter().all(|r| r["verified"] == true), "{out}");
    let (ok, out, err) = run(("HIPFILE_MOCK_AIS_STATUS", "19"), &format!("--file {f} --runs 1 --backend p2p"));
    assert!(!ok && err.contains("No such device"), "{out}{err}");
}
