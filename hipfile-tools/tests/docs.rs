//! The documentation kept true:
//! - `docs/configuration.md`: the variables its tables name (first column) are exactly the
//!   `HIPFILE_*` and `CUFILE_*` names the workspace's crates read: string literals in their
//!   `src/` trees (tests, fuzz targets and xtask left out);
//! - `docs/tool.md`: each subcommand of the built `hipfile` has a section `## hipfile SUB` that
//!   names every long flag `hipfile SUB --help` lists and no other, with the default the help
//!   gives in the flag's table row; flags named outside those sections exist.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace root").to_path_buf()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace's members (`members = [...]` of the root `Cargo.toml`; `dir/*` globs
/// expanded), but xtask.
fn members() -> Vec<PathBuf> {
    let manifest = read(&root().join("Cargo.toml"));
    let start = manifest.find("members").expect("a workspace with members");
    let list = &manifest[start..];
    let list = &list[list.find('[').expect("members = [") + 1..list.find(']').expect("members = [...]")];
    let mut dirs = Vec::new();
    for name in list.split(',').map(|m| m.trim().trim_matches('"')).filter(|m| !m.is_empty()) {
        if let Some(parent) = name.strip_suffix("/*") {
            let mut found: Vec<PathBuf> = std::fs::read_dir(root().join(parent))
                .unwrap()
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.join("Cargo.toml").exists())
                .collect();
            found.sort();
            dirs.extend(found);
        } else {
            dirs.push(root().join(name));
        }
    }
    dirs.retain(|d| d.file_name().is_some_and(|n| n != "xtask"));
    assert!(dirs.len() > 3, "members of the workspace: {dirs:?}");
    dirs
}

/// The `.rs` files under `dir`, but those in folders named `tests`, `fuzz` or `benches`, and
/// `tests.rs` files (test modules kept apart).
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if !matches!(name.as_str(), "tests" | "fuzz" | "benches") {
                sources(&path, out);
            }
        } else if name.ends_with(".rs") && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// `text` without its inline test modules (`#[cfg(test)]` then `mod NAME {`, to the `}` at the
/// same indentation, as rustfmt lays them out).
fn without_test_modules(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut kept = String::new();
    let mut i = 0;
    while i < lines.len() {
        let next = lines[i + 1..].iter().position(|l| !l.trim().is_empty()).map(|n| i + 1 + n);
        if lines[i].trim() == "#[cfg(test)]"
            && let Some(m) = next
            && lines[m].trim_start().starts_with("mod ")
            && lines[m].trim_end().ends_with('{')
        {
            let indent = &lines[m][..lines[m].len() - lines[m].trim_start().len()];
            let close = format!("{indent}}}");
            i = lines[m..].iter().position(|l| l.trim_end() == close).map_or(lines.len(), |n| m + n + 1);
            continue;
        }
        kept.push_str(lines[i]);
        kept.push('\n');
        i += 1;
    }
    kept
}

/// Whole string literals `"HIPFILE_..."` and `"CUFILE_..."` in `text`.
fn variable_literals(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for prefix in ["\"HIPFILE_", "\"CUFILE_"] {
        for (at, _) in text.match_indices(prefix) {
            let rest = &text[at + 1..];
            let len = rest.find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')).unwrap();
            if rest[len..].starts_with('"') {
                names.push(rest[..len].to_owned());
            }
        }
    }
    names
}

/// Every variable the crates' sources name, with the files that name it.
fn variables_read() -> BTreeMap<String, BTreeSet<String>> {
    let mut read_by: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for member in members() {
        let mut files = Vec::new();
        sources(&member.join("src"), &mut files);
        for file in files {
            let shown = file.strip_prefix(root()).unwrap_or(&file).display().to_string();
            for name in variable_literals(&without_test_modules(&read(&file))) {
                read_by.entry(name).or_default().insert(shown.clone());
            }
        }
    }
    read_by
}

/// The cells of a Markdown table row (`| a | b |`), or `None` for a line that is not one.
fn cells(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let inner = line.strip_prefix('|')?;
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').map(|c| c.trim().to_owned()).collect())
}

fn is_separator(cells: &[String]) -> bool {
    cells.iter().all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
}

/// The body rows of every table in `text` (header and separator rows left out), with their
/// line numbers.
fn table_rows(text: &str) -> Vec<(usize, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(row) = cells(line) else { continue };
        let header = lines.get(i + 1).and_then(|l| cells(l)).is_some_and(|c| is_separator(&c));
        if !header && !is_separator(&row) {
            rows.push((i + 1, row));
        }
    }
    rows
}

#[test]
fn configuration_md_names_every_variable_the_sources_read_and_no_other() {
    let path = root().join("docs/configuration.md");
    let text = read(&path);
    let mut documented: BTreeMap<String, usize> = BTreeMap::new();
    let mut problems = Vec::new();
    for (line, row) in table_rows(&text) {
        let names = variable_literals(&row[0].replace('`', "\""));
        if names.is_empty() {
            problems.push(format!("line {line}: a table row whose first column names no variable: {:?}", row[0]));
        }
        for name in names {
            if let Some(before) = documented.insert(name.clone(), line) {
                problems.push(format!("{name}: in two rows (lines {before} and {line})"));
            }
        }
    }
    let read_by = variables_read();
    assert!(read_by.contains_key("HIPFILE_BACKEND"), "the scan found the configuration's names: {read_by:?}");
    for (name, files) in &read_by {
        if !documented.contains_key(name) {
            let files: Vec<&str> = files.iter().map(String::as_str).collect();
            problems.push(format!("{name}: read by {}, not in a table of docs/configuration.md", files.join(", ")));
        }
    }
    for (name, line) in &documented {
        if !read_by.contains_key(name) {
            problems.push(format!(
                "{name}: in docs/configuration.md (line {line}), read by no crate's src/ (a test-only variable \
                 belongs in docs/development.md)"
            ));
        }
    }
    assert!(problems.is_empty(), "docs/configuration.md is out of date:\n  {}", problems.join("\n  "));
}

