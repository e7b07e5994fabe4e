//! The C programs in `tests/c`, compiled with `-std=c11 -Wall -Wextra -Werror` against
//! `include/hipfile.h` and Debian's HIP headers, linked with libhipfile and the mock HIP runtime
//! (instead of `libamdhip64`), and run with no GPU; each once more with
//! `-fsanitize=address,undefined`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;

#[derive(Clone, Copy, PartialEq)]
enum Flavour {
    Plain,
    Sanitized,
    /// Linked with `libhipfile.a` instead of `libhipfile.so`.
    Static,
    /// Linked with libhipfile only: the HIP runtime is whatever libhipfile finds.
    NoMockHip,
}

/// Compiles `tests/c/<name>.c` into the scratch directory.
fn build(name: &str, flavour: Flavour, defines: &[String]) -> PathBuf {
    require_hip_headers();
    let lib = lib_dir();
    let src_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
    let suffix = match flavour {
        Flavour::Plain => "",
        Flavour::Sanitized => "-san",
        Flavour::Static => "-static",
        Flavour::NoMockHip => "-nomock",
    };
    // Tests run in parallel (threads or processes): every build gets its own executable.
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let n = BUILDS.fetch_add(1, Ordering::Relaxed);
    let exe = scratch("c").join(format!("{name}{suffix}-{}-{n}", std::process::id()));
    let mut cmd = cc();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-g", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE"])
        .args(defines)
        .arg("-I")
        .arg(include_dir())
        .arg(src_dir.join(format!("{name}.c")));
    if flavour == Flavour::Sanitized {
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]);
    }
    cmd.arg("-L").arg(&lib).arg(format!("-Wl,-rpath,{}", lib.display()));
    match flavour {
        // What `--print native-static-libs` lists for a Rust staticlib on Linux.
        Flavour::Static => cmd.arg(deps_dir().join("libhipfile_capi.a")).args([
            "-lhipfile_mockhip",
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
        ]),
        Flavour::NoMockHip => cmd.arg("-lhipfile"),
        // `--no-as-needed`: a program that calls no HIP function itself (`open.c`) still runs
        // with the mock in the process, as a HIP program would.
        _ => cmd.args(["-lhipfile", "-Wl,--no-as-needed", "-lhipfile_mockhip", "-Wl,--as-needed", "-lpthread"]),
    };
    cmd.arg("-o").arg(&exe);
    run_ok(&mut cmd);
    exe
}

fn write_file(name: &str, data: &[u8]) -> PathBuf {
    let path = scratch("c-data").join(name);
    std::fs::write(&path, data).expect("test file");
    path
}

fn guide_example(flavour: Flavour, backend: &str) {
    guide_example_on(flavour, backend, "5");
}

/// The same over a mock that answers with HIP `abi`'s ABI (`HIPFILE_MOCK_HIP_ABI`): the library
/// reads the runtime's version and its pointer answers either way.
fn guide_example_on(flavour: Flavour, backend: &str, abi: &str) {
    let file = write_file(&format!("example-{}-{backend}-{abi}", flavour as u8), &pattern(1 << 20, 1));
    let exe = build("example", flavour, &[format!("-DHIPFILE_EXAMPLE_PATH=\"{}\"", file.display())]);
    let out = run_ok(&mut program(&exe, &[], &[("HIPFILE_BACKEND", backend), ("HIPFILE_MOCK_HIP_ABI", abi)]));
    // Quiet by default: the library writes nothing where the application did not ask.
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stderr of the example");
}

