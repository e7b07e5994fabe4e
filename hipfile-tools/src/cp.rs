//! `hipfile cp SRC DST`: copies a file through GPU memory, chunk by chunk, the read of a chunk
//! overlapping the write of the one before (two device buffers, a reading and a writing
//! thread). Holes of a sparse source stay holes (only its data extents are copied, found with
//! `SEEK_DATA`/`SEEK_HOLE`), and DST ends with SRC's size exactly; a source whose size the
//! kernel does not know (proc files say 0) is read to its end. The copy is written into a new
//! file beside DST that replaces DST only once complete (and verified), so DST is either
//! untouched or a whole copy.

use std::fs::{File, FileType, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use hipfile::boundary::io::{pread, transfer_loop};
use hipfile::{DeviceMemory, DriverGuard, SystemPlatform};
use serde_json::{Value, json};

use crate::args::CpArgs;
use crate::moved::Moved;

/// What a copy did: DST's size, and the data bytes moved (its holes are not).
pub(crate) struct Copied {
    pub(crate) size: u64,
    pub(crate) moved: Moved,
    pub(crate) verified: Option<bool>,
    pub(crate) backends: Vec<String>,
}

impl Copied {
    pub(crate) fn json(&self) -> Value {
        json!({
            "bytes": self.size,
            "data_bytes": self.moved.bytes,
            "seconds": self.moved.seconds,
            "gbps": self.moved.gbps(),
            "verified": self.verified,
            "platform": self.moved.platform,
            "backends": self.backends,
        })
    }
}

pub(crate) fn run(args: &CpArgs) -> Result<Copied, String> {
    let chunk = usize::try_from(args.chunk).ok().filter(|&c| c >= 4096).ok_or("--chunk: at least 4K")?;
    let (src, meta) = open_source(&args.src)?;
    let target = destination(args, &meta)?;
    let staged = TempCopy::create(&target, meta.mode() & 0o1777).map_err(|e| format!("{}: {e}", target.display()))?;
    // Proc files (and others the kernel generates) say 0 whatever they hold.
    let size = Some(meta.len()).filter(|&len| len > 0);
    let mut copied = copy(args, &src, &staged.file, size, chunk)?;
    if args.verify {
        if !same_contents((&src, &args.src), (&staged.file, &target))? {
            return Err(format!(
                "the copy differs from {}; {} is left as it was",
                args.src.display(),
                target.display()
            ));
        }
        copied.verified = Some(true);
    }
    staged.commit(&target).map_err(|e| format!("{}: {e}", target.display()))?;
    Ok(copied)
}

/// Opens SRC for reading once it is known to be a regular file: the first open is `O_PATH`,
/// which neither blocks (a FIFO without a writer would block forever) nor acts on a device.
fn open_source(path: &Path) -> Result<(File, Metadata), String> {
    let shown = |e: io::Error| format!("{}: {e}", path.display());
    let handle = OpenOptions::new().read(true).custom_flags(libc::O_PATH).open(path).map_err(shown)?;
    let meta = handle.metadata().map_err(shown)?;
    if !meta.is_file() {
        let kind = kind(&meta.file_type());
        return Err(format!("{}: {kind}, not a regular file: hipfile cp copies regular files", path.display()));
    }
    // Through the handle, not the path: the file checked is the file read.
    let file = File::open(format!("/proc/self/fd/{}", handle.as_raw_fd())).map_err(shown)?;
    Ok((file, meta))
}

/// The file the copy replaces or creates: DST, or the file a symbolic link DST points to;
/// refused where `cp` refuses.
fn destination(args: &CpArgs, src: &Metadata) -> Result<PathBuf, String> {
    let dst = &args.dst;
    let shown = |e: io::Error| format!("{}: {e}", dst.display());
    let link = match std::fs::symlink_metadata(dst) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(dst.clone()),
        Err(e) => return Err(shown(e)),
        Ok(m) => m.file_type().is_symlink(),
    };
    let meta = match std::fs::metadata(dst) {
        Err(e) if link && e.kind() == io::ErrorKind::NotFound => {
            return Err(format!("{}: a dangling symbolic link: hipfile cp does not write through it", dst.display()));
        }
        meta => meta.map_err(shown)?,
    };
    if (meta.dev(), meta.ino()) == (src.dev(), src.ino()) {
        return Err(format!("{} and {} are the same file", args.src.display(), dst.display()));
    }
    if !meta.is_file() {
        let kind = kind(&meta.file_type());
        return Err(format!("{}: {kind}, not a regular file: hipfile cp replaces regular files only", dst.display()));
    }
    if !args.force {
        return Err(format!("{} exists (--force replaces it)", dst.display()));
    }
    if link { std::fs::canonicalize(dst).map_err(shown) } else { Ok(dst.clone()) }
}

/// A file type as messages name it.
fn kind(t: &FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "of an unknown type"
    }
}

