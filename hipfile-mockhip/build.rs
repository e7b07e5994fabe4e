//! Gives the mock HIP runtime its SONAME, so programs linked with it load `libhipfile_mockhip.so.0`
//! (the install tree's versioned name) at run time, as they load `libhipfile.so.0`.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhipfile_mockhip.so.0");
    println!("cargo:rerun-if-changed=build.rs");
}
