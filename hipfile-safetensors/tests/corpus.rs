//! The fuzz target's kept corpus (`fuzz/corpus/header`), replayed: every file is refused or
//! parses to a header that holds its promises.

#[test]
fn the_kept_corpus_replays() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/header");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        hipfile_safetensors::fuzz_one(&std::fs::read(&path).unwrap());
        n += 1;
    }
    assert!(n >= 10, "{n} corpus files in {}", dir.display());
}
