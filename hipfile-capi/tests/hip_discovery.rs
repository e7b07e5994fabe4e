//! Runtime discovery order: HIP symbols already in the process come first, `dlopen` of
//! `libamdhip64` second. One test, in steps, because loading a library is process-wide.

mod common;

use std::ffi::CString;

use hipfile_core::HipRuntime;

use common::*;

#[test]
fn symbols_in_the_process_win_over_libamdhip64() {
    require_hip_headers(); // the same package brings Debian's libamdhip64.so
    let loaded = HipRuntime::discover().expect("Debian's libamdhip64 is found");
    assert!(!loaded.is_mock() && loaded.path().starts_with("libamdhip64.so"), "found {loaded:?}");

    let mock = lib_dir().join("libhipfile_mockhip.so");
    let path = CString::new(mock.to_str().unwrap()).unwrap();
    // SAFETY: loading the mock runtime, as a program linked against it would.
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(!handle.is_null());
    let hip = HipRuntime::discover().expect("a runtime is found");
    assert!(hip.is_mock(), "found {hip:?}");
    assert!(hip.path().ends_with("libhipfile_mockhip.so"), "{}", hip.path());
}
