//! The shape of the workspace (docs/architecture.md, "Inside a crate: who imports whom"): no
//! file of a crate imports a file that imports it back, directly or around a loop.
//!
//! A file's imports are the modules its `crate::` paths name (outside its `#[cfg(test)] mod
//! tests`), a name the crate root re-exports counting as the module it comes from; the crate
//! root's are the child modules its own paths name; a child module's `super::` is its parent.
//! And no library source file over 600 lines, no function over 80 outside tests; and the README
//! and docs/*.md name no path of the repository that is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Each `.rs` file under `src`, by module path (`ROOT` for `lib.rs`/`main.rs`), without its
/// tests and comments.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().replace('/', "::");
            if let Some(parent) = name.strip_suffix("::mod") {
                name = parent.to_owned();
            }
            if name == "lib" || name == "main" {
                name = "ROOT".to_owned();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let code: Vec<&str> = code.lines().map(|l| l.split("//").next().unwrap()).collect();
            out.insert(name, code.join("\n"));
        }
    }
    out
}

fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The paths after each `prefix` in `code` (`a::b::C`), a `{...}` group giving one path per
/// item (its first segments joined to the prefix's).
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| ident_char(c) || c == ':') {
            continue;
        }
        out.extend(path_items(rest, Vec::new()));
    }
    out
}

/// The path (or group of paths) at the start of `text`, each behind `head`.
fn path_items(text: &str, head: Vec<String>) -> Vec<Vec<String>> {
    let mut segments = head;
    let mut text = text;
    loop {
        if let Some(group) = text.strip_prefix('{') {
            let mut depth = 1;
            let end = group
                .char_indices()
                .find(|&(_, c)| {
                    depth += match c {
                        '{' => 1,
                        '}' => -1,
                        _ => 0,
                    };
                    depth == 0
                })
                .map_or(group.len(), |(i, _)| i);
            let mut items = Vec::new();
            let (mut level, mut start) = (0, 0);
            let inner = &group[..end];
            for (i, c) in inner.char_indices().chain([(inner.len(), ',')]) {
                match c {
                    '{' => level += 1,
                    '}' => level -= 1,
                    ',' if level == 0 => {
                        items.extend(path_items(inner[start..i].trim(), segments.clone()));
                        start = i + 1;
                    }
                    _ => {}
                }
            }
            return items;
        }
        let len = text.find(|c: char| !ident_char(c)).unwrap_or(text.len());
        if len == 0 {
            return if segments.is_empty() { Vec::new() } else { vec![segments] };
        }
        segments.push(text[..len].to_owned());
        text = &text[len..];
        match text.strip_prefix("::") {
            Some(more) => text = more,
            None => return vec![segments],
        }
    }
}

/// Who imports whom among `mods`.
fn graph(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let root = mods.get("ROOT").map_or("", String::as_str);
    // Names the root defines, and names it re-exports from a module (`pub use m::{A, B}`).
    let mut defined = BTreeSet::new();
    for line in root.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let kinds = ["struct", "enum", "fn", "const", "static", "trait", "type", "union", "macro_rules!"];
        if let Some(i) = words.iter().position(|w| kinds.contains(w))
            && let Some(name) = words.get(i + 1)
        {
            defined.insert(name.trim_end_matches(|c: char| !ident_char(c)).to_owned());
        }
    }
    let mut reexported = BTreeMap::new();
    for path in paths_after(root, "pub use ") {
        if path.len() >= 2 && mods.contains_key(&path[0]) {
            reexported.insert(path.last().unwrap().clone(), path[0].clone());
        }
    }
    let children: BTreeSet<&String> = mods.keys().filter(|m| *m != "ROOT" && !m.contains("::")).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = mods.keys().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (name, code) in mods {
        let mut add = |to: String| {
            if &to != name && mods.contains_key(&to) {
                g.get_mut(name).unwrap().insert(to);
            }
        };
        for path in paths_after(code, "crate::") {
            let module = (1..=path.len()).rev().map(|k| path[..k].join("::")).find(|m| mods.contains_key(m));
            match module {
                Some(m) => add(m),
                None if reexported.contains_key(&path[0]) => add(reexported[&path[0]].clone()),
                None if defined.contains(&path[0]) => add("ROOT".to_owned()),
                None => {}
            }
        }
        if name == "ROOT" {
            for line in code.lines().filter(|l| !l.trim_start().starts_with("mod ") && !l.contains(" mod ")) {
                for child in &children {
                    let needle = format!("{child}::");
                    if line
                        .match_indices(&needle)
                        .any(|(i, _)| !line[..i].chars().next_back().is_some_and(|c| ident_char(c) || c == ':'))
                    {
                        add((*child).clone());
                    }
                }
            }
        } else if let Some((parent, _)) = name.rsplit_once("::")
            && code.contains("super::")
        {
            add(parent.to_owned());
        }
    }
    g
}

