//! Runtime discovery order: symbols already in the process come first (even without a
//! device: they are the application's runtime), then libraries that have a device. One test, in
//! steps, because loading a library is process-wide.

mod common;

use std::ffi::CString;

use hipfile_runtime::LoadedRuntime;

use common::*;

#[test]
fn symbols_in_the_process_win_over_libamdhip64() {
    require_hip_headers(); // the same package brings Debian's libamdhip64.so
    // Debian's libamdhip64 loads, but there is no GPU here, and no CUDA runtime.
    let none = LoadedRuntime::discover().expect_err("no runtime with a device");
    assert!(none.0.contains("libamdhip64.so: no device"), "{none}");

    let mock = lib_dir().join("libhipfile_mockhip.so");
    let path = CString::new(mock.to_str().unwrap()).unwrap();
    // SAFETY: loading the mock runtime, as a program linked against it would.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(!handle.is_null());
    let hip = LoadedRuntime::discover().expect("a runtime is found");
    assert!(hip.is_mock(), "found {hip:?}");
    assert!(hip.path().ends_with("libhipfile_mockhip.so"), "{}", hip.path());
}
