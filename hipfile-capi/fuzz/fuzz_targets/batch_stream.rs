//! Random sequences of batch and stream-ordered C API calls against the mock HIP runtime (see
//! `tests/batch_sequence`). The mock is `HIPFILE_MOCKHIP`, else the workspace's debug build of it.
#![no_main]

#[path = "../../tests/batch_sequence/mod.rs"]
mod batch_sequence;
#[path = "../../tests/sequence/mod.rs"]
mod sequence;

use std::sync::OnceLock;

fn hip() -> &'static sequence::Hip {
    static HIP: OnceLock<sequence::Hip> = OnceLock::new();
    HIP.get_or_init(|| {
        let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/libhipfile_mockhip.so");
        let path = std::env::var("HIPFILE_MOCKHIP").unwrap_or_else(|_| default.to_owned());
        sequence::Hip::load(std::path::Path::new(&path))
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| batch_sequence::run(hip(), data));
