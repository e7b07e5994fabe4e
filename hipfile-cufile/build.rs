//! The shared library's SONAME: programs built against NVIDIA's libcufile.so.0 load this one
//! by that name.

fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcufile.so.0");
}
