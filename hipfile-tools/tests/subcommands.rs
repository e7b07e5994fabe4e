//! `hipfile check`, `hipfile cp`, `hipfile load` and `hipfile stats` on the mock GPU.

mod common;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{hipfile, refused};

/// `hipfile cp OPTIONS SRC DST`.
fn cp(options: &[&str], src: &Path, dst: &Path) -> (bool, String, String) {
    let paths = [src.to_str().unwrap(), dst.to_str().unwrap()];
    hipfile(&[&["cp"][..], options, &paths].concat())
}

/// A path in this binary's scratch directory: one directory for every run, so runs overwrite
/// rather than pile up; each name belongs to one test, so tests in parallel never share a file.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("subcommands");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn data(len: usize, seed: u32) -> Vec<u8> {
    (0..len as u32).map(|i| (i.wrapping_mul(2654435761).wrapping_add(seed) >> 13) as u8).collect()
}

/// A fresh directory `name` holding a file `src` of `bytes`.
fn with_source(name: &str, bytes: Vec<u8>) -> (PathBuf, PathBuf) {
    let dir = fresh_dir(name);
    let src = dir.join("src");
    std::fs::write(&src, bytes).unwrap();
    (dir, src)
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
    let (ok, out, err) =
        hipfile(&["check", "--json", "--backend", "mock", file.to_str().unwrap(), shm.to_str().unwrap()]);
    assert!(ok, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["served"], true);
    assert!(!report["backends"].as_array().unwrap().is_empty());
    assert!(report["kernel"]["pci_p2pdma"].is_string() && report["kernel"]["nvidia_fs_module"].is_boolean());
    let paths = report["paths"].as_array().unwrap();
    assert_eq!(paths[0]["type"], "file");
    assert!(!["unknown", ""].contains(&paths[0]["file_system"].as_str().unwrap()), "{}", paths[0]);
    assert!(paths[0]["o_direct"].is_boolean() || paths[0]["o_direct"].is_string());
    assert!(paths[0]["p2p"]["served"].is_boolean());
    assert_eq!(paths[1]["file_system"], "tmpfs", "{}", paths[1]);
    // Which libcufile.so.0 programs would load: hipfile-rs's, first on LD_LIBRARY_PATH.
    let lib_dir = scratch("check-cufile");
    std::fs::create_dir_all(&lib_dir).unwrap();
    let built = Path::new(env!("CARGO_BIN_EXE_hipfile")).parent().unwrap().join("deps/libhipfile_cufile.so");
    let link = lib_dir.join("libcufile.so.0");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&built, &link).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["check", "--json", "--backend", "mock"])
        .env("LD_LIBRARY_PATH", &lib_dir)
        .output()
        .unwrap();
    let cufile = &json(&String::from_utf8_lossy(&out.stdout))["cufile"];
    assert_eq!((cufile["path"].as_str(), &cufile["hipfile_rs"]), (link.to_str(), &serde_json::json!(true)), "{cufile}");
    assert_eq!(cufile["found_by"], "LD_LIBRARY_PATH");
    // A process holding two cuFile libraries (ours, and a stand-in for NVIDIA's): both listed, a
    // warning.
    let stand_in = lib_dir.join("libcufile.so.1");
    std::fs::copy(std::fs::canonicalize("/lib/x86_64-linux-gnu/libm.so.6").unwrap(), &stand_in).unwrap();
    let script = format!(
        "import ctypes, sys, time; ctypes.CDLL({:?}); ctypes.CDLL({:?}); print('ready', flush=True); time.sleep(60)",
        link.to_str().unwrap(),
        stand_in.to_str().unwrap()
    );
    let mut holder =
        Command::new("python3").args(["-c", &script]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut ready = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(holder.stdout.take().unwrap()), &mut ready).unwrap();
    assert_eq!(ready.trim(), "ready");
    let pid = holder.id().to_string();
    let report =
        Command::new(env!("CARGO_BIN_EXE_hipfile")).args(["check", "--backend", "mock", "--pid", &pid]).output();
    let json_report = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["check", "--json", "--backend", "mock", "--pid", &pid])
        .output();
    holder.kill().unwrap();
    holder.wait().unwrap();
    let loaded = json(&String::from_utf8_lossy(&json_report.unwrap().stdout))["cufile"]["process"]["loaded"].clone();
    let ours: Vec<(String, bool)> = loaded
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["path"].as_str().unwrap().to_owned(), l["hipfile_rs"] == serde_json::json!(true)))
        .collect();
    assert!(ours.contains(&(stand_in.to_str().unwrap().to_owned(), false)), "{loaded}");
    assert!(ours.iter().any(|(_, mine)| *mine) && ours.len() == 2, "{loaded}");
    let text = String::from_utf8_lossy(&report.unwrap().stdout).into_owned();
    assert!(text.contains(&format!("warning: process {pid} has loaded 2 cuFile libraries")), "{text}");
    // A path that does not exist: reported, and the exit status says so.
    let (ok, out, _) = hipfile(&["check", "--backend", "mock", file.to_str().unwrap(), missing.to_str().unwrap()]);
    assert!(!ok);
    assert!(out.contains("No such file or directory") && out.contains("served by the backend asked for (mock): no"));
    // The bounce backend says what it does with reads' tails on this machine, and a setting
    // changes what it says.
    assert!(out.contains("\n    reads' tails "), "{out}");
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["check", "--json", "--backend", "mock"])
        .env("HIPFILE_BOUNCE_DEMOTE", "false")
        .output()
        .unwrap();
    let report = json(&String::from_utf8_lossy(&out.stdout));
    let bounce = report["backends"].as_array().unwrap().iter().find(|b| b["backend"] == "bounce").unwrap().clone();
    assert_eq!(bounce["notes"], serde_json::json!(["reads' tails not demoted: HIPFILE_BOUNCE_DEMOTE=false"]));
    // The bounce path alone serves any readable file.
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
            let (ok, out, err) =
                cp(&["--json", "--verify", "--force", "--chunk", "1M", "--backend", backend], &src, &dst);
            assert!(ok, "{name} {backend}: {out}{err}");
            let report = json(&out);
            assert_eq!(report["bytes"], len as u64);
            assert_eq!(report["verified"], true);
            assert_eq!(std::fs::read(&dst).unwrap(), bytes, "{name} {backend}");
        }
    }
    // An existing destination is refused without --force; the source is never its own copy.
    let (src, dst) = (scratch("cp-small"), scratch("cp-small.copy"));
    let (ok, _, err) = cp(&["--backend", "mock"], &src, &dst);
    assert!(!ok && err.contains("exists"), "{err}");
    let (ok, _, err) = cp(&["-f", "--backend", "mock"], &src, &src);
    assert!(!ok && err.contains("same file"), "{err}");
    assert_eq!(std::fs::read(&src).unwrap(), data(1000, 3));
    // A sparse source: its size exactly, its holes still holes.
    let sparse = scratch("cp-sparse");
    let f = std::fs::File::create(&sparse).unwrap();
    f.set_len(64 << 20).unwrap();
    std::os::unix::fs::FileExt::write_all_at(&f, &data(1 << 20, 4), 32 << 20).unwrap();
    drop(f);
    let copy = scratch("cp-sparse.copy");
    let (ok, out, err) = cp(&["--json", "-f", "--verify", "--backend", "mock"], &sparse, &copy);
    assert!(ok, "{out}{err}");
    let report = json(&out);
    assert_eq!(report["bytes"], 64u64 << 20);
    assert!(report["data_bytes"].as_u64().unwrap() < 64 << 20, "holes copied: {report}");
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(&copy).unwrap();
    assert_eq!(meta.len(), 64 << 20);
    assert!(meta.blocks() * 512 < 16 << 20, "the copy's holes were filled: {} blocks", meta.blocks());
}

