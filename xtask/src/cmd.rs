//! Running commands from the workspace root, and installing what they need.

use std::process::Command;
use std::time::Instant;

/// Runs a command from the workspace root, echoing it; fails if it fails.
pub(crate) fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), String> {
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

/// Whether a command runs and succeeds.
pub(crate) fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program).args(args).output().is_ok_and(|o| o.status.success())
}

/// The workspace's root directory: the checkout `cargo xtask` runs in, as cargo tells the
/// program when it runs it, else the one it was built in. (Cargo keys a workspace's build by
/// paths relative to its root, so two checkouts sharing a target directory share this binary:
/// the path it was compiled with may be the other checkout's.)
pub(crate) fn workspace_root() -> std::path::PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR").map(std::path::PathBuf::from);
    let manifest_dir = manifest_dir.unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").into());
    manifest_dir.parent().expect("xtask lives in the workspace").to_path_buf()
}

/// Installs Debian packages (as root; otherwise says what to install).
pub(crate) fn install_debian(missing: &[&str]) -> Result<(), String> {
    if missing.is_empty() {
        return Ok(());
    }
    let root = Command::new("id").arg("-u").output().is_ok_and(|o| o.stdout.trim_ascii() == b"0");
    if !root {
        return Err(format!("missing packages; run as root: apt-get install -y {}", missing.join(" ")));
    }
    let env = [("DEBIAN_FRONTEND", "noninteractive")];
    run("apt-get", &["update", "-q"], &env)?;
    let mut args = vec!["install", "-y", "-q", "--no-install-recommends"];
    args.extend(missing);
    run("apt-get", &args, &env)
}
