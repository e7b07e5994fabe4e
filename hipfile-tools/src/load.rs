//! `hipfile load PATH...`: safetensors files (or checkpoint directories, or objects of a store
//! by URL: through the node cache where one is configured, else straight from the store by
//! ranges in parallel, docs/remote.md) into GPU memory, each
//! file's data area in one allocation, files read in parallel; reports GB/s. Headers are
//! checked first (hipfile-safetensors), so a lying file is refused before a byte moves.
//! `--verify` compares every tensor's bytes in GPU memory with the file's, as the safetensors
//! package reads them (its loader maps the file and takes each tensor's range).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use hipfile::{DeviceMemory, DeviceSpan, DriverGuard, GpuRuntime};
use hipfile_remote::{Dest, RemoteObject, Staging};
use hipfile_safetensors::Header;
use serde_json::{Value, json};

use crate::args::LoadArgs;
use crate::bench::device_memory;
use crate::moved::Moved;

/// Bytes per read call: the progress bar moves between them.
const STEP: u64 = 1 << 30;

/// The data area starts at this offset of its allocation modulo [`ALIGN`] as in the file, so
/// that the file's aligned pieces land on aligned device memory (the header's length rarely
/// leaves the data aligned).
const ALIGN: u64 = 4096;

fn pad(header: &Header) -> u64 {
    header.data_start % ALIGN
}

/// What a load did.
pub(crate) struct Loaded {
    pub(crate) files: usize,
    pub(crate) tensors: usize,
    pub(crate) moved: Moved,
    pub(crate) verified: Option<usize>,
    pub(crate) device: i32,
}

impl Loaded {
    pub(crate) fn json(&self) -> Value {
        json!({
            "files": self.files,
            "tensors": self.tensors,
            "bytes": self.moved.bytes,
            "seconds": self.moved.seconds,
            "gbps": self.moved.gbps(),
            "verified_tensors": self.verified,
            "device": self.device,
            "platform": self.moved.platform,
        })
    }
}

/// Opens `path` with `O_DIRECT` where the file system allows it (as hipFile's users do), else
/// buffered.
fn open(path: &Path) -> Result<File, String> {
    let direct = OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(path);
    direct.or_else(|_| File::open(path)).map_err(|e| format!("{}: {e}", path.display()))
}

pub(crate) fn run(args: &LoadArgs) -> Result<Loaded, String> {
    let mut opened = Vec::new();
    for path in &args.paths {
        if crate::remote::is_url(path) {
            for url in remote_files(&path.to_string_lossy())? {
                opened.push(Checkpoint::remote(&url)?);
            }
            continue;
        }
        let checkpoint = hipfile_safetensors::checkpoint(path).map_err(|e| match e {
            hipfile_safetensors::Error::Io(io) => format!("{}: {io}", path.display()),
            other => other.to_string(), // names its file
        })?;
        for file in checkpoint.files {
            opened.push(Checkpoint::local(file)?);
        }
    }
    let mock_devices = args.device.unwrap_or(0) + 1;
    let crate::open::Opened { description, guard, gpu } =
        crate::open::open_driver(args.backend.name.as_deref(), mock_devices, args.json)?;
    let device = match args.device {
        Some(d) => d,
        None => gpu.current_device().map_err(|e| format!("current device: {e}"))?,
    };
    gpu.set_device(device).map_err(|e| format!("device {device}: {e}"))?;
    let total: u64 = opened.iter().map(|c| c.header.data_len).sum();
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    // Allocated before the clock starts, as a loader's caller would have its memory.
    let staging = Staging::new(std::sync::Arc::clone(&gpu), hipfile_remote::Settings::from_env());
    let buffers = opened
        .iter()
        .map(|c| device_memory(&gpu, device, (pad(&c.header) + c.header.data_len).max(1) as usize))
        .collect::<Result<Vec<_>, _>>()?;
    let start = Instant::now();
    let loaded = std::thread::scope(|scope| {
        if !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let (done, stop) = (&done, &stop);
            scope.spawn(move || crate::progress::progress_line(done, stop, total, "load", hipfile::Direction::Read));
        }
        let workers: Vec<_> = opened
            .iter()
            .zip(&buffers)
            .map(|(c, memory)| {
                let (guard, gpu, done, staging) = (&guard, &gpu, &done, &staging);
                scope.spawn(move || load_one(guard, &**gpu, device, c, memory, done, staging))
            })
            .collect();
        let results: Vec<Result<(), String>> =
            workers.into_iter().map(|w| w.join().unwrap_or_else(|_| Err("a loading thread panicked".into()))).collect();
        stop.store(true, Ordering::Relaxed);
        results.into_iter().collect::<Result<(), String>>()
    });
    let seconds = start.elapsed().as_secs_f64();
    loaded?;
    let verified = if args.verify {
        let mut n = 0;
        for (c, memory) in opened.iter().zip(&buffers) {
            n += verify(c, memory)?;
        }
        Some(n)
    } else {
        None
    };
    Ok(Loaded {
        files: opened.len(),
        tensors: opened.iter().map(|c| c.header.tensors.len()).sum(),
        moved: Moved { bytes: total, seconds, platform: description },
        verified,
        device,
    })
}

/// A checkpoint file to load, and its checked header.
struct Checkpoint {
    path: PathBuf,
    source: Source,
    header: Header,
}

/// Where a checkpoint file's bytes come from.
enum Source {
    /// A local file (or the node cache's copy of an object), opened twice: plainly for its
    /// header and `--verify`'s reads (`O_DIRECT` reads need aligned buffers), and for the
    /// driver ([`open`]).
    Local { plain: File, file: File },
    /// An object of a store, read by ranges in parallel through pinned staging.
    Remote(RemoteObject),
}