/// An empty directory of its own, for a test that lists what `cp` leaves behind.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = scratch(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Like `hipfile`, but fails the test (instead of hanging it) where the command has not ended
/// within a minute.
fn hipfile_or_hang(args: &[&str], what: &str) -> (bool, String, String) {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(args)
        .env_remove("HIPFILE_BACKEND")
        .env_remove("HIPFILE_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(60) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{what} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// The process's umask, which the copy's mode is subject to.
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:")).expect("Umask in /proc/self/status");
    u32::from_str_radix(line.trim(), 8).unwrap()
}

#[test]
fn cp_copies_what_a_file_of_unknown_size_reads() {
    // Proc files say their size is 0 and read as much as they hold.
    let src = Path::new("/proc/version");
    let expected = std::fs::read(src).unwrap();
    assert!(std::fs::metadata(src).unwrap().len() == 0 && !expected.is_empty());
    let dir = fresh_dir("cp-unknown-size");
    for backend in ["mock", "bounce"] {
        for chunk in ["4K", "1M"] {
            let dst = dir.join(format!("version-{backend}-{chunk}"));
            let (ok, out, err) = cp(&["--json", "--verify", "--chunk", chunk, "--backend", backend], src, &dst);
            assert!(ok, "{backend} {chunk}: {out}{err}");
            let report = json(&out);
            assert_eq!(report["bytes"], expected.len() as u64, "{report}");
            assert_eq!(report["verified"], true);
            assert_eq!(std::fs::read(&dst).unwrap(), expected, "{backend} {chunk}");
        }
    }
    // Several chunks' worth (4K chunks) from a file that still says 0: the environment of a
    // process of ours.
    let value: String = (0..10_000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let mut sleeper = Command::new("sleep").arg("60").env_clear().env("HIPFILE_CP_TEST", &value).spawn().unwrap();
    let environ = PathBuf::from(format!("/proc/{}/environ", sleeper.id()));
    let dst = dir.join("environ");
    let (ok, out, err) = cp(&["--json", "--verify", "--chunk", "4K", "--backend", "mock"], &environ, &dst);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
    assert!(ok, "{out}{err}");
    assert_eq!(std::fs::read(&dst).unwrap(), format!("HIPFILE_CP_TEST={value}\0").into_bytes());
    assert_eq!(json(&out)["bytes"], 10_017, "{out}");
    // A file that is really empty is still copied as empty.
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    let copy = dir.join("empty.copy");
    let (ok, out, err) = cp(&["--verify", "--backend", "mock"], &empty, &copy);
    assert!(ok, "{out}{err}");
    assert_eq!(std::fs::metadata(&copy).unwrap().len(), 0);
    let mut expected_names: Vec<String> = ["empty", "empty.copy", "environ"].iter().map(|s| s.to_string()).collect();
    expected_names.extend(["mock", "bounce"].iter().flat_map(|b| ["4K", "1M"].map(|c| format!("version-{b}-{c}"))));
    expected_names.sort();
    assert_eq!(names(&dir), expected_names, "cp left a file behind");
}

#[test]
fn cp_refuses_a_source_that_is_not_a_regular_file() {
    let dir = fresh_dir("cp-not-regular-src");
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let socket = dir.join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let dst = dir.join("copy");
    for (src, kind) in [
        (fifo.as_path(), "a FIFO"),
        (&socket, "a socket"),
        (Path::new("/dev/null"), "a character device"),
        (&dir, "a directory"),
    ] {
        // A FIFO without a writer blocks an open for reading forever.
        let (ok, out, err) = hipfile_or_hang(
            &["cp", "--backend", "mock", src.to_str().unwrap(), dst.to_str().unwrap()],
            &format!("the cp of {kind}"),
        );
        assert!(!ok, "{kind}: {out}{err}");
        let message = format!("{}: {kind}, not a regular file: hipfile cp copies regular files", src.display());
        assert!(err.contains(&message), "{kind}: {err}");
    }
    assert_eq!(names(&dir), ["fifo", "socket"], "cp left a file behind");
}

/// A file that says it is larger than what it reads (sysfs attributes say 4096 bytes): a
/// source that ends early, every time.
fn short_file() -> PathBuf {
    let candidates =
        ["/sys/kernel/mm/transparent_hugepage/enabled", "/sys/devices/system/cpu/online", "/sys/power/state"];
    let short = |p: &&str| match (std::fs::metadata(p), std::fs::read(p)) {
        (Ok(meta), Ok(data)) => meta.is_file() && (data.len() as u64) < meta.len(),
        _ => false,
    };
    PathBuf::from(
        candidates.iter().copied().find(short).expect("a sysfs file larger than its contents (is /sys mounted?)"),
    )
}

#[test]
fn cp_leaves_dst_untouched_when_the_source_ends_early() {
    let src = short_file();
    let dir = fresh_dir("cp-ends-early");
    let old = dir.join("old");
    std::fs::write(&old, b"the file cp must not damage").unwrap();
    let new = dir.join("new");
    for (dst, force) in [(&old, true), (&new, false)] {
        let mut args = vec!["cp", "--backend", "mock", src.to_str().unwrap(), dst.to_str().unwrap()];
        if force {
            args.push("--force");
        }
        let (ok, out, err) = hipfile(&args);
        assert!(!ok && err.contains("ended early"), "{}: {out}{err}", dst.display());
    }
    let now = std::fs::read(&old).unwrap();
    assert!(now == b"the file cp must not damage", "DST was changed: {} bytes now", now.len());
    assert_eq!(names(&dir), ["old"], "cp left a file behind");
}

#[test]
fn cp_drops_set_user_id_and_set_group_id() {
    use std::os::unix::fs::PermissionsExt;
    let dir = fresh_dir("cp-mode");
    let src = dir.join("setuid");
    std::fs::write(&src, data(5000, 5)).unwrap();
    std::fs::set_permissions(&src, std::fs::Permissions::from_mode(0o6755)).unwrap();
    let (new, old) = (dir.join("new"), dir.join("old"));
    // Replacing a file gives the copy's mode too, not the replaced file's.
    std::fs::write(&old, b"old").unwrap();
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o600)).unwrap();
    for dst in [&new, &old] {
        let (ok, out, err) = cp(&["-f", "--backend", "mock"], &src, dst);
        assert!(ok, "{out}{err}");
        assert_eq!(std::fs::read(dst).unwrap(), data(5000, 5));
        let mode = std::fs::metadata(dst).unwrap().permissions().mode() & 0o7777;
        assert!(mode == 0o755 & !umask(), "{}: mode {mode:o}, umask {:o}", dst.display(), umask());
    }
}