/// The copy until it is complete, in DST's directory: unnamed (`O_TMPFILE`) where the file
/// system allows, so that nothing is left even if the process is killed; else named, and
/// removed on drop.
struct TempCopy {
    file: File,
    dir: PathBuf,
    /// Its name while it has one and has not replaced DST.
    name: Option<PathBuf>,
    /// Its mode once complete: the one asked for, less the umask.
    mode: u32,
}

impl TempCopy {
    fn create(target: &Path, mode: u32) -> io::Result<TempCopy> {
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let mut open = OpenOptions::new();
        open.read(true).write(true).mode(mode);
        let (file, name) = match open.clone().custom_flags(libc::O_TMPFILE).open(&dir) {
            Ok(file) => (file, None),
            // EISDIR: a kernel without O_TMPFILE; EOPNOTSUPP: a file system without it.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EISDIR | libc::EOPNOTSUPP)) => {
                let (name, file) = unique_name(&dir, |path| open.clone().create_new(true).open(path))?;
                (file, Some(name))
            }
            Err(e) => return Err(e),
        };
        let staged = TempCopy { mode: file.metadata()?.mode() & 0o7777, file, dir, name };
        // The library reopens the file for reading and writing (through /proc/self/fd), which a
        // mode such as 0444 would refuse to all but root until the copy is done.
        staged.chmod_if_unwritable(staged.mode | 0o600)?;
        Ok(staged)
    }

    fn chmod_if_unwritable(&self, mode: u32) -> io::Result<()> {
        if self.mode & 0o600 == 0o600 {
            return Ok(());
        }
        self.file.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
    }

    /// Puts the copy in `target`'s place.
    fn commit(mut self, target: &Path) -> io::Result<()> {
        self.chmod_if_unwritable(self.mode)?;
        let name = match self.name.clone() {
            Some(name) => name,
            None => self.name.insert(self.link()?).clone(),
        };
        std::fs::rename(&name, target)?;
        self.name = None; // nothing to remove now
        Ok(())
    }

    /// Gives the unnamed file a name (the rename that follows cannot take a descriptor).
    fn link(&self) -> io::Result<PathBuf> {
        let from = std::ffi::CString::new(format!("/proc/self/fd/{}", self.file.as_raw_fd()))?;
        let (name, ()) = unique_name(&self.dir, |path| {
            let to = std::ffi::CString::new(path.as_os_str().as_bytes())?;
            // SAFETY: two NUL-terminated strings that outlive the call.
            let r = unsafe {
                libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), libc::AT_SYMLINK_FOLLOW)
            };
            if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
        })?;
        Ok(name)
    }
}

impl Drop for TempCopy {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            let _ = std::fs::remove_file(name);
        }
    }
}

/// Calls `make` with fresh paths in `dir` until one does not exist yet.
fn unique_name<T>(dir: &Path, mut make: impl FnMut(&Path) -> io::Result<T>) -> io::Result<(PathBuf, T)> {
    let seed = std::time::SystemTime::UNIX_EPOCH.elapsed().map_or(0, |d| d.subsec_nanos());
    let mut attempt = 0;
    loop {
        let path = dir.join(format!(".hipfile-cp.{}.{:08x}", std::process::id(), seed.wrapping_add(attempt)));
        match make(&path) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 100 => attempt += 1,
            made => return made.map(|made| (path, made)),
        }
    }
}

/// Copies `src` into `dst` through GPU memory: `size` bytes, or with `None` all that `src`
/// reads until a read returns nothing.
fn copy(args: &CpArgs, src: &File, dst: &File, size: Option<u64>, chunk: usize) -> Result<Copied, String> {
    let crate::open::Opened { description, guard, gpu: _ } =
        crate::open::open_driver(args.backend.name.as_deref(), 1, args.json)?;
    let chunk = match size {
        Some(size) => chunk.min(usize::try_from(size).unwrap_or(usize::MAX).max(4096)),
        // Files of unknown size are mostly small: no need for the whole chunk.
        None => chunk.min(1 << 20),
    };
    let memory = guard.device_alloc(2 * chunk).map_err(|e| format!("cannot allocate GPU memory: {e}"))?;
    let (bytes, data_bytes, seconds) = transfer(args, &guard, (src, dst), &memory, chunk, size)?;
    let backends = guard
        .driver()
        .backend_counters()
        .into_iter()
        .filter(|(_, c)| c.iter().any(|(k, v)| *k == "served_requests" && *v > 0))
        .map(|(name, _)| name.to_owned())
        .collect();
    let moved = Moved { bytes: data_bytes, seconds, platform: description };
    Ok(Copied { size: bytes, moved, verified: None, backends })
}

