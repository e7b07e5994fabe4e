//! Gives the shared library its SONAME and tells dependents where the header is.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libhipfile.so.0");
    let include = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../include");
    println!("cargo:include={}", include.display());
    println!("cargo:rerun-if-changed=build.rs");
}