#[test]
fn cp_refuses_a_dangling_symbolic_link_as_dst() {
    let (dir, src) = with_source("cp-dangling", data(3000, 6));
    let link = dir.join("link");
    std::os::unix::fs::symlink("nowhere", &link).unwrap();
    for force in [false, true] {
        let mut args = vec!["cp", "--backend", "mock", src.to_str().unwrap(), link.to_str().unwrap()];
        if force {
            args.push("-f");
        }
        let (ok, out, err) = hipfile(&args);
        assert!(!ok, "{out}{err}");
        assert!(err.contains(&format!("{}: a dangling symbolic link", link.display())), "{err}");
    }
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(names(&dir), ["link", "src"], "cp wrote through the link or left a file behind");
}

#[test]
fn cp_through_a_symbolic_link_replaces_its_target() {
    let (dir, src) = with_source("cp-link", data(7000, 7));
    let target = dir.join("target");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("link");
    std::os::unix::fs::symlink("target", &link).unwrap();
    let (ok, _, err) = cp(&["--backend", "mock"], &src, &link);
    assert!(!ok && err.contains("exists"), "{err}");
    let (ok, out, err) = cp(&["-f", "--verify", "--backend", "mock"], &src, &link);
    assert!(ok, "{out}{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read(&target).unwrap(), data(7000, 7));
    // A link to the source is the source.
    let (ok, _, err) = cp(&["-f", "--backend", "mock"], &target, &link);
    assert!(!ok && err.contains("same file"), "{err}");
    assert_eq!(names(&dir), ["link", "src", "target"]);
}

#[test]
fn cp_refuses_a_dst_that_is_not_a_regular_file() {
    let (dir, src) = with_source("cp-not-regular-dst", data(2000, 8));
    let fifo = dir.join("fifo");
    mkfifo(&fifo);
    let sub = dir.join("sub");
    std::fs::create_dir(&sub).unwrap();
    for (dst, kind) in [(&fifo, "a FIFO"), (&sub, "a directory")] {
        let (ok, out, err) = hipfile_or_hang(
            &["cp", "-f", "--backend", "mock", src.to_str().unwrap(), dst.to_str().unwrap()],
            &format!("the cp onto {kind}"),
        );
        assert!(!ok, "{kind}: {out}{err}");
        let message = format!("{}: {kind}, not a regular file: hipfile cp replaces regular files only", dst.display());
        assert!(err.contains(&message), "{kind}: {err}");
    }
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(&dir), ["fifo", "src", "sub"], "cp left a file behind");
    assert!(names(&sub).is_empty());
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
    refused(&["stats", "--", "true"], "published no hipfile statistics");
    refused(&["stats", "999999999"], "no process");
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
    assert_eq!(report["ended"], false, "the process runs on: {report}");
    let (ok, out, _) = hipfile(&["stats", "--interval", "0", &pid]);
    assert!(ok && out.starts_with(&format!("pid {pid} (statistics level 1)\n")), "not ended: {out}");
    // Its output piped into a reader that leaves after one line: quiet, status 0.
    let mut watcher = Command::new(env!("CARGO_BIN_EXE_hipfile"))
        .args(["stats", "--interval", "0.05", &pid])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(watcher.stdout.take().unwrap()), &mut first).unwrap();
    assert!(first.starts_with("pid "), "{first}");
    let out = watcher.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    let status = child.wait().unwrap();
    assert!(status.success());
}

