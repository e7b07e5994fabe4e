//! `cargo xtask dist PREFIX [--debug]`: an install tree a C or C++ build system finds without
//! hand-made links (built in `CARGO_TARGET_DIR` where set).
//!
//! ```text
//! PREFIX/bin/hipfile                              the tool
//! PREFIX/include/hipfile.h, hipfile.hpp           the C and C++ APIs
//! PREFIX/include/hipfile-api-trace.h              the tracing table (hipFile 0.5's)
//! PREFIX/include/hipfile-cxx/src/lib.rs.h         the C++ bridge (generated), and rust/cxx.h
//! PREFIX/lib/libhipfile.so.0.5.0                  the C library, and its links
//! PREFIX/lib/libhipfile.so.0 -> libhipfile.so.0.5.0   (the SONAME programs load)
//! PREFIX/lib/libhipfile.so -> libhipfile.so.0         (what -lhipfile links)
//! PREFIX/lib/libhipfile.a                         the C library, static
//! PREFIX/lib/libhipfile_cxx.a                     the C++ and C APIs, static
//! PREFIX/lib/libhipfile_mockhip.so.0.5.0          the mock HIP runtime (no GPU), SONAME
//!                                                 libhipfile_mockhip.so.0, with .so.0 and .so links
//! PREFIX/lib/cufile/libcufile.so.0                cuFile's C API over libhipfile.so.0 (for
//! PREFIX/lib/cufile/libcufile.so -> libcufile.so.0  LD_LIBRARY_PATH), and its header:
//! PREFIX/include/cufile/cufile.h                  apart, so as not to hide CUDA's
//! PREFIX/lib/pkgconfig/hipfile.pc                 pkg-config (and hipfile-cufile.pc for cuFile programs)
//! PREFIX/lib/cmake/hipfile/hipfile-config.cmake   find_package(hipfile): hip::hipfile, ...
//! ```

use std::path::{Path, PathBuf};

use crate::cmd::{run, workspace_root};

/// The library's version: the workspace's, which is also the C API's `HIPFILE_VERSION_*`.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// What static links of the Rust archives need from the system (`--print native-static-libs`).
const STATIC_LIBS: [&str; 6] = ["pthread", "dl", "m", "rt", "util", "gcc_s"];

/// Builds (release, or debug) and installs into `prefix`.
pub(crate) fn dist(args: &[String]) -> Result<(), String> {
    let (debug, rest): (Vec<&String>, Vec<&String>) = args.iter().partition(|a| *a == "--debug");
    let [prefix] = rest.as_slice() else {
        return Err("usage: cargo xtask dist PREFIX [--debug]".into());
    };
    let prefix = std::path::absolute(prefix).map_err(|e| format!("{prefix}: {e}"))?;
    let profile = if debug.is_empty() { "release" } else { "debug" };
    let release: &[&str] = if profile == "release" { &["--release"] } else { &[] };
    let libraries = [
        "build",
        "--locked",
        "-p",
        "hipfile-capi",
        "-p",
        "hipfile-cxx",
        "-p",
        "hipfile-mockhip",
        "-p",
        "hipfile-cufile",
    ];
    run("cargo", &[&libraries[..], release].concat(), &[])?;
    // Apart: built with the tool, the C library would get the tool's features (the mock GPU).
    run("cargo", &[&["build", "--locked", "-p", "hipfile-tools"][..], release].concat(), &[])?;
    install(&target_dir().join(profile), &prefix)?;
    eprintln!("installed in {}", prefix.display());
    Ok(())
}