impl Checkpoint {
    fn local(path: PathBuf) -> Result<Checkpoint, String> {
        let plain = File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let header = Header::read(&plain).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = open(&path)?;
        Ok(Checkpoint { path, source: Source::Local { plain, file }, header })
    }

    /// The object at `url`: the node cache's copy where `HIPFILE_REMOTE_CACHE` names a cache
    /// that can hold it, else the store itself.
    fn remote(url: &str) -> Result<Checkpoint, String> {
        let object = RemoteObject::open(url).map_err(|e| e.to_string())?;
        if let Some(cache) = hipfile_remote::Cache::from_env() {
            match cache.get(&object) {
                Ok((path, served)) => {
                    tracing::debug!("{url}: from the node cache ({}, {served:?})", path.display());
                    return Checkpoint::local(path);
                }
                Err(e) if e.kind() == hipfile_remote::ErrorKind::Cache => {
                    tracing::warn!("{e}: the store serves it");
                }
                Err(e) => return Err(e.to_string()),
            }
        }
        let header = Header::read_at(object.size(), |at, buf| Ok(object.read(at, buf)?)).map_err(|e| match e {
            hipfile_safetensors::Error::Io(io) => io.to_string(), // names the URL
            other => format!("{url}: {other}"),
        })?;
        Ok(Checkpoint { path: PathBuf::from(url), source: Source::Remote(object), header })
    }
}

/// The safetensors objects a URL names: itself, or a prefix's (`s3://bucket/model/`, every
/// `*.safetensors` directly under it).
fn remote_files(url: &str) -> Result<Vec<String>, String> {
    if !url.ends_with('/') {
        return Ok(vec![url.to_owned()]);
    }
    let listed = hipfile_remote::list(url).map_err(|e| e.to_string())?;
    let files: Vec<String> = listed
        .into_iter()
        .map(|(u, _)| u)
        .filter(|u| u.ends_with(".safetensors") && !u[url.len()..].contains('/'))
        .collect();
    if files.is_empty() {
        return Err(format!("{url}: no .safetensors objects"));
    }
    Ok(files)
}

/// One file's data area into `memory` (from [`pad`]), [`STEP`] bytes per call.
fn load_one(
    guard: &DriverGuard<hipfile::SystemPlatform>,
    gpu: &dyn GpuRuntime,
    device: i32,
    checkpoint: &Checkpoint,
    memory: &DeviceMemory,
    done: &AtomicU64,
    staging: &Staging,
) -> Result<(), String> {
    let Checkpoint { path, source, header } = checkpoint;
    let shown = |e: hipfile::Error| format!("{}: {e}", path.display());
    gpu.set_device(device).map_err(|e| format!("device {device}: {e}"))?;
    let file = match source {
        Source::Local { file, .. } => file,
        Source::Remote(object) => {
            let mut at = 0u64;
            while at < header.data_len {
                let want = (header.data_len - at).min(STEP) as usize;
                let from = (pad(header) + at) as usize;
                // SAFETY: `[from, from + want)` lies inside `memory` (allocated for the pad
                // and the data area), which outlives the read.
                let span = unsafe { DeviceSpan::within(memory.addr() + from, want, memory.addr() + memory.len()) };
                let got = object.read_into(Some(staging), vec![(header.data_start + at, Dest::Device(span))]);
                let n = got.map_err(|e| e.to_string())?[0];
                if n < want {
                    return Err(format!(
                        "{}: the object ended {} bytes early",
                        path.display(),
                        header.data_len - at - n as u64
                    ));
                }
                at += n as u64;
                done.fetch_add(n as u64, Ordering::Relaxed);
            }
            return Ok(());
        }
    };
    let registered = guard.register_file(file).map_err(shown)?;
    let buffer = guard.register_memory(memory).map_err(shown)?;
    let mut at = 0u64;
    while at < header.data_len {
        let want = (header.data_len - at).min(STEP) as usize;
        let n = registered.read(&buffer, want, header.data_start + at, pad(header) + at).map_err(shown)?;
        if n == 0 {
            return Err(format!("{}: the file ended {} bytes early", path.display(), header.data_len - at));
        }
        at += n as u64;
        done.fetch_add(n as u64, Ordering::Relaxed);
    }
    Ok(())
}

/// Compares each tensor in `memory` with the file's bytes; the number compared.
fn verify(checkpoint: &Checkpoint, memory: &DeviceMemory) -> Result<usize, String> {
    let Checkpoint { path, source, header } = checkpoint;
    for t in &header.tensors {
        let len = t.len() as usize;
        let mut on_gpu = vec![0u8; len];
        if len > 0 {
            memory
                .copy_to_host((pad(header) + t.begin) as usize, &mut on_gpu)
                .map_err(|e| format!("{}: copying {:?} back: {e}", path.display(), t.name))?;
        }
        let mut in_file = vec![0u8; len];
        match source {
            Source::Local { plain, .. } => {
                std::os::unix::fs::FileExt::read_exact_at(plain, &mut in_file, header.data_start + t.begin)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            Source::Remote(object) => {
                object.read(header.data_start + t.begin, &mut in_file).map_err(|e| e.to_string())?;
            }
        }
        if on_gpu != in_file {
            return Err(format!("{}: tensor {:?} differs in GPU memory from the file", path.display(), t.name));
        }
    }
    Ok(header.tensors.len())
}