/// The groups of two or more modules that import each other around a loop (Tarjan).
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, n: &'a str) {
        let i = w.index.len();
        w.index.insert(n, i);
        w.low.insert(n, i);
        w.stack.push(n);
        for m in &w.g[n] {
            let m = m.as_str();
            if !w.index.contains_key(m) {
                visit(w, m);
                let low = w.low[m].min(w.low[n]);
                w.low.insert(n, low);
            } else if w.stack.contains(&m) {
                let low = w.index[m].min(w.low[n]);
                w.low.insert(n, low);
            }
        }
        if w.low[n] == w.index[n] {
            let at = w.stack.iter().position(|&x| x == n).unwrap();
            let group: Vec<String> = w.stack.drain(at..).map(str::to_owned).collect();
            if group.len() > 1 {
                w.found.push(group);
            }
        }
    }
    let mut w = Walk { g, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), found: Vec::new() };
    for n in g.keys() {
        if !w.index.contains_key(n.as_str()) {
            visit(&mut w, n);
        }
    }
    w.found
}

#[test]
fn no_import_circles() {
    let mut found = Vec::new();
    let mut crates = 0;
    for entry in std::fs::read_dir(root()).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.join("Cargo.toml").exists() || !dir.join("src").is_dir() {
            continue;
        }
        crates += 1;
        for group in circles(&graph(&modules(&dir.join("src")))) {
            found.push(format!("{}: {}", dir.file_name().unwrap().to_string_lossy(), group.join(" <-> ")));
        }
    }
    assert!(crates >= 10, "the crates were not found under {}", root().display());
    assert!(found.is_empty(), "modules that import each other:\n{}", found.join("\n"));
}

/// The reader sees what it must: a loop through a re-export, a group, the root, `super::`.
#[test]
fn a_circle_is_seen() {
    let mods: BTreeMap<String, String> = [
        ("ROOT", "mod a;\nmod b;\npub use a::Alpha;\nuse b::Beta;\n"),
        ("a", "use crate::{b::{Beta, other}, c};\npub struct Alpha;\n"),
        ("b", "use crate::Alpha;\npub struct Beta;\n"),
        ("c", "pub struct Gamma;\n"),
        ("c::d", "use super::Gamma;\n"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let g = graph(&mods);
    assert_eq!(g["a"], BTreeSet::from(["b".to_owned(), "c".to_owned()]));
    assert_eq!(g["b"], BTreeSet::from(["a".to_owned()]), "through the root's re-export");
    assert_eq!(g["ROOT"], BTreeSet::from(["a".to_owned(), "b".to_owned()]));
    assert_eq!(g["c::d"], BTreeSet::from(["c".to_owned()]));
    let mut found = circles(&g);
    found.iter_mut().for_each(|c| c.sort());
    assert_eq!(found, vec![vec!["a".to_owned(), "b".to_owned()]]);
}

/// The longest a library source file may be, in lines, and a function outside tests.
const FILE_LINES: usize = 600;
const FUNCTION_LINES: usize = 80;

/// The library sources: each crate's `src` (its unit-test files, `tests.rs`, left out) and the
/// Python package's modules.
fn library_sources() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root())
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|src| src.is_dir() && src.parent().unwrap().join("Cargo.toml").exists())
        .collect();
    dirs.push(root().join("hipfile-python/python/hipfile"));
    let mut out = Vec::new();
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "py") && !path.ends_with("tests.rs") {
                out.push(path);
            }
        }
    }
    out
}

/// `(name, lines)` of each function of `code` (Rust, its tests cut off) longer than `limit`
/// lines: from the line of its `fn` to the line of its closing brace at the same indent.
fn long_functions(code: &str, limit: usize) -> Vec<(String, usize)> {
    const QUALIFIERS: [&str; 7] = ["pub", "pub(crate)", "pub(super)", "const", "async", "unsafe", "extern"];
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let item = line.trim_start();
        let indent = &line[..line.len() - item.len()];
        let Some(at) = item.find("fn ") else { continue };
        if !item[..at].split_whitespace().all(|w| QUALIFIERS.contains(&w) || w == "\"C\"") {
            continue;
        }
        let name: String = item[at + 3..].chars().take_while(|&c| ident_char(c)).collect();
        let close = format!("{indent}}}");
        for (j, l) in lines.iter().enumerate().skip(i) {
            let opened = lines[i..=j].iter().any(|x| x.contains('{'));
            if (!opened && l.trim_end().ends_with(';')) || (j == i && l.trim_end().ends_with('}')) {
                break; // a declaration, or a function on one line
            }
            if j > i && l.trim_end() == close {
                if j - i + 1 > limit {
                    out.push((name.clone(), j - i + 1));
                }
                break;
            }
        }
    }
    out
}

