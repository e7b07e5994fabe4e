//! Random sequences of batch and stream-ordered C API calls against the mock HIP runtime (see
//! `tests/batch_sequence`). The mock is `HIPFILE_MOCKHIP`, else the workspace's debug build of it.
#![no_main]

#[path = "../../tests/batch_sequence/mod.rs"]
mod batch_sequence;
#[path = "../../tests/sequence/mod.rs"]
mod sequence;

libfuzzer_sys::fuzz_target!(|data: &[u8]| batch_sequence::run(sequence::Hip::for_fuzzing(), data));
