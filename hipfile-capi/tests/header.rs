//! `include/hipfile.h` against the library: it compiles alone in C11 and C++17 and when
//! included twice, its struct layouts are AMD's, its prototypes match the Rust exports (cbindgen
//! writes prototypes from the Rust source; compiling both together fails on any difference),
//! and the functions it declares are exactly the symbols libhipfile exports.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

fn header() -> PathBuf {
    include_dir().join("hipfile.h")
}

/// Compiles `source` (C or C++, by `compiler`) with warnings as errors; returns the output.
fn compile(compiler: Command, name: &str, source: &str, flags: &[&str]) -> std::process::Output {
    require_hip_headers();
    let dir = scratch("header");
    let path = dir.join(name);
    std::fs::write(&path, source).expect("source file");
    let mut cmd = compiler;
    cmd.args(["-Wall", "-Wextra", "-Werror", "-D__HIP_PLATFORM_AMD__", "-fsyntax-only", "-I"])
        .arg(include_dir())
        .arg("-I")
        .arg(&dir)
        .args(flags)
        .arg(&path);
    cmd.output().expect("compiler runs")
}

fn compile_ok(compiler: Command, name: &str, source: &str, flags: &[&str]) {
    let out = compile(compiler, name, source, flags);
    assert!(out.status.success(), "{name} does not compile:\n{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn compiles_alone_in_c11() {
    compile_ok(cc(), "alone.c", "#include <hipfile.h>\n", &["-std=c11"]);
}

#[test]
fn compiles_alone_in_cpp17() {
    compile_ok(cxx(), "alone.cc", "#include <hipfile.h>\n", &["-std=c++17"]);
}

#[test]
fn can_be_included_twice() {
    let twice = "#include <hipfile.h>\n#include <hipfile.h>\n";
    compile_ok(cc(), "twice.c", twice, &["-std=c11"]);
    compile_ok(cxx(), "twice.cc", twice, &["-std=c++17"]);
}

#[test]
fn struct_layouts_are_amds() {
    let layout = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/layout.c")).unwrap();
    compile_ok(cc(), "layout.c", &layout, &["-std=c11"]);
    compile_ok(cxx(), "layout.cc", &layout, &["-std=c++17"]);
}

#[test]
fn ignoring_an_error_warns_in_cpp17() {
    // `[[nodiscard]]` on hipFileError_t, as upstream: C++17 callers get a warning.
    let src = "#include <hipfile.h>\nint main() { hipFileDriverOpen(); return 0; }\n";
    let out = compile(cxx(), "nodiscard.cc", src, &["-std=c++17"]);
    assert!(!out.status.success(), "ignoring hipFileError_t compiled without a warning");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nodiscard"));
}

/// Prototypes cbindgen derives from the `extern "C"` functions of `src/exports.rs`, where every
/// exported call is.
fn rust_prototypes() -> String {
    let config = cbindgen::Config {
        language: cbindgen::Language::C,
        style: cbindgen::Style::Type,
        usize_is_size_t: true,
        no_includes: true,
        documentation: false,
        export: cbindgen::ExportConfig {
            item_types: vec![cbindgen::ItemType::Functions],
            // A C struct with no typedef: cbindgen names it bare.
            rename: [("timespec".to_owned(), "struct timespec".to_owned())].into(),
            ..Default::default()
        },
        ..Default::default()
    };
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/exports.rs"))
        .generate()
        .expect("cbindgen reads the sources");
    let mut out = Vec::new();
    bindings.write(&mut out);
    String::from_utf8(out).expect("UTF-8 prototypes")
}

/// Function names in C prototypes: the identifier before the first `(` of each declaration.
fn declared(prototypes: &str) -> BTreeSet<String> {
    prototypes
        .split(';')
        .filter_map(|decl| {
            let head = decl.split('(').next()?;
            let name = head.rsplit(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
            name.starts_with("hipFile").then(|| name.to_owned())
        })
        .collect()
}

/// Function names the header declares (each prototype follows a `HIPFILE_API` line).
fn header_functions() -> BTreeSet<String> {
    let text = std::fs::read_to_string(header()).expect("header");
    let mut lines = text.lines();
    let mut protos = String::new();
    while let Some(line) = lines.next() {
        if line.trim() == "HIPFILE_API" {
            for line in lines.by_ref() {
                protos.push_str(line);
                if line.contains(';') {
                    break;
                }
            }
        }
    }
    declared(&protos)
}

#[test]
fn prototypes_match_the_rust_exports() {
    let protos = rust_prototypes();
    assert_eq!(declared(&protos), header_functions(), "cbindgen's prototypes:\n{protos}");
    // Compiling both declarations of every function together fails on any difference in
    // return or parameter types ("conflicting types").
    std::fs::write(scratch("header").join("rust_prototypes.h"), &protos).unwrap();
    let src = "#include <hipfile.h>\n#include \"rust_prototypes.h\"\n";
    compile_ok(cc(), "drift.c", src, &["-std=c11"]);
}

/// Defined, global function symbols of a library, as `nm` lists them.
fn exported(args: &[&str], lib: &Path) -> BTreeSet<String> {
    let out = run_ok(Command::new("nm").args(args).arg(lib));
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [_, "T", name] => Some(name.to_owned()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_library_exports_exactly_what_the_header_declares() {
    let deps = deps_dir();
    // And what libcufile.so.0 finds here (src/cufile_hooks.rs), under names no header declares.
    let (for_cufile, shared): (BTreeSet<String>, BTreeSet<String>) =
        exported(&["-D", "--defined-only"], &deps.join("libhipfile_capi.so"))
            .into_iter()
            .partition(|s| s.starts_with("hipfile_rs_cufile_"));
    let hooks = hipfile_abi::hooks::ALL.map(|name| name.to_str().unwrap().to_owned());
    assert_eq!(for_cufile, hooks.into(), "libhipfile.so exports for libcufile.so.0");
    // And rocprofiler-register's import function, which hipfile-api-trace.h's users find by name
    // (src/trace.rs).
    let (for_profilers, shared): (BTreeSet<String>, BTreeSet<String>) =
        shared.into_iter().partition(|s| s == "rocprofiler_register_import_hipFile");
    assert_eq!(for_profilers.len(), 1, "libhipfile.so exports rocprofiler_register_import_hipFile");
    assert_eq!(shared, header_functions(), "libhipfile.so exports");
    let archive = deps.join("libhipfile_capi.a");
    let from_archive: BTreeSet<_> =
        exported(&["--defined-only"], &archive).into_iter().filter(|s| s.starts_with("hipFile")).collect();
    assert_eq!(from_archive, header_functions(), "libhipfile.a defines");
}

#[test]
fn the_shared_library_has_its_soname_and_no_link_time_gpu_runtime() {
    let out = run_ok(Command::new("readelf").arg("-d").arg(deps_dir().join("libhipfile_capi.so")));
    let dynamic = String::from_utf8_lossy(&out.stdout);
    assert!(dynamic.contains("Library soname: [libhipfile.so.0]"), "{dynamic}");
    // One build for every machine: the GPU runtime is found at run time.
    assert!(!dynamic.contains("amdhip64") && !dynamic.contains("cudart"), "{dynamic}");
}

/// Clients check the version (rocprofiler-systems' hipFile telemetry refuses one older than
/// 0.5.0, the release that added `hipFileGetStatsL3`): the header's macros and
/// `hipFileGetVersion` give upstream's API version the library implements.
#[test]
fn the_version_is_upstreams_api_with_the_statistics_calls() {
    let text = std::fs::read_to_string(header()).unwrap();
    let macro_value = |name: &str| -> u32 {
        let line = text.lines().find(|l| l.starts_with(&format!("#define {name} "))).expect(name);
        line.rsplit(' ').next().unwrap().parse().expect("a number")
    };
    let header = (
        macro_value("HIPFILE_VERSION_MAJOR"),
        macro_value("HIPFILE_VERSION_MINOR"),
        macro_value("HIPFILE_VERSION_PATCH"),
    );
    let (mut major, mut minor, mut patch) = (u32::MAX, u32::MAX, u32::MAX);
    // SAFETY: three writable integers.
    let e = unsafe { hipfile_capi::exports::hipFileGetVersion(&mut major, &mut minor, &mut patch) };
    assert_eq!(e.err as i32, 0);
    assert_eq!((major, minor, patch), header);
    assert!(header >= (0, 5, 0), "hipfile.h says {header:?}: older than the statistics calls");
}
