//! Project automation. `cargo xtask ci` runs everything CI checks, installing what it needs
//! on a fresh Debian 12 machine that has only Rust; `cargo xtask gpu-bench` prepares one run of
//! the GPU benchmark (ours beside the peer baseline) on the H200 machine.

mod cmd;
mod dist;
mod python;

use std::process::{Command, ExitCode};

use cmd::{install_debian, run, succeeds, workspace_root};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("gpu-bench") => gpu_bench(&args[1..]),
        Some("unsafe") => unsafe_report(args.get(1).map(String::as_str)),
        Some("dist") => dist::dist(&args[1..]),
        Some("wheel") => python::wheel(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask ci         # packages, fmt, clippy -D warnings, docs, doc tests, ABI check, pytest, nextest"
            );
            eprintln!(
                "       cargo xtask gpu-bench [--peer PATH]  # the GPU benchmark bundle: hipfile bench beside KvikIO \
                 (the harness's baseline, or the baseline script PATH)"
            );
            eprintln!(
                "       cargo xtask unsafe [REV]     # unsafe blocks and unsafe fns per crate (the work tree, or a commit)"
            );
            eprintln!(
                "       cargo xtask dist PREFIX [--debug]  # an install tree: libraries, headers, pkg-config, CMake, the tool"
            );
            eprintln!("       cargo xtask wheel [--debug]  # the Python package's wheel, in target/wheels");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Counts, per crate, the `unsafe` blocks and `unsafe fn` definitions (including `unsafe
/// extern "C" fn` items, not function-pointer types) in the `src/` trees of the work tree or of
/// commit `rev`, and the SAFETY notes that only say "forwarded" (xtask itself is left out).
fn unsafe_report(rev: Option<&str>) -> Result<(), String> {
    let git = |args: &[&str]| -> Result<String, String> {
        let out = Command::new("git").args(args).current_dir(workspace_root()).output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let files = match rev {
        Some(rev) => git(&["ls-tree", "-r", "--name-only", rev])?,
        None => git(&["ls-files"])?,
    };
    let mut crates: std::collections::BTreeMap<String, [usize; 3]> = Default::default();
    for path in files
        .lines()
        .filter(|p| p.ends_with(".rs") && p.contains("/src/") && !p.contains("fuzz") && !p.starts_with("xtask/"))
    {
        let text = match rev {
            Some(rev) => git(&["show", &format!("{rev}:{path}")])?,
            None => std::fs::read_to_string(workspace_root().join(path)).map_err(|e| format!("{path}: {e}"))?,
        };
        let counts = crates.entry(path.split("/src/").next().unwrap_or(path).to_owned()).or_default();
        // Comments (doc examples among them) are not code; SAFETY notes are read from them.
        for line in text.lines() {
            counts[2] += usize::from(line.contains("SAFETY: forwarded"));
            if line.trim_start().starts_with("//") {
                continue;
            }
            counts[0] += line.matches("unsafe {").count();
            let item = |prefix: &str| {
                line.split(prefix).skip(1).any(|rest| rest.starts_with(|c: char| c.is_alphabetic() || c == '_'))
            };
            counts[1] += usize::from(item("unsafe fn ") || item("unsafe extern \"C\" fn "));
        }
    }
    let mut total = [0; 3];
    println!("{:<32} {:>7} {:>11} {:>10}", "crate", "blocks", "unsafe fns", "forwarded");
    for (name, c) in &crates {
        println!("{name:<32} {:>7} {:>11} {:>10}", c[0], c[1], c[2]);
        (0..3).for_each(|i| total[i] += c[i]);
    }
    println!("{:<32} {:>7} {:>11} {:>10}", "total", total[0], total[1], total[2]);
    Ok(())
}

/// Debian packages the tests need, each with a file that shows it is installed: HIP headers
/// (and Debian's libamdhip64) for the C programs and the HIP ABI check, a C++ compiler for
/// the header check, binutils for `nm`/`readelf`.
const PACKAGES: [(&str, &str); 5] = [
    ("libamdhip64-dev", "/usr/include/hip/hip_runtime_api.h"),
    ("g++", "/usr/bin/g++"),
    ("binutils", "/usr/bin/nm"),
    // The install tree's tests: a C program built with pkg-config, a CMake project.
    ("pkg-config", "/usr/bin/pkg-config"),
    ("cmake", "/usr/bin/cmake"),
];

/// Installs missing Debian packages (as root, which CI is; otherwise says what to install).
fn install_packages() -> Result<(), String> {
    let missing: Vec<&str> =
        PACKAGES.iter().filter(|(_, probe)| !std::path::Path::new(probe).exists()).map(|(p, _)| *p).collect();
    install_debian(&missing)
}

/// Installs the tools the checks use where they are missing.
fn install_tools() -> Result<(), String> {
    for (component, probe) in [("rustfmt", ["fmt", "--version"]), ("clippy", ["clippy", "--version"])] {
        if !succeeds("cargo", &probe) {
            run("rustup", &["component", "add", component], &[])?;
        }
    }
    if !succeeds("cargo", &["nextest", "--version"]) {
        run("cargo", &["install", "--locked", "cargo-nextest"], &[])?;
    }
    Ok(())
}

/// Where hip-runtime-sys (the HIP ABI reference, feature `hip-abi-check`) finds Debian's HIP.
const HIP_PATH: (&str, &str) = ("HIP_PATH", "/usr");

fn ci() -> Result<(), String> {
    if std::env::var_os("CI").is_some() {
        // A clean checkout gains nothing from incremental builds, which took a fifth of the
        // suite's disk (1.1 of 5.3 GB; a CI run once failed on a full disk).
        // SAFETY: xtask has one thread, and nothing reads the environment while it changes.
        unsafe { std::env::set_var("CARGO_INCREMENTAL", "0") };
    }
    install_packages()?;
    install_tools()?;
    run("cargo", &["fmt", "--all", "--", "--check"], &[])?;
    let clippy = ["clippy", "--workspace", "--all-targets", "--all-features", "--locked", "--", "-D", "warnings"];
    run("cargo", &clippy, &[HIP_PATH])?;
    run("cargo", &["doc", "--workspace", "--no-deps", "--locked"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    run("cargo", &["test", "--workspace", "--doc", "--locked"], &[])?;
    // The ABI check links libamdhip64, so it builds apart from everything else.
    let abi = ["test", "--locked", "-p", "hipfile-runtime", "--features", "hip-abi-check", "--test", "hip_abi"];
    run("cargo", &abi, &[HIP_PATH])?;
    // What `cargo xtask gpu-bench` builds for the GPU machine, compiled (the C++ example's
    // bridge header is generated by the builds above), and the scripts it carries checked.
    let root = workspace_root();
    build_programs(&root, &std::env::temp_dir(), Build::CheckOnly)?;
    check_scripts(&root)?;
    miri()?;
    fuzz_corpus()?;
    let python = python::tests();
    // The wheel as `cargo xtask wheel` builds it (here without optimisation): manylinux_2_28,
    // by auditwheel, with the C libraries in it.
    let wheel = python::build_wheel(false, "target/wheels-ci");
    let (cufile_h, cufile_115_h) = (python::nvidia_cufile_include("1.20")?, python::nvidia_cufile_include("1.15")?);
    let env = [
        ("HIPFILE_NVIDIA_CUFILE_INCLUDE", cufile_h.to_str().ok_or("a non-UTF-8 path")?),
        ("HIPFILE_NVIDIA_CUFILE_115_INCLUDE", cufile_115_h.to_str().ok_or("a non-UTF-8 path")?),
    ];
    let nextest = run("cargo", &["nextest", "run", "--workspace", "--locked", "--no-fail-fast"], &env);
    // The closing line: the Python suite's counts beside nextest's summary just above.
    match &python {
        Ok(summary) => eprintln!("     Python [pytest] {summary}"),
        Err(e) => eprintln!("     Python [pytest] {e}"),
    }
    nextest.and(python.map(drop)).and(wheel.map(drop))
}

/// Miri over the core's pure logic (error codes, configuration, I/O arithmetic and the retry
/// loop), where a nightly toolchain with Miri is at hand or can be added; skipped otherwise
/// (Miri cannot run the parts that make system calls, and CI may have only stable Rust).
fn miri() -> Result<(), String> {
    let has_miri = || succeeds("cargo", &["+nightly", "miri", "--version"]);
    let add = ["component", "add", "miri", "rust-src", "--toolchain", "nightly"];
    let available = has_miri() || (succeeds("rustup", &add) && has_miri());
    if !available {
        eprintln!("==> miri: skipped (no nightly toolchain with Miri here)");
        return Ok(());
    }
    let env = [("PROPTEST_CASES", "16"), ("MIRIFLAGS", "-Zmiri-disable-isolation")];
    let args = ["+nightly", "miri", "test", "-p", "hipfile-core", "--lib", "--", "error::", "config::", "io::"];
    run("cargo", &args, &env)
}

/// The safetensors header parser's cargo-fuzz target over its kept corpus (each input once,
/// under the fuzzer's sanitizer build), where a nightly toolchain is at hand and cargo-fuzz is
/// or can be installed; skipped otherwise (nextest replays the same corpus through the same
/// function: `hipfile-safetensors/tests/corpus.rs`).
fn fuzz_corpus() -> Result<(), String> {
    if !succeeds("cargo", &["+nightly", "--version"]) {
        eprintln!("==> fuzz: skipped (no nightly toolchain here)");
        return Ok(());
    }
    let has_fuzz = || succeeds("cargo", &["+nightly", "fuzz", "--version"]);
    let available = has_fuzz() || (succeeds("cargo", &["install", "--locked", "cargo-fuzz"]) && has_fuzz());
    if !available {
        eprintln!("==> fuzz: skipped (cargo-fuzz is not installed and cannot be)");
        return Ok(());
    }
    let dir = workspace_root().join("hipfile-safetensors/fuzz");
    eprintln!("==> cargo fuzz run header (the kept corpus)");
    let status = Command::new("cargo")
        .args(["+nightly", "fuzz", "run", "header", "corpus/header", "--", "-runs=0"])
        .current_dir(&dir)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("cargo fuzz run header: {status}")) }
}

/// The peer's wheels: KvikIO for CUDA 13 and what it needs.
const PEER_WHEELS: [&str; 3] = ["kvikio-cu13==26.10.0", "libkvikio-cu13==26.10.0", "rapids-logger==0.3.*"];

/// Builds what one run on the GPU machine needs: the release `hipfile` binary, the C programs,
/// the scripts and the peer-comparison harness (`xtask/gpu-bench`), and the peer's wheels.
/// `--peer PATH`: the bundle's run.sh measures the peer with that baseline script instead of
/// the harness's `whole` (which makes the same measurements).
fn gpu_bench(args: &[String]) -> Result<(), String> {
    let peer = match args {
        [] => None,
        [flag, path] if flag == "--peer" => Some(std::path::PathBuf::from(path)),
        _ => return Err("usage: cargo xtask gpu-bench [--peer PATH] (PATH: a KvikIO baseline script)".into()),
    };
    let root = workspace_root();
    install_packages()?; // HIP headers, for the C ABI check program
    check_scripts(&root)?;
    // Apart: built with the tool, the C library would get the tool's features (the mock GPU).
    run("cargo", &["build", "--release", "--locked", "-p", "hipfile-capi"], &[])?;
    run("cargo", &["build", "--release", "--locked", "-p", "hipfile-tools"], &[])?;
    run("cargo", &["build", "--release", "--locked", "-p", "hipfile-cxx"], &[])?;
    let bundle = root.join("target/gpu-bench");
    std::fs::create_dir_all(&bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
    // The scripts and the harness under their own names (the harness's modules beside it).
    let scripts = bench_scripts(&root)?.into_iter().map(|path| {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        (path, name)
    });
    let mut copies = vec![
        (root.join("target/release/hipfile"), "hipfile".to_owned()),
        (root.join("target/release/libhipfile_capi.so"), "libhipfile.so.0".to_owned()),
    ];
    let baseline = bundle.join("kvikio_baseline.py");
    match peer {
        Some(peer) => copies.push((peer, "kvikio_baseline.py".to_owned())),
        // No stale script from an earlier --peer: run.sh takes whichever is there.
        None if baseline.exists() => {
            std::fs::remove_file(&baseline).map_err(|e| format!("{}: {e}", baseline.display()))?
        }
        None => {}
    }
    for (from, name) in copies.into_iter().chain(scripts) {
        std::fs::copy(&from, bundle.join(&name)).map_err(|e| format!("copy {}: {e}", from.display()))?;
    }
    build_programs(&root, &bundle, Build::Link)?;
    strip_debug_info(&bundle)?;
    download_peer_wheels(&root)?;
    eprintln!(
        "bundle ready in target/gpu-bench. On the GPU machine, from the project root, with\n\
         `target/gpu-bench` and `.whl` carried:  bash target/gpu-bench/run.sh\n\
         (results and the comparison in $OUT, or target/gpu-bench/out; the other comparisons:\n\
         python3 target/gpu-bench/harness.py --help)"
    );
    Ok(())
}

/// The bundle's programs without their debug information (symbols stay, for `perf`): the
/// release profile's line tables make it about 110 MB, over what a run on the GPU machine
/// carries (64 MiB); stripped, about 22 MB.
fn strip_debug_info(bundle: &std::path::Path) -> Result<(), String> {
    let entries = std::fs::read_dir(bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
    let mut programs = Vec::new();
    for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
        let mut head = [0u8; 4];
        let read = std::fs::File::open(&path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
        if read.is_ok() && head == *b"\x7fELF" {
            programs.push(path.to_string_lossy().into_owned());
        }
    }
    programs.sort();
    let mut args = vec!["--strip-debug"];
    args.extend(programs.iter().map(String::as_str));
    run("strip", &args, &[])
}

/// The shell scripts and Python modules of `xtask/gpu-bench` (everything there but the C and
/// C++ sources [`build_programs`] compiles), sorted.
fn bench_scripts(root: &std::path::Path) -> Result<Vec<std::path::PathBuf>, String> {
    let dir = root.join("xtask/gpu-bench");
    let entries = std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut scripts: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sh" || x == "py"))
        .collect();
    scripts.sort();
    Ok(scripts)
}

/// The bundle's scripts checked without running them: each shell script parsed (`bash -n`),
/// and the harness's `--check` (every module imported, every subcommand's parser and help
/// built, every Python file there one of its modules, none of its files over 600 lines), with
/// no GPU package needed.
fn check_scripts(root: &std::path::Path) -> Result<(), String> {
    let scripts = bench_scripts(root)?;
    let shell: Vec<String> = scripts
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "sh"))
        .map(|p| p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["-c", "for f; do bash -n \"$f\" || exit 1; done", "bash -n"];
    args.extend(shell.iter().map(String::as_str));
    run("bash", &args, &[])?;
    run("python3", &["-B", "xtask/gpu-bench/harness.py", "--record", "", "--check"], &[])
}

/// Whether [`build_programs`] builds the programs or only compiles them (CI, which has no
/// release build to link with: so that what `gpu-bench` builds cannot rot unseen).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Build {
    Link,
    CheckOnly,
}

/// The programs of the GPU bundle, built here for the GPU machine: C programs linked with
/// `libhipfile.so.0` (found next to them), and the README's C++ example.
fn build_programs(root: &std::path::Path, bundle: &std::path::Path, build: Build) -> Result<(), String> {
    // Checking: compiled with every warning an error, nothing linked (link inputs left out).
    let compile = |tool: &str, args: &[&str]| match build {
        Build::Link => run(tool, args, &[]),
        Build::CheckOnly => {
            let mut checked = vec!["-fsyntax-only"];
            checked.extend(args.iter().copied().filter(|a| !a.ends_with(".a")));
            run(tool, &checked, &[])
        }
    };
    // C programs linked with libhipfile.so.0, found next to them: the C ABI over CUDA, and the
    // data-safety and every-device programs of the C tests with their HIP calls sent to CUDA's
    // runtime.
    let over_cuda = ["-DTESTS_OVER_CUDA", "-Ihipfile-capi/tests/c", "-lpthread"];
    for (source, program, extra) in [
        ("xtask/gpu-bench/capi_cuda.c", "capi_cuda", &[][..]),
        ("hipfile-capi/tests/c/safety.c", "safety_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/devices.c", "devices_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/async.c", "async_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/host.c", "host_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/params.c", "params_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/logging.c", "logging_cuda", &over_cuda[..]),
        ("hipfile-capi/tests/c/stats.c", "stats_cuda", &over_cuda[..]),
    ] {
        let (src, out) = (root.join(source), bundle.join(program));
        let (src, out) = (src.to_string_lossy().into_owned(), out.to_string_lossy().into_owned());
        let mut args = vec!["-std=c11", "-Wall", "-Wextra", "-Werror", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE"];
        args.extend(["-Iinclude", src.as_str(), "-Ltarget/gpu-bench", "-l:libhipfile.so.0", "-ldl"]);
        args.extend(extra);
        args.extend(["-Wl,-rpath,$ORIGIN", "-o", out.as_str()]);
        compile("cc", &args)?;
    }
    // The README's C++ example, its HIP calls sent to CUDA's runtime.
    let example = bundle.join("roundtrip_cuda").to_string_lossy().into_owned();
    let mut args = vec!["-std=c++17", "-Wall", "-Wextra", "-Werror", "-D__HIP_PLATFORM_AMD__"];
    args.extend(["-include", "xtask/gpu-bench/hip_over_cuda.hpp", "-Iinclude", "-Itarget/cxxbridge"]);
    args.extend(["hipfile-cxx/examples/roundtrip.cpp", "target/release/libhipfile_cxx.a"]);
    args.extend(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s", "-o", example.as_str()]);
    compile("c++", &args)
}

/// KvikIO's wheels for the GPU machine (which reaches no registry), downloaded once into
/// `.whl` (kept out of git).
fn download_peer_wheels(root: &std::path::Path) -> Result<(), String> {
    let wheels = root.join(".whl");
    if !wheels.exists() {
        let exclude = root.join(".git/info/exclude");
        let listed = std::fs::read_to_string(&exclude).unwrap_or_default();
        if !listed.lines().any(|l| l.trim() == "/.whl/") {
            std::fs::write(&exclude, format!("{listed}/.whl/\n")).map_err(|e| format!("{}: {e}", exclude.display()))?;
        }
        let mut args = vec!["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version", "3.12"];
        args.extend(["--implementation", "cp", "--platform", "manylinux_2_28_x86_64", "--platform"]);
        args.extend(["manylinux_2_27_x86_64", "--platform", "manylinux_2_24_x86_64", "-d", ".whl"]);
        args.extend(PEER_WHEELS);
        run("python3", &args, &[])?;
    }
    Ok(())
}
