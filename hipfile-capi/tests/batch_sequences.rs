//! The bounded CI run of the `batch_stream` fuzz target (`hipfile-capi/fuzz`): every input of
//! its kept corpus, then pseudo-random inputs (`HIPFILE_FUZZ_RUNS`, default 500). Alone in its
//! binary: it uses the process's driver.

mod batch_sequence;
mod common;
mod sequence;

#[test]
fn random_batch_and_stream_sequences_against_the_c_api() {
    let hip = sequence::Hip::load(&common::lib_dir().join("libhipfile_mockhip.so"));
    let inputs =
        sequence::replay("batch_stream", 500, 1200, 0x9e37_79b9_7f4a_7c15, |data| batch_sequence::run(&hip, data));
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
