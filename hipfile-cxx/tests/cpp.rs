//! The C++ API from C++: `tests/cpp/suite.cpp` and the README's example
//! (`examples/roundtrip.cpp`), compiled with `-std=c++17 -Wall -Wextra -Werror` against
//! `include/hipfile.hpp` and the generated bridge header, linked with `libhipfile_cxx.a` and the
//! mock HIP runtime, and run with no GPU; the suite once more under AddressSanitizer and
//! UndefinedBehaviorSanitizer.

#[path = "../../hipfile-capi/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::*;

/// Compiles `src` (relative to this crate) into the scratch directory.
fn build(src: &str, sanitized: bool) -> PathBuf {
    require_hip_headers();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = lib_dir();
    let archive = archive();
    let name = Path::new(src).file_stem().unwrap().to_string_lossy().into_owned();
    let exe = scratch("cpp").join(format!("{name}{}-{}", if sanitized { "-san" } else { "" }, std::process::id()));
    let mut cmd = cxx();
    cmd.args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-g", "-D__HIP_PLATFORM_AMD__"])
        .arg("-I")
        .arg(include_dir())
        .arg("-I")
        .arg(env!("HIPFILE_CXX_INCLUDE"))
        .arg(root.join(src));
    if sanitized {
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]);
    }
    cmd.arg(&archive)
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .args(["-Wl,--no-as-needed", "-lhipfile_mockhip", "-Wl,--as-needed"])
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s"])
        .arg("-o")
        .arg(&exe);
    run_ok(&mut cmd);
    exe
}

/// `libhipfile_cxx.a` as this test run built it: cargo puts it in `deps` under a name with a
/// hash (and copies it to the profile directory only when the crate itself is built), so the
/// newest of that name.
fn archive() -> PathBuf {
    let newest = std::fs::read_dir(deps_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("libhipfile_cxx") && name.ends_with(".a")
        })
        .max_by_key(|e| e.metadata().and_then(|m| m.modified()).ok());
    newest.expect("libhipfile_cxx.a built with the tests").path()
}

fn suite(sanitized: bool) {
    let exe = build("tests/cpp/suite.cpp", sanitized);
    let dir = scratch("cpp-data");
    // The bounce path: the suite makes the mock runtime fail a copy.
    let out = run_ok(&mut program(&exe, &[&dir], &[("HIPFILE_BACKEND", "bounce")]));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("ok: "), "{stdout}");
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_cpp_suite_passes() {
    suite(false);
}

#[test]
fn the_cpp_suite_passes_under_sanitizers() {
    suite(true);
}

#[test]
fn the_readme_example_runs_and_is_the_one_in_the_readme() {
    let example =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/roundtrip.cpp")).unwrap();
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    assert!(readme.contains(&example), "README.md must hold examples/roundtrip.cpp verbatim");
    let exe = build("examples/roundtrip.cpp", false);
    let file = scratch("cpp-data").join(format!("roundtrip-{}", std::process::id()));
    std::fs::write(&file, (0..3_000_000u32).map(|i| (i * 7 + i / 4099) as u8).collect::<Vec<u8>>()).unwrap();
    for backend in ["auto", "bounce"] {
        let out = run_ok(&mut program(&exe, &[&file], &[("HIPFILE_BACKEND", backend)]));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("ok: {} bytes read, verified and written back", 3_000_000)
        );
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
        let copy = std::fs::read(format!("{}.copy", file.display())).unwrap();
        assert_eq!(copy, std::fs::read(&file).unwrap());
    }
}
