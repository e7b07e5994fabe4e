//! `hipfile check`, `hipfile cp` and `hipfile stats` on the mock GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

fn hipfile(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(args)
        .env_remove("HIPFILE_BACKEND")
        .env_remove("HIPFILE_LOG")
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("subcommands-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 13) as u8).collect()
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn check_reports_the_machine_and_each_path() {
    let file = scratch("check-file");
    std::fs::write(&file, data(1 << 20, 1)).unwrap();
    let shm = Path::new("/dev/shm").join(format!("hipfile-check-{}", std::process::id()));
    std::fs::write(&shm, data(8192, 2)).unwrap();
    let missing = scratch("does-not-exist");
    let start = std::time::Instant::now();
    let (ok, out, err) =
        hipfile(&["check", "--json", "--backend", "mock", file.to_str().unwrap(), shm.to_str().unwrap()]);
    assert!(start.elapsed() < std::time::Duration::from_secs(5), "check is slow");
    assert!(ok, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["served"], true);
    assert!(!report["backends"].as_array().unwrap().is_empty());
    assert!(report["kernel"]["pci_p2pdma"].is_string() && report["kernel"]["nvidia_fs_module"].is_boolean());
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths[0]["type"], "file");
    assert!(!["unknown", ""].contains(&paths[0]["file_system"].as_str().unwrap()), "{}", paths[0]);
    assert!(paths[0]["o_direct"].is_boolean() || paths[0]["o_direct"].is_string());
    assert!(paths[0]["direct"]["served"].is_boolean());
    assert_eq!(paths[1]["file_system"], "tmpfs", "{}", paths[1]);
    // A path that does not exist: reported, and the exit status says so.
    let (ok, out, _) = hipfile(&["check", "--backend", "mock", file.to_str().unwrap(), missing.to_str().unwrap()]);
    assert!(!ok);
    assert!(out.contains("No such file or directory") && out.contains("served by the backend asked for (mock): no"));
    // The staged path alone serves any readable file.
    let (ok, out, _) = hipfile(&["check", "--json", "--backend", "bounce", shm.to_str().unwrap()]);
    assert!(ok, "{out}");
    // It writes nothing: no file appears in its working directory.
    let dir = scratch("check-cwd");
    std::fs::create_dir_all(&dir).unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_hipfile")).args(["check"]).current_dir(&dir).output().unwrap();
    assert!(status.status.success() || status.status.code() == Some(1));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "check left a file behind");
    std::fs::remove_file(shm).unwrap();
}

#[test]
fn cp_copies_through_gpu_memory() {
    for (name, len) in [("empty", 0), ("small", 1000), ("unaligned", (3 << 20) + 4567), ("chunks", 9 << 20)] {
        let src = scratch(&format!("cp-{name}"));
        let dst = scratch(&format!("cp-{name}.copy"));
        let bytes = data(len, 3);
        std::fs::write(&src, &bytes).unwrap();
        let _ = std::fs::remove_file(&dst);
        for backend in ["mock", "bounce"] {
            let (ok, out, err) = hipfile(&[
                "cp",
                "--json",
                "--verify",
                "--force",
                "--chunk",
                "1M",
                "--backend",
                backend,
                src.to_str().unwrap(),
                dst.to_str().unwrap(),
            ]);
            assert!(ok, "{name} {backend}: {out}{err}");
            let report = json(&out);
            assert_eq!(report["bytes"], len as u64);
            assert_eq!(report["verified"], true);
            assert_eq!(std::fs::read(&dst).unwrap(), bytes, "{name} {backend}");
        }
    }
    // An existing destination is refused without --force; the source is never its own copy.
    let (src, dst) = (scratch("cp-small"), scratch("cp-small.copy"));
    let (ok, _, err) = hipfile(&["cp", "--backend", "mock", src.to_str().unwrap(), dst.to_str().unwrap()]);
    assert!(!ok && err.contains("exists"), "{err}");
    let (ok, _, err) = hipfile(&["cp", "-f", "--backend", "mock", src.to_str().unwrap(), src.to_str().unwrap()]);
    assert!(!ok && err.contains("same file"), "{err}");
    assert_eq!(std::fs::read(&src).unwrap(), data(1000, 3));
    // A sparse source: its size exactly, its holes still holes.
    let sparse = scratch("cp-sparse");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(64 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &data(1 << 20, 4), 32 << 20).unwrap();
    drop(f);
    let copy = scratch("cp-sparse.copy");
    let (ok, out, err) = hipfile(&[
        "cp",
        "--json",
        "-f",
        "--verify",
        "--backend",
        "mock",
        sparse.to_str().unwrap(),
        copy.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["bytes"], 64u64 << 20);
    assert!(report["data_bytes"].as_u64().unwrap() < 64 << 20, "holes copied: {report}");
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!(meta.len(), 64 << 20);
    assert!(meta.blocks() * 512 < 16 << 20, "the copy's holes were filled: {} blocks", meta.blocks());
}

#[test]
fn stats_shows_a_commands_statistics_at_its_exit() {
    let file = scratch("stats-bench");
    let exe = env!("CARGO_BIN_EXE_hipfile");
    let (ok, out, err) = hipfile(&[
        "stats",
        "--json",
        "--interval",
        "0",
        "--",
        exe,
        "bench",
        "--backend",
        "mock",
        "--mode",
        "read",
        "--size",
        "16M",
        "--runs",
        "2",
        "--file",
        file.to_str().unwrap(),
    ]);
    assert!(ok, "{out}{err}");
    let last = out.lines().last().unwrap();
    let report = json(last);
    assert_eq!(report["ended"], true);
    assert!(report["read"]["all"]["bytes"].as_u64().unwrap() >= 32 << 20, "{report}");
    assert!(report["files_registered"].as_u64().unwrap() >= 1);
    // A process that publishes nothing, and one that is not there.
    let (ok, _, err) = hipfile(&["stats", "--", "true"]);
    assert!(!ok && err.contains("published no hipfile statistics"), "{err}");
    let (ok, _, err) = hipfile(&["stats", "999999999"]);
    assert!(!ok && err.contains("no process"), "{err}");
}

#[test]
fn stats_watches_a_running_process() {
    // A bench long enough to be watched twice.
    let file = scratch("stats-watch");
    let mut child = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["bench", "--backend", "mock", "--mode", "read", "--size", "64M", "--runs", "40", "--file"])
        .arg(&file)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    let mut seen = None;
    for _ in 0..500 {
        let (ok, out, _) = hipfile(&["stats", "--json", "--interval", "0", &pid]);
        if ok {
            seen = Some(json(out.lines().last().unwrap()));
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let report = seen.expect("the bench published its statistics");
    assert_eq!(report["pid"].as_u64().unwrap().to_string(), pid);
    let status = child.wait().unwrap();
    assert!(status.success());
}