/// Every subcommand's output into a pipe its reader closed at once: no panic, status 0.
#[test]
fn a_closed_pipe_ends_the_tool_quietly() {
    for args in [&["check", "--backend", "mock"][..], &["bench", "--size", "4M", "--runs", "1", "--backend", "mock"]] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_hipfile"))
            .args(args)
            .env_remove("HIPFILE_LOG")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take()); // the reader leaves before the first line
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
        assert!(!err.contains("panicked") && !err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

/// A safetensors file of `tensors` (name, dtype, shape, bytes), laid out in order.
fn safetensors(path: &Path, tensors: &[(&str, &str, &[u64], Vec<u8>)]) {
    let mut at = 0;
    let mut entries = Vec::new();
    let mut body = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        entries.push(format!(
            r#""{name}":{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{at},{}]}}"#,
            at + bytes.len()
        ));
        at += bytes.len();
        body.extend_from_slice(bytes);
    }
    let header = format!("{{{}}}", entries.join(","));
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&body);
    std::fs::write(path, file).unwrap();
}

#[test]
fn load_reads_checkpoints_into_gpu_memory_and_refuses_lying_files() {
    let dir = fresh_dir("load");
    safetensors(
        &dir.join("a.safetensors"),
        &[("w", "F32", &[64, 1024], data(256 << 10, 3)), ("b", "BF16", &[7], data(14, 4))],
    );
    safetensors(&dir.join("b.safetensors"), &[("e", "U8", &[0], vec![]), ("v", "I64", &[3, 3], data(72, 5))]);
    let (ok, out, err) = hipfile(&["load", "--backend", "mock", "--verify", "--json", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    let report = json(&out);
    assert_eq!((report["files"].as_u64(), report["tensors"].as_u64()), (Some(2), Some(4)));
    assert_eq!(report["bytes"].as_u64(), Some((256 << 10) + 14 + 72));
    assert_eq!(report["verified_tensors"].as_u64(), Some(4));

    let index = r#"{"weight_map":{"w":"a.safetensors","b":"a.safetensors"}}"#;
    std::fs::write(dir.join("model.safetensors.index.json"), index).unwrap();
    let (ok, out, err) = hipfile(&["load", "--backend", "mock", "--json", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(json(&out)["files"].as_u64(), Some(1), "the index names one file");

    let lying = dir.join("lying.safetensors");
    let whole = std::fs::read(dir.join("a.safetensors")).unwrap();
    std::fs::write(&lying, &whole[..whole.len() - 100]).unwrap();
    let (ok, _, err) = hipfile(&["load", "--backend", "mock", lying.to_str().unwrap()]);
    assert!(!ok && err.contains("past the") && err.contains("lying.safetensors"), "{err}");
    std::fs::write(&lying, b"not a safetensors file at all").unwrap();
    refused(&["load", "--backend", "mock", lying.to_str().unwrap()], "header length");
}

/// A checkpoint directory saved by the Python package (`hipfile.safetensors.save_model_dir`:
/// shards and their index) loads with `hipfile load --verify`. Where the package's environment
/// (`target/python`, made by `cargo xtask ci` before this suite runs) is missing, there is no
/// saver to run: the test says so and passes.
#[test]
fn a_directory_saved_by_the_python_package_loads_verified() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/python/bin/python");
    let dir = fresh_dir("python-saved");
    let save = r#"
import sys, numpy as np, hipfile.safetensors as hs
rng = np.random.default_rng(5)
sd = {f"layers.{i}.w": rng.standard_normal((300 + i, 128), dtype=np.float32) for i in range(6)}
sd["ids"] = np.arange(1000, dtype=np.int64)
print(len(hs.save_model_dir(sd, sys.argv[1], max_shard_size=400_000)))
"#;
    let saved = Command::new(&python).args(["-c", save, dir.to_str().unwrap()]).output();
    let Ok(saved) = saved else {
        eprintln!("skipped: no {} (run `cargo xtask ci`, which makes it)", python.display());
        return;
    };
    assert!(saved.status.success(), "{}", String::from_utf8_lossy(&saved.stderr));
    let written: usize = String::from_utf8_lossy(&saved.stdout).trim().parse().unwrap();
    assert!(written > 2, "several shards and the index: {written}");
    let (ok, out, err) = hipfile(&["load", "--backend", "mock", "--verify", "--json", dir.to_str().unwrap()]);
    assert!(ok, "{err}");
    let report = json(&out);
    assert_eq!(report["tensors"].as_u64(), Some(7), "{out}");
    assert_eq!(report["verified_tensors"].as_u64(), Some(7), "{out}");
    assert_eq!(report["files"].as_u64(), Some(written as u64 - 1), "every shard the index names: {out}");
}
