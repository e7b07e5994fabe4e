//! `hipfile cp SRC DST`: copies a file through GPU memory, chunk by chunk, the read of a chunk
//! overlapping the write of the one before (two device buffers, a reading and a writing
//! thread). Holes of a sparse source stay holes (only its data extents are copied, found with
//! `SEEK_DATA`/`SEEK_HOLE`), and DST ends with SRC's size exactly.

use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Instant;

use hipfile::{DriverGuard, SystemPlatform};
use serde_json::{Value, json};

use crate::args::CpArgs;

/// What a copy did.
pub(crate) struct Copied {
    pub(crate) bytes: u64,
    pub(crate) data_bytes: u64,
    pub(crate) seconds: f64,
    pub(crate) verified: Option<bool>,
    pub(crate) platform: String,
    pub(crate) backends: Vec<String>,
}

impl Copied {
    pub(crate) fn json(&self) -> Value {
        json!({
            "bytes": self.bytes,
            "data_bytes": self.data_bytes,
            "seconds": self.seconds,
            "gbps": self.gbps(),
            "verified": self.verified,
            "platform": self.platform,
            "backends": self.backends,
        })
    }

    /// GB/s (1e9 bytes/s) of the bytes moved.
    pub(crate) fn gbps(&self) -> f64 {
        if self.seconds > 0.0 { self.data_bytes as f64 / self.seconds / 1e9 } else { 0.0 }
    }
}

pub(crate) fn run(args: &CpArgs) -> Result<Copied, String> {
    let chunk = usize::try_from(args.chunk).ok().filter(|&c| c >= 4096).ok_or("--chunk: at least 4K")?;
    let src = std::fs::File::open(&args.src).map_err(|e| format!("{}: {e}", args.src.display()))?;
    let meta = src.metadata().map_err(|e| format!("{}: {e}", args.src.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", args.src.display()));
    }
    if let Ok(dst_meta) = std::fs::metadata(&args.dst) {
        use std::os::unix::fs::MetadataExt;
        if dst_meta.dev() == meta.dev() && dst_meta.ino() == meta.ino() {
            return Err(format!("{} and {} are the same file", args.src.display(), args.dst.display()));
        }
        if !args.force {
            return Err(format!("{} exists (--force replaces it)", args.dst.display()));
        }
    }
    let dst = std::fs::OpenOptions::new()
        .write(true)
        .read(true)
        .create(true)
        .truncate(true)
        .mode(std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777)
        .open(&args.dst)
        .map_err(|e| format!("{}: {e}", args.dst.display()))?;
    let size = meta.len();
    // DST's size is SRC's from the start: holes the copy skips stay holes.
    dst.set_len(size).map_err(|e| format!("{}: {e}", args.dst.display()))?;

    let (platform, why_mock) = crate::platform(args.backend.as_deref(), 1);
    if why_mock.is_some() && !args.json {
        eprintln!("hipfile: no GPU runtime found; using the mock GPU (hipfile check says why)");
    }
    let description = platform.description().to_owned();
    let driver = crate::driver(platform, args.backend.clone());
    let guard = DriverGuard::open(Arc::clone(&driver)).map_err(|e| format!("cannot open the driver: {e}"))?;
    let gpu = Arc::clone(driver.platform().runtime());
    let chunk = chunk.min(usize::try_from(size).unwrap_or(usize::MAX).max(4096));
    let dev = gpu.device_alloc(2 * chunk).map_err(|e| format!("cannot allocate GPU memory: {e}"))?;
    let result = (|| -> Result<(u64, f64), String> {
        let _buffer = guard.register_buffer(dev, 2 * chunk).map_err(|e| format!("GPU memory: {e}"))?;
        let reader = guard.register_file(&src).map_err(|e| format!("{}: {e}", args.src.display()))?;
        let writer = guard.register_file(&dst).map_err(|e| format!("{}: {e}", args.dst.display()))?;
        let extents = data_extents(&src, size).map_err(|e| format!("{}: {e}", args.src.display()))?;
        let data_bytes: u64 = extents.iter().map(|(_, len)| len).sum();
        let done = AtomicU64::new(0);
        let stop = AtomicBool::new(false);
        let start = Instant::now();
        std::thread::scope(|scope| -> Result<(), String> {
            let show = !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr());
            if show {
                let (done, stop) = (&done, &stop);
                scope.spawn(move || crate::bench::progress_line(done, stop, data_bytes, "cp"));
            }
            let result = pipeline(&reader, &writer, dev, chunk, &extents, &done);
            stop.store(true, Ordering::Relaxed);
            result
        })?;
        let seconds = start.elapsed().as_secs_f64();
        Ok((data_bytes, seconds))
    })();
    // SAFETY: allocated above; the registrations and transfers using it have ended.
    let freed = unsafe { gpu.device_free(dev) };
    let (data_bytes, seconds) = result?;
    freed.map_err(|e| format!("cannot free GPU memory: {e}"))?;
    let backends = driver
        .backend_counters()
        .into_iter()
        .filter(|(_, c)| c.iter().any(|(k, v)| *k == "served_requests" && *v > 0))
        .map(|(name, _)| name.to_owned())
        .collect();
    drop(guard);
    let verified = args.verify.then(|| same_contents(&args.src, &args.dst)).transpose()?;
    if verified == Some(false) {
        return Err(format!("{} differs from {} after the copy", args.dst.display(), args.src.display()));
    }
    Ok(Copied { bytes: size, data_bytes, seconds, verified, platform: description, backends })
}