/// Lays the built artifacts of `built` (a profile directory) out under `prefix`.
fn install(built: &Path, prefix: &Path) -> Result<(), String> {
    let root = workspace_root();
    let (lib, include, bin) = (prefix.join("lib"), prefix.join("include"), prefix.join("bin"));
    let so = format!("libhipfile.so.{VERSION}");
    let mock_so = format!("libhipfile_mockhip.so.{VERSION}");
    let bridge = target_dir().join("cxxbridge");
    let copies: [(PathBuf, PathBuf); 13] = [
        (built.join("libhipfile_capi.so"), lib.join(&so)),
        (built.join("libhipfile_capi.a"), lib.join("libhipfile.a")),
        (built.join("libhipfile_cxx.a"), lib.join("libhipfile_cxx.a")),
        (built.join("libhipfile_mockhip.so"), lib.join(&mock_so)),
        (built.join("libhipfile_cufile.so"), lib.join("cufile/libcufile.so.0")),
        (built.join("hipfile"), bin.join("hipfile")),
        (root.join("include/hipfile.h"), include.join("hipfile.h")),
        (root.join("include/hipfile.hpp"), include.join("hipfile.hpp")),
        (root.join("include/hipfile-api-trace.h"), include.join("hipfile-api-trace.h")),
        (root.join("include/cufile.h"), include.join("cufile/cufile.h")),
        (bridge.join("hipfile-cxx/src/lib.rs.h"), include.join("hipfile-cxx/src/lib.rs.h")),
        (bridge.join("rust/cxx.h"), include.join("rust/cxx.h")),
        (root.join("README.md"), prefix.join("share/doc/hipfile/README.md")),
    ];
    for (from, to) in &copies {
        // Copies the contents (the bridge headers are links into the build directory).
        install_file(to, |tmp| std::fs::copy(from, tmp).map(drop))
            .map_err(|e| format!("copy {} to {}: {e}", from.display(), to.display()))?;
    }
    for (link, target) in [
        ("libhipfile.so.0", so.as_str()),
        ("libhipfile.so", "libhipfile.so.0"),
        ("libhipfile_mockhip.so.0", mock_so.as_str()),
        ("libhipfile_mockhip.so", "libhipfile_mockhip.so.0"),
        ("cufile/libcufile.so", "libcufile.so.0"),
    ] {
        let path = lib.join(link);
        install_file(&path, |tmp| std::os::unix::fs::symlink(target, tmp))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    write(&lib.join("pkgconfig/hipfile.pc"), &pkg_config(prefix))?;
    write(&lib.join("pkgconfig/hipfile-cufile.pc"), &pkg_config_cufile(prefix))?;
    write(&lib.join("cmake/hipfile/hipfile-config.cmake"), &CMAKE_CONFIG.replace("@VERSION@", VERSION))?;
    write(&lib.join("cmake/hipfile/hipfile-config-version.cmake"), &cmake_version())
}

/// Cargo's target directory (`CARGO_TARGET_DIR`, else the workspace's `target`).
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    install_file(path, |tmp| std::fs::write(tmp, text)).map_err(|e| format!("{}: {e}", path.display()))
}

/// Puts a new file (or link) at `to` as `install(1)` does: `make` creates it under a temporary
/// name beside `to`, which is then renamed over `to`. A program that has the old file open or
/// mapped (a running test of the same tree, say) keeps the old file's bytes; copying over it in
/// place would truncate what it has mapped and crash it.
fn install_file(to: &Path, make: impl FnOnce(&Path) -> std::io::Result<()>) -> std::io::Result<()> {
    let dir = to.parent().expect("a file in a directory");
    std::fs::create_dir_all(dir)?;
    let name = to.file_name().expect("a file name").to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let made = make(&tmp).and_then(|()| std::fs::rename(&tmp, to));
    if made.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    made
}

/// `hipfile.pc`: `-lhipfile` and the headers; `--static` adds what the archive needs.
fn pkg_config(prefix: &Path) -> String {
    let private: Vec<String> = STATIC_LIBS.iter().map(|l| format!("-l{l}")).collect();
    format!(
        "prefix={}\nlibdir=${{prefix}}/lib\nincludedir=${{prefix}}/include\n\n\
         Name: hipfile\n\
         Description: hipfile-rs: moves data between files and GPU memory (AMD hipFile's C API)\n\
         Version: {VERSION}\n\
         Libs: -L${{libdir}} -lhipfile\n\
         Libs.private: {}\n\
         Cflags: -I${{includedir}}\n",
        prefix.display(),
        private.join(" ")
    )
}

/// `hipfile-cufile.pc`: cuFile's programs, `-lcufile` (this tree's `libcufile.so.0`, which finds
/// `libhipfile.so.0` itself) and `cufile.h`.
fn pkg_config_cufile(prefix: &Path) -> String {
    format!(
        "prefix={}\nlibdir=${{prefix}}/lib/cufile\nincludedir=${{prefix}}/include/cufile\n\n\
         Name: hipfile-cufile\n\
         Description: hipfile-rs's libcufile.so.0: NVIDIA cuFile's C API over hipfile-rs\n\
         Version: {VERSION}\n\
         Libs: -L${{libdir}} -lcufile\n\
         Cflags: -I${{includedir}}\n",
        prefix.display()
    )
}

