//! The bounded CI run of the `api_sequence` fuzz target (`hipfile-capi/fuzz`): every input of
//! its kept corpus, then pseudo-random inputs (`HIPFILE_FUZZ_RUNS`, default 1000). Alone in its
//! binary: it uses the process's driver.

mod common;
mod sequence;

#[test]
fn random_call_sequences_against_the_c_api() {
    let hip = sequence::Hip::load(&common::lib_dir().join("libhipfile_mockhip.so"));
    let inputs = sequence::replay("api_sequence", 1000, 600, 0x853c_49e6_748f_ea9b, |data| sequence::run(&hip, data));
    let get = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{inputs} call sequences: {} calls, {} registrations, {} reads and {} writes that moved bytes",
        get(&sequence::CALLS),
        get(&sequence::REGISTRATIONS),
        get(&sequence::READS),
        get(&sequence::WRITES)
    );
}