/// `hipfile ARGS`' standard output, which must succeed.
fn hipfile(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_hipfile")).args(args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "hipfile {args:?}: {stdout}{}", String::from_utf8_lossy(&out.stderr));
    stdout
}

/// The subcommands `hipfile --help` lists (`help` left out).
fn subcommands() -> Vec<String> {
    let help = hipfile(&["--help"]);
    let list = help.split_once("Commands:").unwrap_or_else(|| panic!("no Commands: in\n{help}")).1;
    let names: Vec<String> = list
        .lines()
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .filter(|name| name != "help")
        .collect();
    assert!(!names.is_empty(), "no subcommands in\n{help}");
    names
}

/// The long flags `help` (a subcommand's `--help`) declares, with their default where it gives
/// one: the option lines (indented by at most 6 spaces, starting with `-`) and what follows each.
fn flags(help: &str) -> BTreeMap<String, Option<String>> {
    let mut flags = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let body = line.trim_start();
        let indent = line.len() - body.len();
        if (1..=6).contains(&indent) && body.starts_with('-') {
            let long = body.split_whitespace().find_map(|w| w.strip_prefix("--"));
            current = long.map(|w| {
                w.trim_end_matches(',').chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect()
            });
            if let Some(flag) = &current {
                flags.insert(flag.clone(), None);
            }
        } else if indent == 0 && !body.is_empty() {
            current = None; // a heading: Arguments:, Options:
        }
        if let (Some(flag), Some((_, rest))) = (&current, line.split_once("[default: ")) {
            let value = rest.split(']').next().unwrap_or(rest).to_owned();
            flags.insert(flag.clone(), Some(value));
        }
    }
    flags
}

/// The `--flag` words of `text`.
fn mentioned(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let word: String = text[at + 2..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect();
        if word.starts_with(|c: char| c.is_ascii_lowercase()) {
            found.insert(word.trim_end_matches('-').to_owned());
        }
    }
    found
}

#[test]
fn tool_md_documents_every_flag_of_every_subcommand_and_no_other() {
    let text = read(&root().join("docs/tool.md"));
    // Sections by `## ` heading; the text before the first is the preamble.
    let mut sections: Vec<(String, String)> = vec![(String::new(), String::new())];
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.push((heading.trim().to_owned(), String::new()));
        } else {
            let body = &mut sections.last_mut().unwrap().1;
            body.push_str(line);
            body.push('\n');
        }
    }
    let everywhere = ["help", "version"];
    let mut problems = Vec::new();
    let mut all_flags = BTreeSet::new();
    let subs = subcommands();
    for sub in &subs {
        let declared = flags(&hipfile(&[sub, "--help"]));
        assert!(declared.contains_key("help"), "hipfile {sub} --help lists no --help: parsed {declared:?}");
        all_flags.extend(declared.keys().cloned());
        let Some((_, section)) = sections.iter().find(|(h, _)| *h == format!("hipfile {sub}")) else {
            problems.push(format!("no section `## hipfile {sub}`"));
            continue;
        };
        let named = mentioned(section);
        for (flag, default) in declared.iter().filter(|(f, _)| !everywhere.contains(&f.as_str())) {
            if !named.contains(flag) {
                problems.push(format!("hipfile {sub} --{flag}: not in its section"));
                continue;
            }
            let Some(default) = default else { continue };
            let rows: Vec<Vec<String>> = table_rows(section)
                .into_iter()
                .map(|(_, row)| row)
                .filter(|row| mentioned(&row[0]).contains(flag))
                .collect();
            if !rows.iter().any(|row| row.iter().skip(1).any(|c| c.contains(&format!("`{default}`")))) {
                problems
                    .push(format!("hipfile {sub} --{flag}: its default `{default}` is not in the flag's table row"));
            }
        }
        for flag in named.iter().filter(|f| !declared.contains_key(*f)) {
            problems.push(format!("hipfile {sub} has no --{flag}, which its section names"));
        }
    }
    for (heading, section) in &sections {
        let is_sub = heading.strip_prefix("hipfile ").is_some_and(|s| subs.iter().any(|x| x == s));
        if !is_sub && heading.starts_with("hipfile ") {
            problems.push(format!("section `## {heading}`: no such subcommand (hipfile --help lists {subs:?})"));
        }
        if is_sub {
            continue;
        }
        for flag in mentioned(section) {
            if !all_flags.contains(&flag) {
                let place = if heading.is_empty() { "the preamble".to_owned() } else { format!("`## {heading}`") };
                problems.push(format!("--{flag} (in {place}): no subcommand has it"));
            }
        }
    }
    assert!(problems.is_empty(), "docs/tool.md is out of date:\n  {}", problems.join("\n  "));
}
