//! The bounded CI run of the `api_sequence` fuzz target (`hipfile-capi/fuzz`): every input of
//! its kept corpus, then pseudo-random inputs (`HIPFILE_FUZZ_RUNS`, default 1000). Alone in its
//! binary: it uses the process's driver.

mod common;
mod sequence;

#[test]
fn random_call_sequences_against_the_c_api() {
    let hip = sequence::Hip::load(&common::lib_dir().join("libhipfile_mockhip.so"));
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/api_sequence");
    let mut inputs = 0;
    for entry in std::fs::read_dir(&corpus).into_iter().flatten().flatten() {
        sequence::run(&hip, &std::fs::read(entry.path()).unwrap());
        inputs += 1;
    }
    let runs = std::env::var("HIPFILE_FUZZ_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000u64);
    let mut state = 0x853c_49e6_748f_ea9bu64;
    for _ in 0..runs {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let len = (next() % 600) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        sequence::run(&hip, &data);
        inputs += 1;
    }
    let get = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{inputs} call sequences: {} calls, {} registrations, {} reads and {} writes that moved bytes",
        get(&sequence::CALLS),
        get(&sequence::REGISTRATIONS),
        get(&sequence::READS),
        get(&sequence::WRITES)
    );
}
