//! Project automation. `cargo xtask ci` runs everything CI checks, installing what it needs
//! on a fresh Debian 12 machine that has only Rust.

use std::process::{Command, ExitCode};
use std::time::Instant;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("ci") => ci(),
        _ => {
            eprintln!("usage: cargo xtask ci    # fmt, clippy -D warnings, docs, nextest, doc tests");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command from the workspace root, echoing it; fails if it fails.
fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
    eprintln!("==> {program} {}", args.join(" "));
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .current_dir(workspace_root())
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    eprintln!("    ({:.0} s)", start.elapsed().as_secs_f64());
    if status.success() { Ok(()) } else { Err(format!("`{program} {}` failed ({status})", args.join(" "))) }
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

fn workspace_root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Installs the tools the checks use where they are missing.
fn install_tools() -> Result<(), String> {
    for (component, probe) in [("rustfmt", ["fmt", "--version"]), ("clippy", ["clippy", "--version"])] {
        if !succeeds("cargo", &probe) {
            run("rustup", &["component", "add", component], &[])?;
        }
    }
    if !succeeds("cargo", &["nextest", "--version"]) {
        run("cargo", &["install", "--locked", "cargo-nextest"], &[])?;
    }
    Ok(())
}

fn ci() -> Result<(), String> {
    install_tools()?;
    run("cargo", &["fmt", "--all", "--", "--check"], &[])?;
    run("cargo", &["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"], &[])?;
    run("cargo", &["doc", "--workspace", "--no-deps", "--locked"], &[("RUSTDOCFLAGS", "-D warnings")])?;
    run("cargo", &["test", "--workspace", "--doc", "--locked"], &[])?;
    run("cargo", &["nextest", "run", "--workspace", "--locked", "--no-fail-fast"], &[])
}
