//! Generates the C++ side of the bridge (`hipfile-cxx/src/lib.rs.h`, `rust/cxx.h`) and
//! compiles it into the library; tells the tests where the generated headers are.

fn main() {
    cxx_build::bridge("src/lib.rs").std("c++17").compile("hipfile_cxx_bridge");
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    println!("cargo:rustc-env=HIPFILE_CXX_INCLUDE={out}/cxxbridge/include");
    println!("cargo:rerun-if-changed=src/lib.rs");
    println!("cargo:rerun-if-changed=build.rs");
}