#[test]
fn library_files_and_functions_stay_short() {
    let mut found = Vec::new();
    for path in library_sources() {
        let text = std::fs::read_to_string(&path).unwrap();
        let rel = path.strip_prefix(root()).unwrap().to_string_lossy().into_owned();
        if text.lines().count() > FILE_LINES {
            found.push(format!("{rel}: {} lines", text.lines().count()));
        }
        if path.extension().is_some_and(|e| e == "rs") {
            let code = text.split("\n#[cfg(test)]").next().unwrap();
            for (name, n) in long_functions(code, FUNCTION_LINES) {
                found.push(format!("{rel}: fn {name}, {n} lines"));
            }
        }
    }
    assert!(found.is_empty(), "over {FILE_LINES} lines a file or {FUNCTION_LINES} a function:\n{}", found.join("\n"));
}

/// The reader measures what it must: a long function, not a declaration or a short one.
#[test]
fn a_long_function_is_seen() {
    let body = "        x += 1;\n".repeat(90);
    let code = format!(
        "trait T {{\n    unsafe fn io(\n        &self,\n    ) -> isize;\n}}\npub(crate) fn short() {{ 1 }}\n\
         impl S {{\n    pub unsafe extern \"C\" fn long(&self) {{\n{body}    }}\n}}\n"
    );
    assert_eq!(long_functions(&code, 80), vec![("long".to_owned(), 92)]);
}

/// The repository's paths a text names in backticks (`hipfile-core/src/config/params.rs`) that
/// are not there: those under a folder of the workspace (a crate's, `include`, `xtask`, `docs`),
/// except one said to be of somewhere else ("`...` of commit b36893f", "of the install tree"). The `hipfile` crate's
/// folder shares its name with the Python package, whose installed paths (`hipfile/lib/...`)
/// the docs also name: under it only `src/` and `tests/` are the crate's.
fn missing_paths(text: &str, exists: impl Fn(&str) -> bool, folders: &BTreeSet<String>) -> Vec<String> {
    let path_char = |c: char| c.is_ascii_alphanumeric() || "_.-/".contains(c);
    // The prose only: a fenced example's lines are left out (a shell's backticks there would
    // pair with the prose's).
    let mut fenced = false;
    let prose: Vec<&str> = text
        .lines()
        .filter(|line| {
            let fence = line.trim_start().starts_with("```");
            fenced ^= fence;
            !fence && !fenced
        })
        .collect();
    let prose = prose.join("\n");
    let mut out = Vec::new();
    let mut spans = prose.split('`');
    spans.next(); // before the first backtick
    while let (Some(span), Some(after)) = (spans.next(), spans.next()) {
        let parts: Vec<&str> = span.trim_end_matches('/').split('/').collect();
        let named = parts.len() > 1 && span.chars().all(path_char) && parts.iter().all(|p| !p.is_empty());
        let crate_path = parts[0] != "hipfile" || matches!(parts.get(1), Some(&("src" | "tests")));
        if named && folders.contains(parts[0]) && crate_path && !after.starts_with(" of ") && !exists(span) {
            out.push(span.to_owned());
        }
    }
    out
}

/// The folders whose paths the docs may name: each crate's, and `include`, `xtask`, `docs`.
fn workspace_folders() -> BTreeSet<String> {
    let crates =
        std::fs::read_dir(root()).unwrap().map(|e| e.unwrap().path()).filter(|p| p.join("Cargo.toml").exists());
    let mut folders: BTreeSet<String> = crates.map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    folders.extend(["include", "xtask", "docs"].map(String::from));
    folders
}

/// What the README and docs/*.md say lives somewhere in the repository is there (the bench
/// records under docs/bench/ name what was there when they ran).
#[test]
fn docs_name_only_paths_that_exist() {
    let folders = workspace_folders();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.push(root().join("README.md"));
    let mut found = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).unwrap();
        for path in missing_paths(&text, |p| root().join(p).exists(), &folders) {
            found.push(format!("{}: `{path}`", doc.strip_prefix(root()).unwrap().display()));
        }
    }
    assert!(found.is_empty(), "named in the docs, not in the repository:\n{}", found.join("\n"));
}

/// The reader takes a workspace path in backticks, and only that.
#[test]
fn a_missing_path_is_seen() {
    let folders: BTreeSet<String> = ["hipfile", "hipfile-core", "include", "xtask"].map(String::from).into();
    let text = "`hipfile-core/src/gone.rs` and `hipfile-core/src/here.rs`, `xtask/old.c` of commit abc, `include/x/y.h` of the install tree,\n\
                ```sh\necho `xtask/in-a-fence.sh`\n```\n\
                `hipfile/lib/libhipfile.so.0`, `hipfile/src/gone.rs`, `other/x.rs`, `HIPFILE_LOG`, `a b/c`";
    let found = missing_paths(text, |p| p.ends_with("here.rs"), &folders);
    assert_eq!(found, ["hipfile-core/src/gone.rs", "hipfile/src/gone.rs"]);
}