/// Reads each chunk into one of two halves of `dev` while the other half is written out.
fn pipeline(
    reader: &hipfile::RegisteredFile<'_, SystemPlatform>,
    writer: &hipfile::RegisteredFile<'_, SystemPlatform>,
    dev: usize,
    chunk: usize,
    extents: &[(u64, u64)],
    done: &AtomicU64,
) -> Result<(), String> {
    let chunks: Vec<(u64, usize)> = extents
        .iter()
        .flat_map(|&(start, len)| {
            (0..len.div_ceil(chunk as u64)).map(move |i| {
                let at = start + i * chunk as u64;
                (at, (start + len - at).min(chunk as u64) as usize)
            })
        })
        .collect();
    // Filled halves go to the writer; emptied ones come back.
    let (filled_tx, filled_rx) = mpsc::sync_channel::<(u64, usize, usize)>(2);
    let (free_tx, free_rx) = mpsc::sync_channel::<usize>(2);
    free_tx.send(0).and_then(|()| free_tx.send(chunk)).map_err(|e| e.to_string())?;
    std::thread::scope(|scope| {
        let writing = scope.spawn(move || -> Result<(), String> {
            for (at, len, half) in filled_rx {
                let mut written = 0;
                while written < len {
                    let n = writer
                        .write(dev, len - written, at + written as u64, (half + written) as u64)
                        .map_err(|e| format!("write at {}: {e}", at + written as u64))?;
                    written += n;
                }
                done.fetch_add(len as u64, Ordering::Relaxed);
                if free_tx.send(half).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let reading = (|| -> Result<(), String> {
            for &(at, len) in &chunks {
                let Ok(half) = free_rx.recv() else { return Ok(()) }; // the writer failed
                let mut read = 0;
                while read < len {
                    let n = reader
                        .read(dev, len - read, at + read as u64, (half + read) as u64)
                        .map_err(|e| format!("read at {}: {e}", at + read as u64))?;
                    if n == 0 {
                        return Err(format!("the source ended early, at {}", at + read as u64));
                    }
                    read += n;
                }
                if filled_tx.send((at, len, half)).is_err() {
                    return Ok(()); // the writer failed: its error is the one to report
                }
            }
            Ok(())
        })();
        drop(filled_tx);
        let written = writing.join().unwrap_or_else(|_| Err("the writing thread panicked".into()));
        written.and(reading)
    })
}

/// The data extents of `file` (offset, length), holes left out; the whole file where the file
/// system does not say.
fn data_extents(file: &std::fs::File, size: u64) -> std::io::Result<Vec<(u64, u64)>> {
    let fd = file.as_raw_fd();
    let seek = |offset: u64, whence| {
        // SAFETY: lseek on a descriptor we hold.
        let r = unsafe { libc::lseek(fd, offset as libc::off_t, whence) };
        if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as u64) }
    };
    let mut extents = Vec::new();
    let mut at = 0;
    while at < size {
        let start = match seek(at, libc::SEEK_DATA) {
            Ok(start) => start,
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => break, // only a hole is left
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => return Ok(vec![(0, size)]), // not supported
            Err(e) => return Err(e),
        };
        let end = seek(start, libc::SEEK_HOLE)?.min(size);
        if end > start {
            extents.push((start, end - start));
        }
        at = end.max(start + 1);
    }
    Ok(extents)
}

/// Whether two files hold the same bytes.
fn same_contents(a: &std::path::Path, b: &std::path::Path) -> Result<bool, String> {
    use std::io::Read;
    let open = |p: &std::path::Path| std::fs::File::open(p).map_err(|e| format!("{}: {e}", p.display()));
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    loop {
        let na = read_full(&mut fa, &mut ba).map_err(|e| format!("{}: {e}", a.display()))?;
        let nb = read_full(&mut fb, &mut bb).map_err(|e| format!("{}: {e}", b.display()))?;
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
    }

    fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    }
}
