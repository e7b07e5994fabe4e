//! `hipfile check [PATH...]`: what this machine can do (the GPU runtime and its devices, the
//! kernel's P2PDMA, the GPUDirect module, AMD's AIS, each backend and why not), and for each
//! path its file system, `O_DIRECT`, direct-I/O alignment, and whether the p2p path would
//! serve it. Read-only: it writes no file (the tool sends cuFile's log to /dev/null).

use std::io::{BufRead, Read};
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hipfile::Words;
use hipfile::{BackendKind, DriverGuard, SystemPlatform};
use serde_json::{Value, json};

use crate::args::CheckArgs;

/// The report, and whether every path can be served by the backend asked for.
pub(crate) fn run(args: &CheckArgs) -> Result<(Value, bool), String> {
    let (platform, why_mock) = crate::open::platform(args.backend.name.as_deref(), 1);
    let runtime = json!({
        "found": why_mock.is_none(),
        "description": platform.description(),
        "why_mock": why_mock,
    });
    let gpu = Arc::clone(platform.runtime());
    let count = gpu.device_count().unwrap_or(0);
    let devices: Vec<Value> = (0..count).map(|d| json!({"device": d, "pci_bus_id": gpu.pci_bus_id(d).ok()})).collect();
    let driver = crate::open::driver(platform, args.backend.name.clone());
    let capabilities = driver.capabilities().map_err(|e| e.to_string())?;
    let backends: Vec<Value> = capabilities
        .iter()
        .map(|c| {
            json!({
                "backend": c.backend,
                "p2p": c.kind == BackendKind::P2p,
                "available": c.available.is_ok(),
                "why_not": c.available.as_ref().err(),
                "notes": c.notes,
            })
        })
        .collect();
    let p2p_available = capabilities.iter().any(|c| c.kind == BackendKind::P2p && c.available.is_ok());
    let bounce_available = capabilities.iter().any(|c| c.kind == BackendKind::Bounce && c.available.is_ok());
    // Only a p2p backend's verdict on a file needs the driver open (and its staging made).
    let guard = if p2p_available { DriverGuard::open(Arc::clone(&driver)).ok() } else { None };
    let want = args.backend.name.as_deref().unwrap_or("auto");
    let mut all_served = match want {
        "p2p" => p2p_available,
        "bounce" => bounce_available,
        _ => p2p_available || bounce_available,
    };
    // The page-cache policy (semantics §16) as the library's next open would apply it.
    let policy = hipfile::Config::from_env().unwrap_or_default().cache_policy();
    let page_cache = json!({
        "setting": policy.mode().word(),
        "auto_limit_bytes": policy.limit(),
        "mem_available_bytes": hipfile::cache::mem_available(),
    });
    let mut paths = Vec::new();
    for path in &args.paths {
        let (mut report, served) = check_path(path, guard.as_ref(), want, bounce_available);
        if report["type"] == json!("file") || report["type"] == json!("block device") {
            report["page_cache"] = json!(page_cache_rule(path, &policy));
        }
        all_served &= served;
        paths.push(report);
    }
    let report = json!({
        "runtime": runtime,
        "devices": devices,
        "kernel": kernel(),
        "cufile": cufile(args.pid)?,
        "backends": backends,
        "backend_asked": want,
        "page_cache": page_cache,
        "paths": paths,
        "served": all_served,
    });
    Ok((report, all_served))
}

/// The `libcufile.so.0` a program started from here (with no search path of its own) would
/// load, found as the dynamic loader searches: `LD_LIBRARY_PATH`, its cache (`ldconfig -p`),
/// then the default directories; and whether it is hipfile-rs's (docs/cufile.md). With `pid`,
/// also the cuFile libraries that process has mapped.
fn cufile(pid: Option<u32>) -> Result<Value, String> {
    const NAME: &str = "libcufile.so.0";
    let from_env = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let listed = from_env.split(':').filter(|d| !d.is_empty()).map(|d| (Path::new(d).join(NAME), "LD_LIBRARY_PATH"));
    let cache = std::process::Command::new("ldconfig").arg("-p").output().map(|o| o.stdout).unwrap_or_default();
    let cached = String::from_utf8_lossy(&cache)
        .lines()
        .filter(|l| l.trim_start().starts_with(&format!("{NAME} ")))
        .filter_map(|l| l.rsplit_once("=> ").map(|(_, path)| (Path::new(path.trim()).to_path_buf(), "ld.so.cache")))
        .collect::<Vec<_>>();
    let defaults = ["/lib64", "/usr/lib64", "/lib", "/usr/lib"].map(|d| (Path::new(d).join(NAME), "default directory"));
    let found = listed.chain(cached).chain(defaults).find(|(path, _)| path.is_file());
    let mut report = match found {
        None => json!({"path": null, "found_by": null, "hipfile_rs": false}),
        Some((path, how)) => json!({"path": path, "found_by": how, "hipfile_rs": is_ours(&path)}),
    };
    if let Some(pid) = pid {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).map_err(|e| format!("process {pid}: {e}"))?;
        let mut loaded: Vec<&str> = Vec::new();
        for file in maps.lines().filter_map(|l| l.split_whitespace().nth(5)) {
            // NVIDIA's names, and hipfile-rs's as built (`libhipfile_cufile.so`, where a link
            // named libcufile.so.0 pointed at it).
            let name = Path::new(file).file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let cufile = name.starts_with("libcufile.so") || name.starts_with("libhipfile_cufile.so");
            if cufile && !loaded.contains(&file) {
                loaded.push(file);
            }
        }
        let loaded: Vec<Value> =
            loaded.iter().map(|f| json!({"path": f, "hipfile_rs": is_ours(Path::new(f))})).collect();
        report["process"] = json!({"pid": pid, "loaded": loaded});
    }
    Ok(report)
}

