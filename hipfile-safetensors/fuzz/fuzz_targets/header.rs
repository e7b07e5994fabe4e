//! Any bytes as a safetensors file: the header parser must refuse or hold every promise.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| hipfile_safetensors::fuzz_one(data));