/// The CMake package: found relative to itself, so the tree can move (`@VERSION@`: [`VERSION`]).
const CMAKE_CONFIG: &str = r#"# find_package(hipfile): hipfile-rs, AMD hipFile's C API and a C++ API.
#   hip::hipfile          the C library (libhipfile.so, hipfile.h); upstream's target name
#   hip::hipfile_cxx      the C++ API (hipfile.hpp) with the C API, static (link it alone)
#   hip::hipfile_mockhip  the mock HIP runtime: a GPU emulated in host memory
#   hip::cufile           cuFile's C API (libcufile.so.0, cufile.h) over hipfile-rs
# The HIP headers come from ROCm (or Debian's libamdhip64-dev); define __HIP_PLATFORM_AMD__ or
# __HIP_PLATFORM_NVIDIA__ as HIP programs do.
get_filename_component(_hipfile_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET hip::hipfile)
  add_library(hip::hipfile SHARED IMPORTED)
  set_target_properties(hip::hipfile PROPERTIES
    IMPORTED_LOCATION "${_hipfile_prefix}/lib/libhipfile.so.@VERSION@"
    IMPORTED_SONAME "libhipfile.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_hipfile_prefix}/include")
  add_library(hip::hipfile_cxx STATIC IMPORTED)
  set_target_properties(hip::hipfile_cxx PROPERTIES
    IMPORTED_LOCATION "${_hipfile_prefix}/lib/libhipfile_cxx.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_hipfile_prefix}/include"
    INTERFACE_LINK_LIBRARIES "pthread;dl;m;rt;util;gcc_s"
    INTERFACE_COMPILE_FEATURES cxx_std_17)
  add_library(hip::hipfile_mockhip SHARED IMPORTED)
  set_target_properties(hip::hipfile_mockhip PROPERTIES
    IMPORTED_LOCATION "${_hipfile_prefix}/lib/libhipfile_mockhip.so.@VERSION@"
    IMPORTED_SONAME "libhipfile_mockhip.so.0")
  add_library(hip::cufile SHARED IMPORTED)
  set_target_properties(hip::cufile PROPERTIES
    IMPORTED_LOCATION "${_hipfile_prefix}/lib/cufile/libcufile.so.0"
    IMPORTED_SONAME "libcufile.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_hipfile_prefix}/include/cufile")
endif()
set(hipfile_VERSION @VERSION@)
unset(_hipfile_prefix)
"#;

/// The CMake package's version check: a request for any 0.x up to this version is met (upstream
/// keeps one ABI, SONAME `libhipfile.so.0`, across its 0.x releases; this library implements
/// the API of each).
fn cmake_version() -> String {
    format!(
        "set(PACKAGE_VERSION \"{VERSION}\")\n\
         if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)\n  set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         elseif(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL \"0\")\n  \
         set(PACKAGE_VERSION_COMPATIBLE FALSE)\n\
         else()\n  set(PACKAGE_VERSION_COMPATIBLE TRUE)\n  \
         if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)\n    set(PACKAGE_VERSION_EXACT TRUE)\n  endif()\nendif()\n"
    )
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;

    use super::install_file;

    #[test]
    fn installing_over_a_file_in_use_leaves_its_users_the_old_bytes() {
        let dir = std::env::temp_dir().join(format!("xtask-install-{}", std::process::id()));
        let path = dir.join("lib/libhipfile.so.0");
        install_file(&path, |tmp| std::fs::write(tmp, b"old library")).unwrap();
        let mut user = std::fs::File::open(&path).unwrap(); // as a running program holds it
        let old_inode = user.metadata().unwrap().ino();
        install_file(&path, |tmp| std::fs::write(tmp, b"the new one")).unwrap();
        let mut seen = String::new();
        user.read_to_string(&mut seen).unwrap();
        assert_eq!(seen, "old library", "the file in use was not rewritten");
        assert_eq!(std::fs::read(&path).unwrap(), b"the new one");
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), old_inode);
        // A link replaces what was there too, and a failure leaves nothing behind.
        let link = dir.join("lib/libhipfile.so");
        install_file(&link, |tmp| std::os::unix::fs::symlink("libhipfile.so.0", tmp)).unwrap();
        install_file(&link, |tmp| std::os::unix::fs::symlink("libhipfile.so.0", tmp)).unwrap();
        assert_eq!(std::fs::read(&link).unwrap(), b"the new one");
        let failed = install_file(&path, |_| Err(std::io::Error::other("no")));
        assert!(failed.is_err());
        let names: Vec<_> = std::fs::read_dir(dir.join("lib")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