/// Whether the library at `path` is hipfile-rs's `libcufile.so.0`: it names the hooks it looks
/// up in libhipfile.so.0.
fn is_ours(path: &Path) -> bool {
    const HOOK: &[u8] = hipfile_abi::hooks::STATS_LEVEL.to_bytes();
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(HOOK.len()).any(|w| w == HOOK))
}

/// The kernel's side: P2PDMA in its configuration, the GPUDirect Storage module, AMD's AIS.
fn kernel() -> Value {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default().trim().to_owned();
    let (p2pdma, source) = p2pdma(&release);
    let modules = std::fs::read_to_string("/proc/modules").unwrap_or_default();
    let loaded = |m: &str| modules.lines().any(|l| l.split(' ').next() == Some(m));
    json!({
        "release": release,
        "pci_p2pdma": p2pdma,
        "pci_p2pdma_source": source,
        "nvidia_fs_module": loaded("nvidia_fs"),
        "amdgpu_module": loaded("amdgpu"),
        // AIS lives in amdgpu: the kernel's symbols (megabytes) are read only where it is loaded.
        "amdgpu_ais": loaded("amdgpu") && kallsyms_has("kfd_ais_rw_file"),
    })
}

/// `CONFIG_PCI_P2PDMA` (`y`, `m`, `n`, or `unknown`) and where it was read.
fn p2pdma(release: &str) -> (String, String) {
    let candidates = [format!("/boot/config-{release}"), format!("/lib/modules/{release}/build/.config")];
    for path in &candidates {
        if let Ok(text) = std::fs::read_to_string(path) {
            return (config_value(&text, "CONFIG_PCI_P2PDMA"), path.clone());
        }
    }
    // /proc/config.gz: compressed; `zcat` reads it where it exists.
    if Path::new("/proc/config.gz").exists()
        && let Ok(out) = std::process::Command::new("zcat").arg("/proc/config.gz").output()
        && out.status.success()
    {
        return (config_value(&String::from_utf8_lossy(&out.stdout), "CONFIG_PCI_P2PDMA"), "/proc/config.gz".into());
    }
    ("unknown".into(), "no kernel configuration found".into())
}

fn config_value(text: &str, key: &str) -> String {
    for line in text.lines() {
        if let Some(value) = line.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')) {
            return value.trim().to_owned();
        }
        if line.starts_with("# ") && line.contains(key) && line.ends_with("is not set") {
            return "n".into();
        }
    }
    "n".into()
}

/// Whether the kernel has `symbol` (AMD's AIS entry point in amdgpu).
fn kallsyms_has(symbol: &str) -> bool {
    let Ok(file) = std::fs::File::open("/proc/kallsyms") else { return false };
    std::io::BufReader::new(file).lines().map_while(|l| l.ok()).any(|l| l.split_whitespace().nth(2) == Some(symbol))
}

