//! docs/configuration.md's rows for the size parameters' variables say what the one table
//! (`SIZE_VARIABLES`: the parameter's range, the configuration's default) says.

use hipfile_core::SIZE_VARIABLES;
use hipfile_core::config::Config;

#[test]
fn the_documented_ranges_and_defaults_are_the_tables() {
    let docs = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/configuration.md")).unwrap();
    let defaults = Config::default();
    for v in SIZE_VARIABLES {
        let row = docs.lines().find(|l| l.starts_with(&format!("| `{}` |", v.name)));
        let row = row.unwrap_or_else(|| panic!("{} has no row in docs/configuration.md", v.name));
        let cells: Vec<String> = row.split('|').map(|c| c.trim().replace('`', "")).collect();
        assert_eq!(cells[2], v.accepted(), "{}: the values", v.name);
        let default = (defaults.size_parameter(v.param) / v.scale).to_string();
        assert_eq!(cells[3].split(':').next().unwrap(), default, "{}: the default", v.name);
    }
}