/// The registered part of [`copy`]: (DST's size, bytes moved, seconds).
fn transfer(
    args: &CpArgs,
    guard: &DriverGuard<SystemPlatform>,
    (src, dst): (&File, &File),
    memory: &DeviceMemory,
    chunk: usize,
    size: Option<u64>,
) -> Result<(u64, u64, f64), String> {
    let dst_error = |e: io::Error| format!("{}: {e}", args.dst.display());
    let buffer = guard.register_memory(memory).map_err(|e| format!("GPU memory: {e}"))?;
    let reader = guard.register_file(src).map_err(|e| format!("{}: {e}", args.src.display()))?;
    let writer = guard.register_file(dst).map_err(|e| format!("{}: {e}", args.dst.display()))?;
    let extents = match size {
        Some(size) => Some(data_extents(src, size).map_err(|e| format!("{}: {e}", args.src.display()))?),
        None => None,
    };
    if let Some(size) = size {
        // DST's size is SRC's from the start: holes the copy skips stay holes.
        dst.set_len(size).map_err(dst_error)?;
    }
    let total = extents.as_ref().map_or(0, |e| e.iter().map(|(_, len)| len).sum());
    let done = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let moved = std::thread::scope(|scope| {
        if !args.json && std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            let (done, stop) = (&done, &stop);
            scope.spawn(move || crate::progress::progress_line(done, stop, total, "cp", hipfile::Direction::Write));
        }
        let result = pipeline(&reader, &writer, &buffer, chunk, extents.as_deref(), &done);
        stop.store(true, Ordering::Relaxed);
        result
    })?;
    let seconds = start.elapsed().as_secs_f64();
    let bytes = size.unwrap_or(moved);
    dst.set_len(bytes).map_err(dst_error)?;
    Ok((bytes, moved, seconds))
}

/// Reads each chunk into one of two halves of `dev` while the other half is written out: the
/// chunks of `extents`, or with `None` chunk after chunk from 0 until a read returns nothing.
/// Returns the bytes moved.
fn pipeline(
    reader: &hipfile::RegisteredFile<'_, SystemPlatform>,
    writer: &hipfile::RegisteredFile<'_, SystemPlatform>,
    dev: &hipfile::RegisteredBuffer<'_, SystemPlatform>,
    chunk: usize,
    extents: Option<&[(u64, u64)]>,
    done: &AtomicU64,
) -> Result<u64, String> {
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
        let reading = (|| -> Result<u64, String> {
            let mut moved = 0;
            for (at, len) in chunks(extents, chunk) {
                let Ok(half) = free_rx.recv() else { return Ok(moved) }; // the writer failed
                let mut read = 0;
                while read < len {
                    let n = reader
                        .read(dev, len - read, at + read as u64, (half + read) as u64)
                        .map_err(|e| format!("read at {}: {e}", at + read as u64))?;
                    if n == 0 {
                        break;
                    }
                    read += n;
                }
                if read < len && extents.is_some() {
                    let at = at + read as u64;
                    return Err(format!(
                        "the source ended early, at {at}: it shrank, or holds less than its size says"
                    ));
                }
                if read > 0 && filled_tx.send((at, read, half)).is_err() {
                    return Ok(moved); // the writer failed: its error is the one to report
                }
                moved += read as u64;
                if read < len {
                    break; // a read returned nothing: the end of a source of unknown size
                }
            }
            Ok(moved)
        })();
        drop(filled_tx);
        let written = writing.join().unwrap_or_else(|_| Err("the writing thread panicked".into()));
        written.and(reading)
    })
}

/// (offset, length) of each chunk to copy: those of `extents`, or endless ones from 0.
fn chunks(extents: Option<&[(u64, u64)]>, chunk: usize) -> Box<dyn Iterator<Item = (u64, usize)> + '_> {
    let step = chunk as u64;
    match extents {
        Some(extents) => Box::new(extents.iter().flat_map(move |&(start, len)| {
            (0..len.div_ceil(step)).map(move |i| {
                let at = start + i * step;
                (at, (start + len - at).min(step) as usize)
            })
        })),
        None => Box::new((0..).map(move |i| (i * step, chunk))),
    }
}

/// The data extents of `file` (offset, length), holes left out; the whole file where the file
/// system does not say.
fn data_extents(file: &File, size: u64) -> io::Result<Vec<(u64, u64)>> {
    let fd = file.as_raw_fd();
    let seek = |offset: u64, whence| {
        // SAFETY: lseek on a descriptor we hold.
        let r = unsafe { libc::lseek(fd, offset as libc::off_t, whence) };
        if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as u64) }
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

/// Whether two files hold the same bytes, read from 0 whatever their descriptors' offsets.
fn same_contents((a, a_name): (&File, &Path), (b, b_name): (&File, &Path)) -> Result<bool, String> {
    let (mut ba, mut bb) = (vec![0u8; 8 << 20], vec![0u8; 8 << 20]);
    // Whole pieces, past short reads and signals, up to the end of the file.
    let read = |f: &File, buf: &mut [u8], at: u64, name: &Path| {
        let fd = f.as_raw_fd();
        transfer_loop(buf.len(), true, |done, left| pread(fd, &mut buf[done..done + left], at + done as u64))
            .map_err(|e| format!("{}: {e}", name.display()))
    };
    let mut at = 0;
    loop {
        let (na, nb) = (read(a, &mut ba, at, a_name)?, read(b, &mut bb, at, b_name)?);
        if na != nb || ba[..na] != bb[..nb] {
            return Ok(false);
        }
        if na == 0 {
            return Ok(true);
        }
        at += na as u64;
    }
}
