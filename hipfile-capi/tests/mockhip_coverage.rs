//! The mock HIP runtime's calls against HIP's header and docs/mockhip.md: every call it exports
//! is one the header declares (or one of HIP 6's newer calls for AMD's AIS) and one the docs
//! list as provided, and every call the docs list is exported. Prints the header's calls the
//! mock does not provide, so the gap stays visible.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use common::{HIP_HEADER, lib_dir, require_hip_headers};

/// The functions HIP's runtime header declares.
fn declared() -> BTreeSet<String> {
    let text = std::fs::read_to_string(HIP_HEADER).unwrap();
    let mut names = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim_start();
        let line =
            line.strip_prefix("DEPRECATED(").and_then(|l| l.split_once(')')).map_or(line, |(_, l)| l.trim_start());
        for ret in ["hipError_t ", "const char* ", "const char *", "int ", "void "] {
            if let Some(rest) = line.strip_prefix(ret) {
                let name: String = rest.trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                if name.starts_with("hip") && rest.trim_start()[name.len()..].trim_start().starts_with('(') {
                    names.insert(name);
                }
            }
        }
    }
    names
}

/// The `hip*` functions the mock exports (its own markers left out).
fn exported() -> BTreeSet<String> {
    let lib = lib_dir().join("libhipfile_mockhip.so");
    let out = Command::new("nm").args(["-D", "--defined-only"]).arg(&lib).output().expect("nm (binutils)");
    assert!(out.status.success(), "nm {}", lib.display());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .filter(|n| n.starts_with("hip") && !n.starts_with("hipfile"))
        .map(str::to_owned)
        .collect()
}

/// The calls docs/mockhip.md lists as provided (backquoted names in its "Calls provided" table).
fn documented() -> BTreeSet<String> {
    let docs = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/mockhip.md")).unwrap();
    let table = docs.split("## Calls provided").nth(1).unwrap().split("\n## ").next().unwrap();
    let mut names = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| group") && !l.starts_with("| ---")) {
        let calls = row.split('|').nth(2).unwrap_or("");
        for part in calls.split('`').skip(1).step_by(2) {
            if part.starts_with("hip") {
                names.insert(part.to_owned());
            }
        }
        if calls.contains("and their `Async` forms") {
            let base: Vec<String> = names.iter().filter(|n| calls.contains(&format!("`{n}`"))).cloned().collect();
            for n in base.iter().filter(|n| !n.ends_with("Async") && !["hipMemcpy", "hipMemset"].contains(&n.as_str()))
            {
                names.insert(format!("{n}Async"));
            }
        }
    }
    names
}

#[test]
fn the_mock_hip_runtime_matches_the_header_and_its_docs() {
    require_hip_headers();
    let (declared, exported, documented) = (declared(), exported(), documented());
    assert!(declared.len() > 300, "the header's calls were not found ({})", declared.len());
    // HIP 6's calls, newer than the header: how libhipfile finds the AIS entry points, and what
    // HIP 6's headers make of hipGetDeviceProperties.
    let newer = ["hipGetProcAddress", "hipAmdFileRead", "hipAmdFileWrite", "hipGetDevicePropertiesR0600"];
    let unknown: Vec<&String> =
        exported.iter().filter(|n| !declared.contains(*n) && !newer.contains(&n.as_str())).collect();
    assert!(unknown.is_empty(), "exported but not declared by HIP's header: {unknown:?}");
    let undocumented: Vec<&String> = exported.difference(&documented).collect();
    assert!(undocumented.is_empty(), "exported but not in docs/mockhip.md: {undocumented:?}");
    let missing: Vec<&String> = documented.difference(&exported).collect();
    assert!(missing.is_empty(), "in docs/mockhip.md but not exported: {missing:?}");
    let gap: Vec<&String> = declared.difference(&exported).collect();
    println!(
        "the mock provides {} of the {} calls HIP's header declares; not provided:",
        exported.len(),
        declared.len()
    );
    println!("{}", gap.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "));
}
