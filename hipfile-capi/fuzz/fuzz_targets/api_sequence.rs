//! Random sequences of C API calls against the mock HIP runtime (see `tests/sequence`). The
//! mock is `HIPFILE_MOCKHIP`, else the workspace's debug build of it.
#![no_main]

#[path = "../../tests/sequence/mod.rs"]
mod sequence;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sequence::run(sequence::Hip::for_fuzzing(), data));