/// `copy` moves an odd-sized file through GPU memory; the result must equal the source.
fn copy(flavour: Flavour, backend: &str) {
    let data = pattern((3 << 20) + 4567, 7);
    let src = write_file(&format!("copy-src-{backend}-{}", flavour as u8), &data);
    let dst = src.with_extension("out");
    let exe = build("copy", flavour, &[]);
    let out = run_ok(&mut program(&exe, &[&src, &dst], &[("HIPFILE_BACKEND", backend)]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("copied {} bytes", data.len()));
    assert!(std::fs::read(&dst).expect("copy output") == data, "copy differs from its source");
}

/// C program `name` (tests/c/NAME.c) built as `flavour` and run with `args` and `env`: it
/// succeeds and prints `ok`.
fn runs_ok(name: &str, flavour: Flavour, args: &[&Path], env: &[(&str, &str)]) -> Output {
    let exe = build(name, flavour, &[]);
    let out = run_ok(&mut program(&exe, args, env));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok");
    out
}

/// `batch`: the batch API case by case (tests/c/batch.c).
fn batch(flavour: Flavour, backend: &str) {
    let dir = scratch("c-data");
    let out = runs_ok("batch", flavour, &[&dir], &[("HIPFILE_BACKEND", backend), ANY_FS]);
    // A quiet library: nothing on stderr (no panic message for a huge timeout, say).
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

/// `async`: stream-ordered I/O case by case (tests/c/async.c), with `signal` telling the
/// stream it has reached an operation.
fn stream_ordered(flavour: Flavour, backend: &str, signal: &str) {
    let dir = scratch("c-data");
    let env = [("HIPFILE_BACKEND", backend), ("HIPFILE_STREAM_SIGNAL", signal), ANY_FS];
    runs_ok("async", flavour, &[&dir], &env);
}

/// `params`: parameters and driver properties (tests/c/params.c).
fn params(flavour: Flavour) {
    runs_ok("params", flavour, &[], &[]);
}

/// `hipcalls`: the HIP calls programs around file I/O make, over the mock HIP runtime, with
/// HIP's codes for each misuse (tests/c/hipcalls.c).
/// `abi`: the HIP ABI the mock answers with (`HIPFILE_MOCK_HIP_ABI`).
fn hip_calls(flavour: Flavour, abi: &str) {
    runs_ok("hipcalls", flavour, &[], &[("HIPFILE_MOCK_HIP_ABI", abi)]);
}

/// `managed`: managed memory as the buffer, over a mock that answers with HIP `abi`'s ABI
/// (tests/c/managed.c).
fn managed_memory(flavour: Flavour, backend: &str, abi: &str) {
    let dir = scratch("c-data");
    let env = [("HIPFILE_BACKEND", backend), ("HIPFILE_MOCK_HIP_ABI", abi), ANY_FS];
    runs_ok("managed", flavour, &[&dir], &env);
}

/// `host`: host memory as the buffer, once the parameter allows it (tests/c/host.c).
fn host_memory(flavour: Flavour, backend: &str) {
    let dir = scratch("c-data");
    runs_ok("host", flavour, &[&dir], &[("HIPFILE_BACKEND", backend), ANY_FS]);
}

/// `stats`: the statistics after a known sequence of calls (tests/c/stats.c), read once more
/// by this process while the program waits: the figures another process sees are the
/// program's own. `bounced`: the p2p path finds no path to the device and the bounce path
/// serves instead, which the statistics count.
fn statistics(flavour: Flavour, backend: &str, path: &str, bounced: bool) {
    use hipfile::stats::{Counter, Remote};
    use hipfile_core::Direction::{Read, Write as Wr};
    use std::io::{BufRead, Write};
    let exe = build("stats", flavour, &[]);
    let dir = scratch("c-data");
    let mut env = vec![("HIPFILE_BACKEND", backend), ("HIPFILE_STATS_LEVEL", "3"), ANY_FS];
    if bounced {
        env.push(("HIPFILE_MOCK_AIS_STATUS", "19")); // ENODEV: no path to the device
    }
    let mut child = program(&exe, &[&dir, Path::new(path), Path::new("wait")], &env)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().unwrap()).read_line(&mut line).unwrap();
    let seen = {
        let words: Vec<u64> = line.split_whitespace().skip(1).map(|w| w.parse().unwrap()).collect();
        let remote = Remote::connect(words[0] as u32).unwrap();
        let snap = remote.snapshot().unwrap();
        let (r, w) = (snap.totals(Read, None, None), snap.totals(Wr, None, None));
        assert_eq!((r.ok, r.bytes), (words[1], words[2]), "the program's own figures");
        assert_eq!((w.ok, w.err, snap.level), (1, 1, 3));
        snap.get(Counter::BouncedNoPath)
    };
    child.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "line {line:?}, stdout {}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(seen > 0, bounced, "retries on bounce counted: {seen}");
}

/// `logging`: the logging parameters send the library's messages to a file in a directory.
#[test]
fn the_logging_parameters_write_a_private_log_file_and_nothing_to_stderr() {
    let dir = scratch(&format!("c-log-{}", std::process::id()));
    let file = write_file(&format!("logging-src-{}", std::process::id()), &pattern(1 << 20, 3));
    let out = runs_ok("logging", Flavour::Plain, &[&dir, &file], &[ANY_FS]);
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stderr");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `devices` with two mock devices: buffers of either device, registered or not, whatever
/// device is current, which stays current.
fn devices(flavour: Flavour, backend: &str) {
    let src = write_file(&format!("devices-src-{backend}-{}", flavour as u8), &pattern(3 << 20, 11));
    let dst = src.with_extension("out");
    let env = [("HIPFILE_MOCK_DEVICES", "2"), ("HIPFILE_BACKEND", backend), ANY_FS];
    runs_ok("devices", flavour, &[&src, &dst], &env);
}

/// Whether files in the scratch directory can be opened with `O_DIRECT` (the p2p path
/// needs it; the tests below lift the file-system rule with `HIPFILE_UNSUPPORTED_FILE_SYSTEMS`).
fn scratch_has_o_direct() -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    let probe = write_file(&format!("o-direct-probe-{}", std::process::id()), b"x");
    let ok = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&probe).is_ok();
    if !ok {
        eprintln!("the scratch file system refuses O_DIRECT: the p2p path cannot be exercised here");
    }
    ok
}

