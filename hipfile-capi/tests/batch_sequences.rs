//! The bounded CI run of the `batch_stream` fuzz target (`hipfile-capi/fuzz`): every input of
//! its kept corpus, then pseudo-random inputs (`HIPFILE_FUZZ_RUNS`, default 500). Alone in its
//! binary: it uses the process's driver.

mod batch_sequence;
mod common;
mod sequence;

#[test]
fn random_batch_and_stream_sequences_against_the_c_api() {
    let hip = sequence::Hip::load(&common::lib_dir().join("libhipfile_mockhip.so"));
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/batch_stream");
    let mut inputs = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&corpus).into_iter().flatten().flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        batch_sequence::run(&hip, &std::fs::read(&path).unwrap());
        inputs += 1;
    }
    let runs = std::env::var("HIPFILE_FUZZ_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(500u64);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..runs {
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let len = (next() % 1200) as usize;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        batch_sequence::run(&hip, &data);
        inputs += 1;
    }
    let get = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!(
        "{inputs} batch and stream sequences: {} calls; {} batch entries queued, {} events reaped ({} with bytes); \
         {} stream-ordered operations queued ({} with bytes); {} transfers' bytes compared, {} not (raced)",
        get(&batch_sequence::CALLS),
        get(&batch_sequence::ENTRIES),
        get(&batch_sequence::EVENTS),
        get(&batch_sequence::EVENTS_MOVED),
        get(&batch_sequence::ASYNC_QUEUED),
        get(&batch_sequence::ASYNC_MOVED),
        get(&batch_sequence::VERIFIED),
        get(&batch_sequence::UNCHECKED)
    );
}
