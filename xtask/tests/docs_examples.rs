//! Every fenced example in README.md and docs/*.md, as written: each code fence says in its
//! info string what it is, and those that claim to run on a machine without a GPU run here.
//!
//! The words after a fence's language:
//! - `mock`: runs as written on a machine without a GPU (the mock GPU); run here.
//! - `gpu`: needs a GPU; not run here.
//! - `setup`: builds or installs (cargo, pip); this test's own setup does the same once.
//! - `part`: not a program on its own (an excerpt, a listing, a command with placeholders).
//! - `file=NAME`: the fence's text is the file NAME (a `mock` program, run by a shell fence
//!   that builds it).
//!
//! A document's `file=` fences are written first, then its `mock` fences run in order, in one
//! scratch directory of its own outside the checkout: shell with
//! `bash -e -o pipefail`, Python with the test environment's interpreter (`target/python-torch`,
//! else `target/python`: PyTorch for CPU, NumPy and the package), Rust through the shell fence
//! that builds it. Two things stand for what a reader has: the install tree at `/opt/hipfile`
//! is one this test builds (`cargo xtask dist --debug`, in `target/dist-test`), and
//! `../hipfile-rs` is this checkout (a Rust example gets the workspace's `Cargo.lock`). Fences of other languages (`text`: a tool's output) are
//! not examples.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The languages whose fences are examples and must say what they are.
const EXAMPLES: [&str; 8] = ["sh", "c", "cpp", "rust", "python", "cmake", "toml", "console"];
const KINDS: [&str; 4] = ["mock", "gpu", "setup", "part"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// One fence: where it starts (`file:line`), its language, its words and its text.
struct Fence {
    at: String,
    lang: String,
    words: Vec<String>,
    text: String,
}

impl Fence {
    fn kind(&self) -> Option<&str> {
        let kinds: Vec<&str> = self.words.iter().map(String::as_str).filter(|w| KINDS.contains(w)).collect();
        if let [one] = kinds[..] { Some(one) } else { None }
    }

    fn file(&self) -> Option<&str> {
        self.words.iter().find_map(|w| w.strip_prefix("file="))
    }
}

fn fences(path: &Path) -> Vec<Fence> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path.strip_prefix(root()).unwrap_or(path).display().to_string();
    let mut found = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let Some(info) = line.strip_prefix("```").filter(|info| !info.trim().is_empty()) else { continue };
        let mut words = info.split_whitespace().map(str::to_owned);
        let lang = words.next().unwrap_or_default();
        let body: Vec<&str> = lines.by_ref().map(|(_, l)| l).take_while(|l| !l.starts_with("```")).collect();
        found.push(Fence {
            at: format!("{name}:{}", i + 1),
            lang,
            words: words.collect(),
            text: body.join("\n") + "\n",
        });
    }
    found
}

fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

#[test]
fn every_example_says_what_it_is() {
    let mut wrong = Vec::new();
    for doc in documents() {
        for f in fences(&doc).into_iter().filter(|f| EXAMPLES.contains(&f.lang.as_str())) {
            if f.kind().is_none() {
                wrong.push(format!("{}: ```{} needs one of {KINDS:?}", f.at, f.lang));
            }
        }
    }
    assert!(wrong.is_empty(), "fences that do not say what they are:\n{}", wrong.join("\n"));
}

/// The interpreter the Python examples run with, where the test environment has one.
fn python() -> Option<PathBuf> {
    ["target/python-torch/bin/python", "target/python/bin/python"].iter().map(|p| root().join(p)).find(|p| p.exists())
}

/// The install tree the examples' `/opt/hipfile` stands for, built once per test process.
fn install_tree(scratch: &Path) -> PathBuf {
    let prefix = scratch.join("prefix");
    let out = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["dist", prefix.to_str().unwrap(), "--debug"])
        .current_dir(root())
        .env("CARGO_TARGET_DIR", root().join("target/dist-test"))
        .output()
        .unwrap();
    assert!(out.status.success(), "cargo xtask dist: {}", String::from_utf8_lossy(&out.stderr));
    prefix
}

/// The text of an example as this machine runs it (see the module docs).
fn as_here(text: &str, prefix: &Path) -> String {
    text.replace("/opt/hipfile", prefix.to_str().unwrap()).replace("../hipfile-rs", root().to_str().unwrap())
}

#[test]
fn the_examples_that_run_without_a_gpu_run_as_written() {
    // Outside the checkout, as a reader's project is (cargo would take one inside for a member
    // of this workspace).
    let scratch = std::env::temp_dir().join(format!("hipfile-docs-examples-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let prefix = install_tree(&scratch);
    let python = python();
    if python.is_none() {
        assert!(std::env::var_os("CI").is_none(), "CI has the package's Python environments (cargo xtask ci)");
        eprintln!("no target/python: the Python examples are skipped (cargo xtask ci makes it)");
    }
    let path = format!("{}:{}", prefix.join("bin").display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for doc in documents() {
        let dir = scratch.join(doc.file_stem().unwrap());
        std::fs::create_dir_all(&dir).unwrap();
        // A Rust example resolves its dependencies as the workspace did.
        std::fs::copy(root().join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
        let fences = fences(&doc);
        for f in &fences {
            if let Some(name) = f.file() {
                let file = dir.join(name);
                std::fs::create_dir_all(file.parent().unwrap()).unwrap();
                std::fs::write(&file, as_here(&f.text, &prefix)).unwrap();
            }
        }
        for f in fences.iter().filter(|f| f.kind() == Some("mock") && f.file().is_none()) {
            let text = as_here(&f.text, &prefix);
            let mut cmd = match f.lang.as_str() {
                "sh" => {
                    let mut cmd = Command::new("bash");
                    cmd.args(["-e", "-o", "pipefail", "-c", &text]);
                    cmd
                }
                "python" => {
                    let Some(python) = &python else { continue };
                    let mut cmd = Command::new(python);
                    cmd.args(["-c", &text]);
                    cmd
                }
                other => panic!("{}: a `mock` fence of {other} runs through a `file=` and a shell fence", f.at),
            };
            for (key, _) in std::env::vars().filter(|(k, _)| k.starts_with("HIPFILE_")) {
                cmd.env_remove(key);
            }
            let out = cmd
                .current_dir(&dir)
                .env("PATH", &path)
                .env("CARGO_TARGET_DIR", root().join("target/doc-examples"))
                .env_remove("LD_LIBRARY_PATH")
                .output()
                .unwrap();
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            assert!(
                out.status.success(),
                "{} failed ({})\n{text}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
                f.at,
                out.status
            );
            eprintln!("ran {}", f.at);
            ran += 1;
        }
    }
    assert!(ran >= 5, "only {ran} examples ran");
    std::fs::remove_dir_all(&scratch).unwrap();
}