/// `copy` of a file of `len` bytes with `env`: its output and stderr, or its failure.
fn copy_with(len: usize, env: &[(&str, &str)]) -> (bool, String, String) {
    let data = pattern(len, 11);
    static N: AtomicUsize = AtomicUsize::new(0);
    // Tests run in parallel processes: the name must be unique across them.
    let src = write_file(&format!("ais-src-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)), &data);
    let dst = src.with_extension("out");
    let exe = build("copy", Flavour::Plain, &[]);
    let out = run(&mut program(&exe, &[&src, &dst], env));
    if out.status.success() {
        assert!(std::fs::read(&dst).expect("copy output") == data, "copy differs from its source");
    }
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const ANY_FS: (&str, &str) = ("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "true");
/// Diagnostics on stderr (the library writes none unless asked).
const LOG: (&str, &str) = ("HIPFILE_LOG", "stderr");
/// Diagnostics on stderr down to `debug`, where errors the caller got a code for are explained.
const DEBUG_LOG: (&str, &str) = ("HIPFILE_LOG", "debug");

#[test]
fn the_ais_path_serves_aligned_io_over_the_mock_runtime() {
    if !scratch_has_o_direct() {
        return;
    }
    // P2P only: bounce could not have served it.
    let (ok, out, err) = copy_with(3 << 20, &[("HIPFILE_BACKEND", "p2p"), ANY_FS]);
    assert!(ok && out.contains("copied 3145728 bytes"), "{out}{err}");
    // An aligned read past the end of the file returns the bytes before it (semantics §5); writing
    // those 100 bytes back is unaligned, and P2P only has no backend for it: upstream's
    // -hipFileInternalError.
    let (ok, _, err) = copy_with((3 << 20) + 100, &[("HIPFILE_BACKEND", "p2p"), ANY_FS]);
    assert!(!ok && err.contains("hipFileWrite at 3145728: -5030 of 100"), "{err}");
}

#[test]
fn unaligned_requests_go_to_bounce_and_the_log_says_why_once() {
    if !scratch_has_o_direct() {
        return;
    }
    let (ok, _, err) = copy_with((3 << 20) + 4567, &[("HIPFILE_BACKEND", "auto"), ANY_FS, LOG]);
    assert!(ok, "{err}");
    let line = "hipfile: p2p (AIS) did not serve a request: not aligned for direct I/O";
    assert_eq!(err.matches(line).count(), 1, "{err}");
    assert!(err.contains("; bounce did"), "{err}");
}

#[test]
fn the_last_close_logs_each_backends_counters_at_debug_only() {
    let bounce = ("HIPFILE_BACKEND", "bounce");
    let (ok, _, err) = copy_with(3 << 20, &[bounce, DEBUG_LOG]);
    assert!(ok, "{err}");
    // The copy read 3 MiB and wrote them out, in several calls.
    let line = err.lines().find(|l| l.contains("bounce since the open: ")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains(" served_bytes=6291456 "), "{line}");
    assert!(line.contains(" file_ns="), "{line}");
    let (ok, _, err) = copy_with(3 << 20, &[bounce, LOG]);
    assert!(ok && !err.contains("since the open"), "{err}");
}

#[test]
fn no_path_falls_back_when_allowed_and_is_an_errno_when_not() {
    if !scratch_has_o_direct() {
        return;
    }
    let enodev = ("HIPFILE_MOCK_AIS_STATUS", "19");
    let (ok, _, err) = copy_with(3 << 20, &[("HIPFILE_BACKEND", "auto"), enodev, ANY_FS, LOG]);
    assert!(ok, "{err}");
    assert_eq!(err.matches("hipfile: p2p (AIS) has no path to the device (No such device").count(), 1, "{err}");
    let (ok, _, err) = copy_with(3 << 20, &[("HIPFILE_BACKEND", "p2p"), enodev, ANY_FS]);
    assert!(!ok && err.contains("hipFileRead at 0: -1 (No such device)"), "{err}");
    // Compat mode off: no bounce, the errno comes back.
    let no_compat = ("HIPFILE_ALLOW_COMPAT_MODE", "false");
    let (ok, _, err) = copy_with(3 << 20, &[("HIPFILE_BACKEND", "auto"), enodev, no_compat, ANY_FS]);
    assert!(!ok && err.contains("-1 (No such device)"), "{err}");
}

#[test]
fn a_hip_without_ais_has_no_p2p_and_says_why() {
    let absent = ("HIPFILE_MOCK_AIS", "absent");
    let (result, log) = open_driver(Flavour::Plain, &[("HIPFILE_BACKEND", "p2p"), absent, LOG]);
    assert_eq!(result, "5007 0 0", "{log}"); // hipFilePlatformNotSupported
    assert!(log.contains("p2p (AIS) is not available: HIP 5.2.21153 has no hipAmdFileRead"), "{log}");
    // Under auto, the bounce path serves alone, and stderr says why.
    let (result, log) = open_driver(Flavour::Plain, &[absent, LOG]);
    // ... and only when asked.
    let (result_quiet, quiet) = open_driver(Flavour::Plain, &[absent]);
    assert_eq!((result_quiet.as_str(), quiet.as_str()), ("0 0 1", ""));
    assert_eq!(result, "0 0 1");
    assert!(log.contains("p2p (AIS) is not available: HIP 5.2.21153 has no hipAmdFileRead"), "{log}");
    assert!(log.contains("; I/O goes through bounce"), "{log}");
}

fn errors(flavour: Flavour, backend: &str) {
    let data: Vec<u8> = (0..64 * 1024).map(|i: usize| (i * 7 + 3) as u8).collect();
    let file = write_file(&format!("errors-{}-{backend}", flavour as u8), &data);
    let exe = build("errors", flavour, &[]);
    let out = run_ok(&mut program(&exe, &[&file], &[("HIPFILE_BACKEND", backend)]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "all error paths behave");
}

fn threads(flavour: Flavour, backend: &str) {
    let file = write_file(&format!("threads-{}-{backend}", flavour as u8), &pattern(8192, 3));
    let exe = build("threads", flavour, &[]);
    let out = run_ok(&mut program(&exe, &[&file], &[("HIPFILE_BACKEND", backend)]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "64 threads opened the driver once");
}

/// Runs `open` and returns its stdout ("<err> <hip_drv_err> <use count>") and stderr.
fn open_driver(flavour: Flavour, env: &[(&str, &str)]) -> (String, String) {
    let exe = build("open", flavour, &[]);
    let out = run_ok(&mut program(&exe, &[], env));
    (String::from_utf8_lossy(&out.stdout).trim().to_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_bad_setting_fails_the_open_and_says_why() {
    assert_eq!(open_driver(Flavour::Plain, &[]).0, "0 0 1");
    let (result, log) = open_driver(Flavour::Plain, &[("HIPFILE_BACKEND", "fastest"), DEBUG_LOG]);
    assert_eq!(result, "5002 0 0"); // hipFileDriverInvalidProps, driver still closed
    assert!(log.contains("HIPFILE_BACKEND") && log.contains("fastest"), "{log}");
}

#[test]
fn without_a_gpu_runtime_the_driver_says_why_it_cannot_open() {
    require_hip_headers(); // the same package brings Debian's libamdhip64, found by dlopen
    // Without the mock in the process, libhipfile finds Debian's HIP, which has no device
    // here, and no CUDA runtime: the driver cannot open, and stderr says why as a warning
    // (`HIPFILE_LOG=warn` and above), nothing by default.
    let (result, log) = open_driver(Flavour::NoMockHip, &[("HIPFILE_LOG", "warn")]);
    assert_eq!(result, "5007 0 0"); // hipFilePlatformNotSupported
    assert!(log.contains("no GPU runtime") && log.contains("libamdhip64.so: no device"), "{log}");
    assert_eq!(open_driver(Flavour::NoMockHip, &[]), ("5007 0 0".to_owned(), String::new()), "quiet by default");
}

#[test]
fn without_a_gpu_runtime_parameters_are_still_staged_and_read_back() {
    require_hip_headers(); // Debian's libamdhip64, found by dlopen, has no device here
    let exe = build("noruntime", Flavour::NoMockHip, &[]);
    let out = run_ok(&mut program(&exe, &[], &[]));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "ok", "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "a quiet library");
}

/// Runs `safety MODE ARGS` (tests/c/safety.c) and returns its stdout, which starts with "ok".
fn safety(flavour: Flavour, mode: &str, args: &[&Path], env: &[(&str, &str)]) -> String {
    let exe = build("safety", flavour, &[]);
    let mut all: Vec<&Path> = vec![Path::new(mode)];
    all.extend(args);
    let out = run_ok(&mut program(&exe, &all, env));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(stdout.starts_with("ok"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// A fresh path in the scratch directory, unique across test processes.
fn scratch_path(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    scratch("c-data").join(format!("{name}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)))
}

fn signals(flavour: Flavour, backend: &str, hz: &str) {
    let (file, out) = (scratch_path("signals-in"), scratch_path("signals-out"));
    let line = safety(
        flavour,
        "signals",
        &[&file, &out, Path::new(hz), Path::new("2")],
        &[("HIPFILE_BACKEND", backend), ANY_FS],
    );
    eprintln!("{backend} {hz} Hz: {line}");
    let _ = (std::fs::remove_file(file), std::fs::remove_file(out));
}

#[test]
fn one_handle_is_one_file_whatever_the_caller_does_with_its_descriptor() {
    let (a, b) = (scratch_path("reuse-a"), scratch_path("reuse-b"));
    for (flavour, backend) in [(Flavour::Sanitized, "bounce"), (Flavour::Plain, "auto")] {
        safety(flavour, "reuse", &[&a, &b], &[("HIPFILE_BACKEND", backend), ANY_FS]);
    }
}

#[test]
fn o_append_writes_land_at_their_offsets_and_o_path_is_refused() {
    let file = scratch_path("append");
    safety(Flavour::Sanitized, "append", &[&file], &[("HIPFILE_BACKEND", "bounce")]);
    safety(Flavour::Sanitized, "opath", &[&file], &[]);
}

#[test]
fn a_forked_child_works_and_the_parent_keeps_working() {
    let file = scratch_path("fork");
    for (flavour, backend) in [(Flavour::Sanitized, "bounce"), (Flavour::Plain, "auto")] {
        safety(flavour, "fork", &[&file], &[("HIPFILE_BACKEND", backend), ANY_FS]);
    }
}

#[test]
fn the_library_never_writes_to_a_descriptor_it_was_not_given() {
    let file = scratch_path("quiet");
    safety(Flavour::Plain, "quiet", &[&file], &[("HIPFILE_BACKEND", "auto"), ANY_FS]);
}

#[test]
fn a_closed_stderr_pipe_never_fails_io() {
    // Logging asked for, stderr a pipe nobody reads: the log line is lost, the read is not.
    let file = scratch_path("pipe");
    std::fs::write(&file, pattern(4 << 20, 1)).unwrap();
    let exe = build("copy", Flavour::Plain, &[]);
    let dst = file.with_extension("out");
    let mut cmd = program(&exe, &[&file, &dst], &[("HIPFILE_LOG", "stderr"), ("HIPFILE_MOCK_AIS", "absent")]);
    let mut child = cmd.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap();
    drop(child.stderr.take());
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(std::fs::read(&dst).unwrap() == std::fs::read(&file).unwrap());
}

#[test]
fn closing_under_load_releases_every_descriptor_and_thread() {
    let file = scratch_path("resources");
    safety(
        Flavour::Plain,
        "resources",
        &[&file, Path::new("256")],
        &[("HIPFILE_BACKEND", "bounce"), ("HIPFILE_BOUNCE_CHUNK_KIB", "64")],
    );
}

/// `libfaultfs.so` (tests/c/faultfs.c), built once per test process.
fn faultfs() -> PathBuf {
    static LIB: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    LIB.get_or_init(|| {
        let lib = scratch("c").join(format!("libfaultfs-{}.so", std::process::id()));
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/faultfs.c");
        run_ok(
            cc().args(["-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror"])
                .arg(&src)
                .arg("-ldl")
                .arg("-o")
                .arg(&lib),
        );
        lib
    })
    .clone()
}

/// The ways a request can reach the file in these tests, with the settings that choose them.
const PATHS: [(&str, &[(&str, &str)]); 4] = [
    // Every system call of the bounce path goes through faultfs.
    ("bounce-syscalls", &[("HIPFILE_BACKEND", "bounce"), ("HIPFILE_BOUNCE_IO_URING", "false")]),
    // Direct pieces through io_uring (which faultfs does not see), the rest through syscalls.
    ("bounce-io_uring", &[("HIPFILE_BACKEND", "bounce")]),
    // The p2p path (the mock HIP runtime's AIS) for aligned requests, bounce for the rest.
    ("auto", &[("HIPFILE_BACKEND", "auto"), ANY_FS, ("HIPFILE_BOUNCE_IO_URING", "false")]),
    // The p2p path alone (aligned requests only).
    ("p2p", &[("HIPFILE_BACKEND", "p2p"), ANY_FS]),
];

/// Runs one fault scenario over `paths`: `faultfs_mode` is the FAULTFS setting, `expect` what
/// the faulty read and write must give (`None`: not run), `extra` the program's extra arguments.
fn fault_scenario(faultfs_mode: &str, expect: [Option<&str>; 2], extra: &[&str], paths: &[&str]) -> usize {
    fault_scenario_as(Flavour::Plain, faultfs_mode, expect, extra, paths)
}

fn fault_scenario_as(
    flavour: Flavour,
    faultfs_mode: &str,
    expect: [Option<&str>; 2],
    extra: &[&str],
    paths: &[&str],
) -> usize {
    if !scratch_has_o_direct() {
        return 0;
    }
    let exe = build("faults", flavour, &[]);
    let mut ran = 0;
    for (name, env) in PATHS.iter().filter(|(name, _)| paths.contains(name)) {
        for (direction, expect) in ["read", "write"].into_iter().zip(expect) {
            let Some(expect) = expect else { continue };
            for alignment in ["aligned", "unaligned"] {
                if *name == "p2p" && alignment == "unaligned" {
                    continue; // no backend for it, by design
                }
                let file = scratch_path("faulty");
                let mut args: Vec<&Path> = vec![&file, Path::new(direction), Path::new(alignment), Path::new(expect)];
                args.extend(extra.iter().map(Path::new));
                let mut cmd = program(&exe, &args, env);
                // The sanitizer's runtime must come first in the process.
                let preload = match flavour {
                    Flavour::Sanitized => format!("{}:{}", asan_runtime(), faultfs().display()),
                    _ => faultfs().display().to_string(),
                };
                cmd.env("LD_PRELOAD", preload).env("FAULTFS", faultfs_mode);
                let out = run(&mut cmd);
                let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
                assert!(
                    out.status.success() && stdout.starts_with("ok"),
                    "{faultfs_mode} {extra:?} on {name}, {alignment} {direction}: {stdout}{stderr}"
                );
                let _ = std::fs::remove_file(file);
                ran += 1;
            }
        }
    }
    eprintln!("{faultfs_mode} {extra:?}: {ran} scenarios");
    ran
}

const ALL_PATHS: &[&str] = &["bounce-syscalls", "bounce-io_uring", "auto", "p2p"];
/// Paths where every file system call passes faultfs.
const SEEN_PATHS: &[&str] = &["bounce-syscalls", "auto", "p2p"];

#[test]
fn faults_eintr_and_eagain_storms_are_waited_out() {
    fault_scenario("eintr", [Some("ok"), Some("ok")], &[], ALL_PATHS);
    fault_scenario("eagain", [Some("ok"), Some("ok")], &[], ALL_PATHS);
}

#[test]
fn faults_short_transfers_are_continued() {
    // 1000 bytes: short direct transfers leave the rest unaligned.
    fault_scenario("short:1000", [Some("ok"), Some("ok")], &[], ALL_PATHS);
    fault_scenario("short:65536", [Some("ok"), Some("ok")], &[], ALL_PATHS);
}

#[test]
fn faults_eio_in_the_middle_is_reported() {
    // Seven MiB in: inside every request's range, aligned or not.
    fault_scenario("eio_at:7340032", [Some("errno=5"), Some("errno=5")], &[], SEEN_PATHS);
}

#[test]
fn faults_the_file_size_limit_is_reported() {
    // RLIMIT_FSIZE is the kernel's own fault: every path sees it (writes only).
    fault_scenario("none", [None, Some("errno=27")], &["fsize"], ALL_PATHS);
}

#[test]
fn faults_a_failing_gpu_copy_is_reported() {
    // The bounce path copies; the p2p path does not (its reads land in device memory).
    fault_scenario(
        "none",
        [Some("ret=-999"), Some("ret=-999")],
        &["copyfail=2"],
        &["bounce-syscalls", "bounce-io_uring"],
    );
}

#[test]
fn faults_under_sanitizers() {
    let short = [Some("ok"), Some("ok")];
    fault_scenario_as(Flavour::Sanitized, "short:1000", short, &[], &["bounce-syscalls", "auto"]);
    let eio = [Some("errno=5"), Some("errno=5")];
    fault_scenario_as(Flavour::Sanitized, "eio_at:7340032", eio, &[], &["auto"]);
}

/// The path of the compiler's AddressSanitizer runtime (`libasan.so`).
fn asan_runtime() -> String {
    let out = run_ok(cc().arg("-print-file-name=libasan.so"));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// One test per row: the C program runs above, in each flavour and configuration that matters.
macro_rules! runs {
    ($($name:ident => $run:expr,)*) => {
        $(#[test] fn $name() { $run; })*
    };
}

runs! {
    amds_complete_example_runs_unchanged => guide_example(Flavour::Plain, "auto"),
    amds_complete_example_under_sanitizers => guide_example(Flavour::Sanitized, "auto"),
    amds_complete_example_with_bounce => guide_example(Flavour::Sanitized, "bounce"),
    amds_complete_example_over_hip_6s_abi => guide_example_on(Flavour::Plain, "auto", "6"),
    copy_through_gpu_memory_auto => copy(Flavour::Plain, "auto"),
    copy_through_gpu_memory_bounce => copy(Flavour::Plain, "bounce"),
    copy_through_gpu_memory_mock => copy(Flavour::Plain, "mock"),
    copy_under_sanitizers => copy(Flavour::Sanitized, "auto"),
    copy_with_bounce_under_sanitizers => copy(Flavour::Sanitized, "bounce"),
    copy_with_the_static_library => copy(Flavour::Static, "auto"),
    batches_as_upstreams_tests_have_them_auto => batch(Flavour::Plain, "auto"),
    batches_as_upstreams_tests_have_them_bounce => batch(Flavour::Plain, "bounce"),
    batches_under_sanitizers => batch(Flavour::Sanitized, "auto"),
    stream_ordered_io_as_upstreams_tests_have_it_auto => stream_ordered(Flavour::Plain, "auto", "hostfn"),
    stream_ordered_io_as_upstreams_tests_have_it_bounce => stream_ordered(Flavour::Plain, "bounce", "hostfn"),
    stream_ordered_io_signalled_by_events => stream_ordered(Flavour::Plain, "bounce", "event"),
    stream_ordered_io_inline => stream_ordered(Flavour::Plain, "bounce", "inline"),
    stream_ordered_io_under_sanitizers => stream_ordered(Flavour::Sanitized, "auto", "hostfn"),
    parameters_as_upstreams_tests_have_them => params(Flavour::Plain),
    hip_calls_of_file_io_programs => hip_calls(Flavour::Plain, "5"),
    hip_calls_under_sanitizers => hip_calls(Flavour::Sanitized, "5"),
    hip_calls_with_hip_6s_abi => hip_calls(Flavour::Plain, "6"),
    parameters_under_sanitizers => params(Flavour::Sanitized),
    managed_memory_on_the_bounce_path_hip5s_abi => managed_memory(Flavour::Plain, "bounce", "5"),
    managed_memory_the_p2p_path_declines_hip5s_abi => managed_memory(Flavour::Plain, "auto", "5"),
    managed_memory_on_the_bounce_path_hip6s_abi => managed_memory(Flavour::Plain, "auto", "6"),
    managed_memory_under_sanitizers => managed_memory(Flavour::Sanitized, "bounce", "5"),
    host_memory_buffers_when_allowed_auto => host_memory(Flavour::Plain, "auto"),
    host_memory_buffers_when_allowed_bounce => host_memory(Flavour::Plain, "bounce"),
    host_memory_buffers_under_sanitizers => host_memory(Flavour::Sanitized, "auto"),
    statistics_of_the_p2p_path => statistics(Flavour::Plain, "auto", "p2p", false),
    statistics_of_the_bounce_path => statistics(Flavour::Plain, "bounce", "bounce", false),
    statistics_of_a_retry_on_the_bounce_path => statistics(Flavour::Plain, "auto", "bounce", true),
    statistics_under_sanitizers => statistics(Flavour::Sanitized, "auto", "p2p", false),
    memory_of_any_device_whatever_device_is_current_auto => devices(Flavour::Plain, "auto"),
    memory_of_any_device_whatever_device_is_current_bounce => devices(Flavour::Plain, "bounce"),
    memory_of_any_device_under_sanitizers => devices(Flavour::Sanitized, "auto"),
    every_error_path => errors(Flavour::Plain, "auto"),
    every_error_path_under_sanitizers => errors(Flavour::Sanitized, "auto"),
    every_error_path_with_bounce => errors(Flavour::Sanitized, "bounce"),
    sixty_four_threads_open_the_driver_once => threads(Flavour::Plain, "auto"),
    sixty_four_threads_under_sanitizers => threads(Flavour::Sanitized, "auto"),
    sixty_four_threads_with_bounce => threads(Flavour::Sanitized, "bounce"),
    no_corruption_under_signals_bounce_1khz => signals(Flavour::Plain, "bounce", "1000"),
    no_corruption_under_signals_bounce_10khz => signals(Flavour::Plain, "bounce", "10000"),
    no_corruption_under_signals_auto_10khz => signals(Flavour::Plain, "auto", "10000"),
    no_corruption_under_signals_under_sanitizers => signals(Flavour::Sanitized, "bounce", "1000"),
    faults_a_full_disk_is_reported => fault_scenario("enospc_at:7340032", [Some("ok"), Some("errno=28")], &[], SEEN_PATHS),
    faults_slow_io_still_completes => fault_scenario("slow:300", [Some("ok"), Some("ok")], &[], &["bounce-syscalls", "p2p"]),
}
