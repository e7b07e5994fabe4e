//! The tool's remote sources (docs/remote.md): `hipfile cp` between a URL and a file, and
//! `hipfile cache` (the node cache's entries, and clearing it).

use std::path::Path;
use std::time::Instant;

use hipfile_remote::{Cache, RemoteObject};
use serde_json::{Value, json};

use crate::args::{CacheArgs, CacheCommand, CpArgs};
use crate::cp::Copied;
use crate::moved::Moved;

/// Whether a path argument names a remote object.
pub(crate) fn is_url(path: &Path) -> bool {
    path.to_str().is_some_and(hipfile_remote::is_url)
}

/// `hipfile cp`: [`cp`] where SRC or DST is a URL, else `local`.
pub(crate) fn cp_or(args: &CpArgs, local: fn(&CpArgs) -> Result<Copied, String>) -> Result<Copied, String> {
    if is_url(&args.src) || is_url(&args.dst) { cp(args) } else { local(args) }
}

/// `hipfile cp` where SRC or DST is a URL: object to file (written beside DST under a temporary
/// name, renamed once whole) or file to object (a multipart upload, which appears once whole),
/// each by parts in parallel; `--verify` reads the copy back and compares.
pub(crate) fn cp(args: &CpArgs) -> Result<Copied, String> {
    let (src, dst) = (args.src.to_string_lossy(), args.dst.to_string_lossy());
    let start = Instant::now();
    let size = match (is_url(&args.src), is_url(&args.dst)) {
        (true, true) => return Err("hipfile cp copies between a URL and a file, not between two URLs".into()),
        (true, false) => {
            if args.dst.exists() && !args.force {
                return Err(format!("{dst} exists (--force replaces it)"));
            }
            hipfile_remote::download(&src, &args.dst).map_err(|e| e.to_string())?
        }
        _ => {
            if !args.src.is_file() {
                return Err(format!("{src}: not a regular file"));
            }
            hipfile_remote::upload(&args.src, &dst).map_err(|e| e.to_string())?
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let (url, file) = if is_url(&args.src) { (&*src, &args.dst) } else { (&*dst, &args.src) };
    let verified = if args.verify { Some(same(url, file)?) } else { None };
    if verified == Some(false) {
        return Err(format!("{url} and {} differ", file.display()));
    }
    Ok(Copied {
        size,
        moved: Moved { bytes: size, seconds, platform: "object store (host memory)".into() },
        verified,
        backends: vec!["remote".into()],
    })
}

/// Whether the object at `url` holds the bytes of `file`, compared a part at a time.
fn same(url: &str, file: &Path) -> Result<bool, String> {
    let object = RemoteObject::open(url).map_err(|e| e.to_string())?;
    let local = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let size = local.metadata().map_err(|e| format!("{}: {e}", file.display()))?.len();
    if size != object.size() {
        return Ok(false);
    }
    let step = 64 << 20;
    let (mut remote, mut here) = (vec![0u8; step], vec![0u8; step]);
    let mut at = 0;
    while at < size {
        let n = (size - at).min(step as u64) as usize;
        object.read(at, &mut remote[..n]).map_err(|e| e.to_string())?;
        std::os::unix::fs::FileExt::read_exact_at(&local, &mut here[..n], at)
            .map_err(|e| format!("{}: {e}", file.display()))?;
        if remote[..n] != here[..n] {
            return Ok(false);
        }
        at += n as u64;
    }
    Ok(true)
}

/// `hipfile cache [list|clear] [--dir DIR]`: the report, as JSON.
pub(crate) fn cache(args: &CacheArgs) -> Result<Value, String> {
    let cache = match &args.dir {
        Some(dir) => Cache::new(dir),
        None => Cache::from_env().ok_or("no cache: give --dir DIR or set HIPFILE_REMOTE_CACHE")?,
    };
    let dir = cache.dir().display().to_string();
    match args.command.unwrap_or(CacheCommand::List) {
        CacheCommand::List => {
            let entries: Vec<Value> = cache
                .entries()
                .into_iter()
                .map(|e| {
                    let used = e.last_used.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
                    json!({
                        "url": e.url,
                        "bytes": e.version.size,
                        "etag": e.version.etag,
                        "last_modified": e.version.last_modified,
                        "last_used_unix": used,
                        "path": e.path,
                    })
                })
                .collect();
            let bytes: u64 = entries.iter().filter_map(|e| e["bytes"].as_u64()).sum();
            Ok(json!({"dir": dir, "entries": entries, "bytes": bytes}))
        }
        CacheCommand::Clear => {
            let (n, bytes) = cache.clear().map_err(|e| format!("{dir}: {e}"))?;
            Ok(json!({"dir": dir, "removed": n, "bytes": bytes}))
        }
    }
}

/// The report of [`cache`]: as JSON, or as lines.
pub(crate) fn print_cache(report: &Value, as_json: bool) {
    if as_json {
        outln!("{report}");
        return;
    }
    let dir = report["dir"].as_str().unwrap_or("");
    if let Some(removed) = report["removed"].as_u64() {
        outln!("{dir}: removed {removed} entries ({} bytes)", report["bytes"]);
        return;
    }
    let entries = report["entries"].as_array().map(Vec::as_slice).unwrap_or_default();
    outln!("{dir}: {} entries, {} bytes (least recently used first)", entries.len(), report["bytes"]);
    for e in entries {
        outln!("  {:>14}  {}", e["bytes"], e["url"].as_str().unwrap_or(""));
    }
}

/// `hipfile bench --file URL`: reads of the object into GPU memory straight from the store,
/// `--runs` times per mode (`read`: the whole object in one call; `randread`: `--count` reads
/// of `--io-size` at random offsets, at once), each verified against a host read of the same
/// bytes unless `--no-verify`; the report as JSON.
pub(crate) fn bench(args: &crate::args::BenchArgs) -> Result<Value, String> {
    use hipfile_remote::{Dest, Settings, Staging};

    let url = args.file.as_deref().map(Path::to_string_lossy).unwrap_or_default().into_owned();
    let object = RemoteObject::open(&url).map_err(|e| e.to_string())?;
    let size = usize::try_from(object.size()).map_err(|_| format!("{url}: too large"))?;
    let crate::open::Opened { description, guard, gpu } =
        crate::open::open_driver(args.backend.name.as_deref(), 1, args.json)?;
    let settings = Settings::from_env();
    let staging = Staging::new(std::sync::Arc::clone(&gpu), settings);
    let memory = guard.device_alloc(size.max(1)).map_err(|e| format!("cannot allocate {size} bytes: {e}"))?;
    let mut modes = Vec::new();
    for mode in &args.modes {
        if !mode.is_read() {
            return Err(format!("--mode {}: an object is read, not written, by the benchmark", mode.name()));
        }
        let io = args.io_size.map_or(if mode.is_random() { 1 << 20 } else { size }, |s| s as usize).min(size);
        let mut rng = 0x9e37_79b9_7f4a_7c15_u64;
        let mut runs = Vec::new();
        let mut verified = None;
        for _ in 0..args.runs {
            let offsets: Vec<usize> = if mode.is_random() {
                (0..args.count)
                    .map(|_| {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        (rng % (size - io + 1) as u64) as usize
                    })
                    .collect()
            } else {
                (0..size).step_by(io.max(1)).collect()
            };
            let reqs = offsets
                .iter()
                .enumerate()
                .map(|(i, &at)| {
                    let len = io.min(size - at);
                    let place = if mode.is_random() { (i * io) % (size - len + 1) } else { at };
                    // SAFETY: `[place, place + len)` lies inside `memory` (size bytes), which
                    // outlives the read.
                    let span = unsafe {
                        hipfile::DeviceSpan::within(memory.addr() + place, len, memory.addr() + memory.len())
                    };
                    (at as u64, Dest::Device(span))
                })
                .collect();
            let start = Instant::now();
            let got = object.read_into(Some(&staging), reqs).map_err(|e| e.to_string())?;
            let seconds = start.elapsed().as_secs_f64();
            let bytes: usize = got.iter().sum();
            runs.push(Moved { bytes: bytes as u64, seconds, platform: description.clone() }.gbps());
            if args.verify && !mode.is_random() {
                let (mut here, mut there) = (vec![0u8; size.min(64 << 20)], vec![0u8; size.min(64 << 20)]);
                let mut ok = true;
                for at in (0..size).step_by(here.len().max(1)) {
                    let n = here.len().min(size - at);
                    memory.copy_to_host(at, &mut here[..n]).map_err(|e| format!("copying back: {e}"))?;
                    object.read(at as u64, &mut there[..n]).map_err(|e| e.to_string())?;
                    ok &= here[..n] == there[..n];
                }
                verified = Some(ok);
                if !ok {
                    return Err(format!("{url}: GPU memory differs from the object after a read"));
                }
            }
        }
        let best = runs.iter().copied().fold(0.0, f64::max);
        let mean = runs.iter().sum::<f64>() / runs.len() as f64;
        modes.push(json!({"mode": mode.name(), "io_size": io, "runs_gbps": runs, "best_gbps": best, "mean_gbps": mean, "verified": verified}));
    }
    Ok(json!({
        "url": url,
        "bytes": size,
        "platform": description,
        "part_size": settings.part_size,
        "connections": settings.connections,
        "modes": modes,
    }))
}

/// The report of [`bench`]: as JSON, or as lines.
pub(crate) fn print_bench(report: &Value, as_json: bool) {
    if as_json {
        outln!("{report}");
        return;
    }
    outln!(
        "{} ({} bytes) on {}: {} connections x {} byte parts",
        report["url"].as_str().unwrap_or(""),
        report["bytes"],
        report["platform"].as_str().unwrap_or(""),
        report["connections"],
        report["part_size"]
    );
    for m in report["modes"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let verified = if m["verified"] == true { ", verified" } else { "" };
        outln!(
            "  {:<9} best {:.2} GB/s, mean {:.2} GB/s{verified}",
            m["mode"].as_str().unwrap_or(""),
            m["best_gbps"].as_f64().unwrap_or(0.0),
            m["mean_gbps"].as_f64().unwrap_or(0.0)
        );
    }
}
