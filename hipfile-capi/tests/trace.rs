//! hipFile 0.5's tracing ABI: `include/hipfile-api-trace.h` has upstream's table (its entries'
//! names, order, offsets and types, its version macros), and `libhipfile.so.0` hands the table
//! to rocprofiler-register, found at run time, so that a profiler's wrapper of an entry sees
//! every call (a stand-in rocprofiler-register, `tests/trace/fake_register.c`).

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Upstream's entries, in order (rocm-systems `projects/hipfile/include/hipfile-api-trace.h`,
/// table step 1), with the call each holds.
const ENTRIES: [(&str, &str); 34] = [
    ("pfn_hipfile_get_op_error_string", "hipFileGetOpErrorString"),
    ("pfn_hipfile_handle_register", "hipFileHandleRegister"),
    ("pfn_hipfile_handle_deregister", "hipFileHandleDeregister"),
    ("pfn_hipfile_buf_register", "hipFileBufRegister"),
    ("pfn_hipfile_buf_deregister", "hipFileBufDeregister"),
    ("pfn_hipfile_read", "hipFileRead"),
    ("pfn_hipfile_write", "hipFileWrite"),
    ("pfn_hipfile_driver_open", "hipFileDriverOpen"),
    ("pfn_hipfile_driver_close", "hipFileDriverClose"),
    ("pfn_hipfile_use_count", "hipFileUseCount"),
    ("pfn_hipfile_driver_get_properties", "hipFileDriverGetProperties"),
    ("pfn_hipfile_driver_set_poll_mode", "hipFileDriverSetPollMode"),
    ("pfn_hipfile_driver_set_max_direct_io_size", "hipFileDriverSetMaxDirectIOSize"),
    ("pfn_hipfile_driver_set_max_cache_size", "hipFileDriverSetMaxCacheSize"),
    ("pfn_hipfile_driver_set_max_pinned_mem_size", "hipFileDriverSetMaxPinnedMemSize"),
    ("pfn_hipfile_batch_io_set_up", "hipFileBatchIOSetUp"),
    ("pfn_hipfile_batch_io_submit", "hipFileBatchIOSubmit"),
    ("pfn_hipfile_batch_io_get_status", "hipFileBatchIOGetStatus"),
    ("pfn_hipfile_batch_io_cancel", "hipFileBatchIOCancel"),
    ("pfn_hipfile_batch_io_destroy", "hipFileBatchIODestroy"),
    ("pfn_hipfile_read_async", "hipFileReadAsync"),
    ("pfn_hipfile_write_async", "hipFileWriteAsync"),
    ("pfn_hipfile_stream_register", "hipFileStreamRegister"),
    ("pfn_hipfile_stream_deregister", "hipFileStreamDeregister"),
    ("pfn_hipfile_get_version", "hipFileGetVersion"),
    ("pfn_hipfile_get_parameter_size_t", "hipFileGetParameterSizeT"),
    ("pfn_hipfile_get_parameter_bool", "hipFileGetParameterBool"),
    ("pfn_hipfile_get_parameter_string", "hipFileGetParameterString"),
    ("pfn_hipfile_set_parameter_size_t", "hipFileSetParameterSizeT"),
    ("pfn_hipfile_set_parameter_bool", "hipFileSetParameterBool"),
    ("pfn_hipfile_set_parameter_string", "hipFileSetParameterString"),
    ("pfn_hipfile_get_stats_l1", "hipFileGetStatsL1"),
    ("pfn_hipfile_get_stats_l2", "hipFileGetStatsL2"),
    ("pfn_hipfile_get_stats_l3", "hipFileGetStatsL3"),
];

/// The C compiler with `include/` on the include path, every warning an error.
fn strict_cc() -> Command {
    let mut cmd = cc();
    cmd.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-D__HIP_PLATFORM_AMD__", "-I"]).arg(include_dir());
    cmd
}

/// [`strict_cc`] building the program `exe` from `src`, linked with `libhipfile` ([`lib_dir`]);
/// further libraries go after it.
fn program_cc(src: &Path, exe: &Path) -> Command {
    let mut cmd = strict_cc();
    cmd.arg(src).arg("-o").arg(exe).arg("-L").arg(lib_dir()).arg("-lhipfile");
    cmd
}

#[test]
fn the_trace_header_has_upstreams_table() {
    require_hip_headers();
    let dir = scratch("trace-layout");
    // Each entry's offset, and each call assigned to its entry (a type that differs from the
    // call's prototype fails the build under -Werror).
    let mut src = String::from(
        "#include <stddef.h>\n#include <stdio.h>\n#include <hipfile-api-trace.h>\nint main(void) {\n    \
         struct hipFileDispatchTable t;\n    t.size = sizeof t;\n    printf(\"size %zu\\n\", sizeof t);\n    \
         printf(\"version %d.%d\\n\", HIPFILE_RUNTIME_API_TABLE_MAJOR_VERSION, \
         HIPFILE_RUNTIME_API_TABLE_STEP_VERSION);\n",
    );
    for (field, call) in ENTRIES {
        src.push_str(&format!(
            "    t.{field} = {call};\n    printf(\"{field} %zu\\n\", offsetof(struct hipFileDispatchTable, {field}));\n"
        ));
    }
    src.push_str("    return t.size == 0;\n}\n");
    std::fs::write(dir.join("layout.c"), src).unwrap();
    let exe = dir.join("layout");
    run_ok(&mut program_cc(&dir.join("layout.c"), &exe));
    let out = run_ok(&mut program(&exe, &[], &[]));
    let mut expected = format!("size {}\nversion 0.1\n", 8 + 8 * ENTRIES.len());
    for (i, (field, _)) in ENTRIES.iter().enumerate() {
        expected.push_str(&format!("{field} {}\n", 8 + 8 * i));
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn a_profiler_wraps_an_entry_and_sees_every_call() {
    require_hip_headers();
    let dir = scratch("trace-register");
    let c = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/trace");
    let fake = dir.join("librocprofiler-register.so.0");
    run_ok(
        strict_cc()
            .args(["-shared", "-fPIC", "-Wl,-soname,librocprofiler-register.so.0"])
            .arg(c.join("fake_register.c"))
            .arg("-o")
            .arg(&fake),
    );
    let exe = dir.join("traced");
    run_ok(program_cc(&c.join("traced.c"), &exe).arg("-L").arg(&dir).arg("-l:librocprofiler-register.so.0"));
    let path = format!("{}:{}", lib_dir().display(), dir.display());
    let out = run_ok(&mut program(&exe, &[], &[("LD_LIBRARY_PATH", &path)]));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hipFile version 500 import 500 tables 1 size 280\nversion 0.5.0 err 0\nwrapped calls 2\n"
    );
}
