//! `cargo xtask dist` into a temporary prefix, then, from that tree alone: AMD's guide example
//! built with `pkg-config --cflags --libs hipfile`, a CMake project using
//! `find_package(hipfile)` with `hip::hipfile` (the example) and `hip::hipfile_cxx` (the C++
//! example; `hip::cufile`), and a cuFile program on the tree's `libcufile.so.0`, all run over the mock HIP
//! runtime the tree carries. No link made by hand.
//!
//! The tree is built in a target directory of its own (`target/dist-test`): a build with the
//! C library's own features in the shared one would replace libraries other tests are using.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({})\n--- stdout\n{stdout}\n--- stderr\n{stderr}", out.status);
    stdout.into_owned()
}

/// A program's environment: no `HIPFILE_*` of ours, no library path (the tree must suffice).
fn clean(cmd: &mut Command) -> &mut Command {
    for (key, _) in std::env::vars() {
        if key.starts_with("HIPFILE_") {
            cmd.env_remove(key);
        }
    }
    cmd.env_remove("LD_LIBRARY_PATH")
}

#[test]
fn the_install_tree_serves_pkg_config_and_cmake() {
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("dist-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let prefix = scratch.join("prefix");
    run(Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["dist", prefix.to_str().unwrap(), "--debug"])
        .current_dir(root())
        .env("CARGO_TARGET_DIR", root().join("target/dist-test")));
    for link in [
        "lib/libhipfile.so",
        "lib/libhipfile.so.0",
        "lib/libhipfile_mockhip.so",
        "lib/libhipfile_mockhip.so.0",
        "lib/cufile/libcufile.so",
    ] {
        assert!(prefix.join(link).is_symlink() && prefix.join(link).exists(), "{link}");
    }
    assert!(prefix.join("include/hipfile-api-trace.h").is_file(), "the tracing table's header");
    // Both shared libraries carry the SONAME their links name.
    let version = env!("CARGO_PKG_VERSION"); // the workspace's: every artifact's
    let files = [format!("lib/libhipfile.so.{version}"), format!("lib/libhipfile_mockhip.so.{version}")];
    for (file, soname) in [(&files[0], "libhipfile.so.0"), (&files[1], "libhipfile_mockhip.so.0")] {
        let dynamic = run(Command::new("readelf").arg("-d").arg(prefix.join(file)));
        assert!(dynamic.contains(&format!("Library soname: [{soname}]")), "{file}: {dynamic}");
    }
    let data = scratch.join("data");
    std::fs::write(&data, (0..1u32 << 20).map(|i| (i * 31 + i / 4096) as u8).collect::<Vec<u8>>()).unwrap();
    let example_define = format!("-DHIPFILE_EXAMPLE_PATH=\"{}\"", data.display());

    // pkg-config.
    let pkg =
        |args: &[&str]| run(Command::new("pkg-config").args(args).env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig")));
    assert_eq!(pkg(&["--modversion", "hipfile"]).trim(), version);
    let flags = pkg(&["--cflags", "--libs", "hipfile"]);
    let libdir = pkg(&["--variable=libdir", "hipfile"]);
    let exe = scratch.join("example-pkg-config");
    run(Command::new("cc")
        .args(["-std=c11", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE", &example_define])
        .arg(root().join("hipfile-capi/tests/c/example.c"))
        .args(flags.split_whitespace())
        .args(["-lhipfile_mockhip", &format!("-Wl,-rpath,{}", libdir.trim()), "-o"])
        .arg(&exe));
    let out = run(clean(&mut Command::new(&exe)));
    assert_eq!(out, "", "the example prints nothing when it works");
    let needed = run(Command::new("readelf").arg("-d").arg(&exe));
    assert!(needed.contains("Shared library: [libhipfile_mockhip.so.0]"), "{needed}");

    // CMake.
    let project = scratch.join("cmake-project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(root().join("hipfile-capi/tests/c/example.c"), project.join("example.c")).unwrap();
    std::fs::copy(root().join("hipfile-cxx/examples/roundtrip.cpp"), project.join("roundtrip.cpp")).unwrap();
    // hip::cufile: cufile.h and the tree's libcufile.so.0 (cuFileGetVersion needs no driver).
    std::fs::write(
        project.join("cufile_version.c"),
        "#include <cufile.h>\n#include <stdio.h>\nint main(void) { int v = 0; cuFileGetVersion(&v); printf(\"%d\\n\", v); return v ? 0 : 1; }\n",
    )
    .unwrap();
    std::fs::write(
        project.join("CMakeLists.txt"),
        format!(
            r#"cmake_minimum_required(VERSION 3.16)
project(uses_hipfile C CXX)
find_package(hipfile 0.5 REQUIRED)
add_executable(example example.c)
target_compile_definitions(example PRIVATE __HIP_PLATFORM_AMD__ _GNU_SOURCE HIPFILE_EXAMPLE_PATH="{}")
target_link_libraries(example PRIVATE hip::hipfile hip::hipfile_mockhip)
add_executable(roundtrip roundtrip.cpp)
target_compile_definitions(roundtrip PRIVATE __HIP_PLATFORM_AMD__)
target_link_libraries(roundtrip PRIVATE hip::hipfile_cxx hip::hipfile_mockhip)
add_executable(cufile_version cufile_version.c)
target_link_libraries(cufile_version PRIVATE hip::cufile)
"#,
            data.display()
        ),
    )
    .unwrap();
    let build = scratch.join("cmake-build");
    run(Command::new("cmake")
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", prefix.display())));
    run(Command::new("cmake").arg("--build").arg(&build));
    let out = run(clean(&mut Command::new(build.join("example"))));
    assert_eq!(out, "", "the example prints nothing when it works");
    let out = run(clean(&mut Command::new(build.join("roundtrip"))).arg(&data));
    assert!(out.starts_with("ok: 1048576 bytes"), "{out}");
    assert_eq!(run(clean(&mut Command::new(build.join("cufile_version")))).trim(), "1200");
    assert_eq!(pkg(&["--cflags", "hipfile-cufile"]).trim(), format!("-I{}", prefix.join("include/cufile").display()));
    assert_eq!(std::fs::read(format!("{}.copy", data.display())).unwrap(), std::fs::read(&data).unwrap());

    // A cuFile program from the tree: its header and libcufile.so.0, which finds the tree's
    // libhipfile.so.0 itself.
    let exe = scratch.join("cufile");
    run(Command::new("cc")
        .args(["-std=c11", "-D__HIP_PLATFORM_AMD__", "-D_GNU_SOURCE", "-I"])
        .arg(prefix.join("include/cufile"))
        .arg(root().join("hipfile-capi/tests/c/cufile.c"))
        .arg(format!("-L{}", prefix.join("lib/cufile").display()))
        .arg(format!("-L{}", prefix.join("lib").display()))
        .args(["-lcufile", "-Wl,--no-as-needed", "-lhipfile_mockhip", "-Wl,--as-needed", "-ldl"])
        .arg(format!("-Wl,-rpath,{}:{}", prefix.join("lib/cufile").display(), prefix.join("lib").display()))
        .arg("-o")
        .arg(&exe));
    assert_eq!(run(clean(&mut Command::new(&exe)).arg(&scratch)).trim(), "ok");

    // The tool from the tree.
    let out = run(clean(&mut Command::new(prefix.join("bin/hipfile"))).arg("--version"));
    assert!(out.contains("0."), "{out}");
    // A passing run leaves nothing behind (a failing one leaves the tree to look at).
    std::fs::remove_dir_all(&scratch).unwrap();
}
