//! docs/configuration.md's rows for the size and boolean variables say what the tables say
//! (`SIZE_VARIABLES`: the parameter's range; `BOOL_VARIABLES`), with the configuration's
//! defaults.

use hipfile_core::config::Config;
use hipfile_core::{BOOL_VARIABLES, SIZE_VARIABLES};

/// The cells of `name`'s row, backticks removed.
fn row(docs: &str, name: &str) -> Vec<String> {
    let row = docs.lines().find(|l| l.starts_with(&format!("| `{name}` |")));
    let row = row.unwrap_or_else(|| panic!("{name} has no row in docs/configuration.md"));
    row.split('|').map(|c| c.trim().replace('`', "")).collect()
}

#[test]
fn the_documented_ranges_and_defaults_are_the_tables() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md")).unwrap();
    let defaults = Config::default();
    for v in SIZE_VARIABLES {
        let cells = row(&docs, v.name);
        assert_eq!(cells[2], v.accepted(), "{}: the values", v.name);
        let default = (defaults.size_parameter(v.param) / v.scale).to_string();
        assert_eq!(cells[3].split(':').next().unwrap(), default, "{}: the default", v.name);
    }
}

#[test]
fn the_documented_booleans_and_their_defaults_are_the_tables() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md")).unwrap();
    let defaults = Config::default();
    for (name, target) in BOOL_VARIABLES {
        let cells = row(&docs, name);
        assert_eq!(cells[2], "boolean", "{name}: the values");
        assert_eq!(cells[3], defaults.bool_variable(target).to_string(), "{name}: the default");
        // The variable and what it sets are one: set through the environment, read back.
        let set = Config::from_lookup(|n| (n == name).then(|| (!defaults.bool_variable(target)).to_string())).unwrap();
        assert_eq!(set.bool_variable(target), !defaults.bool_variable(target), "{name}");
    }
}

#[test]
fn the_documented_words_and_their_defaults_are_the_types() {
    use hipfile_core::Words;
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md")).unwrap();
    let d = Config::default();
    for (name, words, default) in [
        ("HIPFILE_BACKEND", hipfile_core::BackendChoice::words(), d.backend.word()),
        ("HIPFILE_STREAM_SIGNAL", hipfile_core::StreamSignal::words(), d.stream_signal.word()),
        ("HIPFILE_PAGE_CACHE", hipfile_core::PageCache::words(), d.page_cache.word()),
    ] {
        let cells = row(&docs, name);
        assert_eq!((cells[2].as_str(), cells[3].as_str()), (words.as_str(), default), "{name}");
        let err = Config::from_lookup(|n| (n == name).then(|| "nonsense".to_owned())).unwrap_err().to_string();
        assert!(err.contains(name) && err.contains(&words), "{err}");
    }
}