/// One path: what it is, its file system, `O_DIRECT`, alignment, and the p2p path's verdict;
/// and whether the backend asked for would serve it.
fn check_path(
    path: &Path,
    guard: Option<&DriverGuard<SystemPlatform>>,
    want: &str,
    bounce_available: bool,
) -> (Value, bool) {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) => return (json!({"path": path, "error": e.to_string()}), false),
    };
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (fs, mount) = file_system(&canonical);
    let kind = if meta.is_dir() {
        "directory"
    } else if meta.file_type().is_block_device() {
        "block device"
    } else if meta.is_file() {
        "file"
    } else {
        "other"
    };
    let mut report = json!({"path": path, "type": kind, "file_system": fs, "mount_point": mount});
    if kind == "directory" || kind == "other" {
        report["p2p"] = json!({"served": null, "why_not": "checked per file: give a file of this file system"});
        return (report, want != "p2p" && kind == "directory");
    }
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            report["error"] = json!(e.to_string());
            return (report, false);
        }
    };
    report["o_direct"] = json!(o_direct(path));
    let (mem, offset) = dio_align(&file);
    report["dio_mem_align"] = json!(mem);
    report["dio_offset_align"] = json!(offset);
    let Some(guard) = guard else {
        report["p2p"] = json!({"served": false, "why_not": "no p2p backend is available (see backends)"});
        return (report, want != "p2p" && bounce_available);
    };
    let verdicts = match guard.register_file(&file) {
        Ok(registered) => guard.driver().p2p_verdict(registered.id()).unwrap_or_default(),
        Err(e) => {
            report["error"] = json!(format!("cannot register: {e}"));
            return (report, false);
        }
    };
    let p2p = verdicts.iter().any(|(_, v)| v.is_ok());
    let why: Vec<String> =
        verdicts.iter().filter_map(|(name, v)| v.as_ref().err().map(|why| format!("{name}: {why}"))).collect();
    let why_not = match (p2p, why.is_empty()) {
        (true, _) => None,
        (false, true) => Some("no p2p backend is open (see backends)".to_owned()),
        (false, false) => Some(why.join("; ")),
    };
    report["p2p"] = json!({"served": p2p, "why_not": why_not});
    let served = match want {
        "p2p" => p2p,
        _ => true, // registered: the bounce path serves what a direct one does not
    };
    (report, served)
}

/// The page-cache rule a whole read of `path` would follow under `policy`, in words.
fn page_cache_rule(path: &Path, policy: &hipfile::CachePolicy) -> String {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) => return format!("unknown: {e}"),
    };
    match hipfile::boundary::FileHandle::open(file.as_raw_fd()) {
        Ok(handle) => handle.cache_rule(policy, hipfile::Direction::Read, handle.size().unwrap_or(0)).to_string(),
        Err(e) => format!("unknown: {e}"),
    }
}

/// The file system type and mount point holding `path` (the longest mount point that is a
/// prefix of it, from /proc/self/mountinfo).
fn file_system(path: &Path) -> (String, String) {
    let mut best: Option<(PathBuf, String)> = None;
    let mut text = String::new();
    if let Ok(mut f) = std::fs::File::open("/proc/self/mountinfo") {
        let _ = f.read_to_string(&mut text);
    }
    for line in text.lines() {
        let fields: Vec<&str> = line.split(' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == "-") else { continue };
        let (Some(mount), Some(fstype)) = (fields.get(4), fields.get(sep + 1)) else { continue };
        let mount = PathBuf::from(mount.replace("\\040", " "));
        if path.starts_with(&mount) && best.as_ref().is_none_or(|(b, _)| mount.as_os_str().len() >= b.as_os_str().len())
        {
            best = Some((mount, (*fstype).to_owned()));
        }
    }
    best.map_or(("unknown".into(), "unknown".into()), |(m, t)| (t, m.display().to_string()))
}

/// Whether the file opens with `O_DIRECT` (`true`), or why not.
fn o_direct(path: &Path) -> Value {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path) {
        Ok(_) => json!(true),
        Err(e) => json!(format!("no: {e}")),
    }
}

/// `statx`'s direct-I/O alignment of memory and offsets (0: not reported).
fn dio_align(file: &std::fs::File) -> (u32, u32) {
    // SAFETY: statx is plain data; zeroes are valid.
    let mut stx: libc::statx = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, an empty C string with AT_EMPTY_PATH, a writable statx.
    let rc =
        unsafe { libc::statx(file.as_raw_fd(), c"".as_ptr(), libc::AT_EMPTY_PATH, libc::STATX_DIOALIGN, &mut stx) };
    if rc != 0 || stx.stx_mask & libc::STATX_DIOALIGN == 0 {
        return (0, 0);
    }
    (stx.stx_dio_mem_align, stx.stx_dio_offset_align)
}

/// The cuFile part of the report: what programs would load, and what a process has loaded.
fn print_cufile(c: &Value) {
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    match (c["path"].as_str(), c["hipfile_rs"] == json!(true)) {
        (None, _) => outln!("cuFile programs load: no libcufile.so.0 found"),
        (Some(path), true) => outln!("cuFile programs load: {path} (hipfile-rs's; found by {})", s(&c["found_by"])),
        (Some(path), false) => outln!(
            "cuFile programs load: {path} (not hipfile-rs's; found by {}): put hipfile-rs's lib/cufile first on \
             LD_LIBRARY_PATH to serve them",
            s(&c["found_by"])
        ),
    }
    if let Some(loaded) = c["process"]["loaded"].as_array() {
        let pid = &c["process"]["pid"];
        let whose = |l: &Value| if l["hipfile_rs"] == json!(true) { "hipfile-rs's" } else { "not hipfile-rs's" };
        let list: Vec<String> = loaded.iter().map(|l| format!("{} ({})", s(&l["path"]), whose(l))).collect();
        match list.len() {
            0 => outln!("process {pid} has loaded no cuFile library"),
            1 => outln!("process {pid} has loaded {}", list[0]),
            _ => outln!(
                "warning: process {pid} has loaded {} cuFile libraries: {}; clients reach either \
                 (in a Python environment, `python -m hipfile.cufile use` leaves one)",
                list.len(),
                list.join(", ")
            ),
        }
    }
}

/// The report for people.
pub(crate) fn print(report: &Value) {
    let s = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
    let runtime = &report["runtime"];
    outln!("GPU runtime: {}", s(&runtime["description"]));
    if let Some(why) = runtime["why_mock"].as_str() {
        outln!("  none found, so the mock GPU: {why}");
    }
    for d in report["devices"].as_array().into_iter().flatten() {
        outln!("  device {}: {}", d["device"], d["pci_bus_id"].as_str().unwrap_or("PCI address unknown"));
    }
    let k = &report["kernel"];
    outln!("kernel {}", s(&k["release"]));
    outln!("  CONFIG_PCI_P2PDMA: {} ({})", s(&k["pci_p2pdma"]), s(&k["pci_p2pdma_source"]));
    outln!("  GPUDirect Storage module (nvidia_fs): {}", yes(&k["nvidia_fs_module"]));
    outln!("  amdgpu: {}, AIS (kfd_ais_rw_file): {}", yes(&k["amdgpu_module"]), yes(&k["amdgpu_ais"]));
    print_cufile(&report["cufile"]);
    let pc = &report["page_cache"];
    let gib = |v: &Value| v.as_f64().map_or("unknown".to_owned(), |b| format!("{:.1} GiB", b / (1u64 << 30) as f64));
    outln!(
        "page cache: {} (HIPFILE_PAGE_CACHE); auto keeps files up to {} (MemAvailable {})",
        s(&pc["setting"]),
        gib(&pc["auto_limit_bytes"]),
        gib(&pc["mem_available_bytes"])
    );
    outln!("backends:");
    for b in report["backends"].as_array().into_iter().flatten() {
        let kind = if b["p2p"] == json!(true) { "p2p" } else { "bounce" };
        match b["why_not"].as_str() {
            None => outln!("  {} ({kind}): available", s(&b["backend"])),
            Some(why) => outln!("  {} ({kind}): unavailable: {why}", s(&b["backend"])),
        }
        for note in b["notes"].as_array().into_iter().flatten() {
            outln!("    {}", s(note));
        }
    }
    for p in report["paths"].as_array().into_iter().flatten() {
        outln!("{}:", s(&p["path"]));
        if let Some(e) = p["error"].as_str() {
            outln!("  {e}");
            continue;
        }
        outln!("  {} on {} (mounted at {})", s(&p["type"]), s(&p["file_system"]), s(&p["mount_point"]));
        if !p["o_direct"].is_null() {
            outln!("  O_DIRECT: {}", if p["o_direct"] == json!(true) { "yes".into() } else { s(&p["o_direct"]) });
            outln!(
                "  direct-I/O alignment: memory {}, offsets and sizes {}",
                p["dio_mem_align"],
                p["dio_offset_align"]
            );
        }
        if let Some(rule) = p["page_cache"].as_str() {
            outln!("  page cache: {rule}");
        }
        match (&p["p2p"]["served"], p["p2p"]["why_not"].as_str()) {
            (Value::Bool(true), _) => outln!("  p2p path: yes (requests aligned as above)"),
            (Value::Bool(false), Some(why)) => outln!("  p2p path: no: {why}"),
            (_, Some(why)) => outln!("  p2p path: {why}"),
            _ => {}
        }
    }
    let served = if report["served"] == json!(true) { "yes" } else { "no" };
    outln!("served by the backend asked for ({}): {served}", s(&report["backend_asked"]));
}

fn yes(v: &Value) -> &'static str {
    if *v == json!(true) { "yes" } else { "no" }
}
