//! A remote object, read by ranges in parallel: into host memory, into GPU memory through pinned
//! staging buffers, or into a file (the cache's fill and `hipfile cp`).

use std::sync::{Arc, Mutex, OnceLock};

use futures::{StreamExt, TryStreamExt};
use hipfile_core::{DeviceCopy, DeviceSpan, GpuRuntime};
use object_store::{GetOptions, GetRange, ObjectStoreExt};

use crate::error::{Error, ErrorKind, Result};
use crate::location::Location;

/// How remote reads and writes are cut and how many run at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// The bytes of one range request (`HIPFILE_REMOTE_PART_MIB`, default 8 MiB); uploads use
    /// parts of at least 16 MiB (S3 allows 10,000 parts: 160 GiB objects).
    pub part_size: usize,
    /// Requests in flight at once (`HIPFILE_REMOTE_CONNECTIONS`, default 16).
    pub connections: usize,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { part_size: 8 << 20, connections: 16 }
    }
}

impl Settings {
    /// The settings of the environment (read once per process); a value out of range is
    /// ignored for the default, with a warning in the log.
    pub fn from_env() -> Settings {
        static READ: OnceLock<Settings> = OnceLock::new();
        *READ.get_or_init(|| {
            let var = |name: &str, range: std::ops::RangeInclusive<usize>, default: usize| {
                let Ok(text) = std::env::var(name) else { return default };
                match text.trim().parse::<usize>() {
                    Ok(v) if range.contains(&v) => v,
                    _ => {
                        tracing::warn!("{name}={text:?} is not a number from {} to {}: {default} is used", range.start(), range.end());
                        default
                    }
                }
            };
            let d = Settings::default();
            Settings {
                part_size: var("HIPFILE_REMOTE_PART_MIB", 1..=1024, d.part_size >> 20) << 20,
                connections: var("HIPFILE_REMOTE_CONNECTIONS", 1..=256, d.connections),
            }
        })
    }

    /// The part size of uploads.
    pub(crate) fn upload_part(&self) -> usize {
        self.part_size.max(16 << 20)
    }
}

/// The library's runtime for the stores' clients (object_store is async): its threads run the
/// connections; a caller's thread waits on its own requests.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 8));
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .thread_name("hipfile-remote")
            .enable_all()
            .build()
            .expect("a runtime of a few threads can be made")
    })
}

/// The store's version of an object: what the cache keys its copy by, and what a read insists
/// on (a read of a changed object fails instead of mixing two versions).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Version {
    /// The object's size in bytes.
    pub size: u64,
    /// Its ETag, where the store gives one.
    pub etag: Option<String>,
    /// When it was last modified (RFC 3339).
    pub last_modified: String,
    /// The store's version id, where versioning is on.
    pub version: Option<String>,
}

/// An object in a store, opened by URL: its version was read at the open, and every read
/// asks the store for that version.
///
/// # Example
/// ```no_run
/// let object = hipfile_remote::RemoteObject::open("s3://bucket/model.safetensors")?;
/// let mut head = vec![0u8; 8];
/// object.read(0, &mut head)?; // the safetensors header's length
/// # Ok::<(), hipfile_remote::Error>(())
/// ```
#[derive(Debug)]
pub struct RemoteObject {
    loc: Location,
    version: Version,
    settings: Settings,
}

/// Where a read's bytes go.
pub enum Dest<'a> {
    /// Host memory.
    Host(&'a mut [u8]),
    /// Device memory, through `Staging`'s pinned buffers.
    Device(DeviceSpan),
}

impl RemoteObject {
    /// Opens the object at `url` (`s3://bucket/key`, `gs://`, `az://`, `http(s)://host/path`):
    /// one HEAD request, which must find it.
    pub fn open(url: &str) -> Result<RemoteObject> {
        let loc = Location::parse(url)?;
        let meta = block_on(loc.store.head(&loc.key)).map_err(|e| Error::store(&loc.shown, e))?;
        let version = Version {
            size: meta.size,
            etag: meta.e_tag,
            last_modified: meta.last_modified.to_rfc3339(),
            version: meta.version,
        };
        Ok(RemoteObject { loc, version, settings: Settings::from_env() })
    }

    /// With other settings.
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The URL as shown (no credentials, no query).
    pub fn url(&self) -> &str {
        &self.loc.shown
    }

    /// The version read at the open.
    pub fn version(&self) -> &Version {
        &self.version
    }

    /// The object's size in bytes.
    pub fn size(&self) -> u64 {
        self.version.size
    }

    /// Reads `dst.len()` bytes at `offset` into host memory (fewer at the object's end): the
    /// bytes read.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<usize> {
        Ok(self.read_into(None, vec![(offset, Dest::Host(dst))])?[0])
    }

    /// Reads each `(offset, destination)` at once, their parts `connections` at a time; the
    /// bytes each read (fewer only at the object's end). Device destinations need `staging`.
    pub fn read_into(&self, staging: Option<&Staging>, reqs: Vec<(u64, Dest<'_>)>) -> Result<Vec<usize>> {
        let mut counts = Vec::with_capacity(reqs.len());
        let mut parts: Vec<(u64, usize, Box<dyn Sink + Send + '_>)> = Vec::new();
        let part = self.settings.part_size;
        for (offset, dest) in reqs {
            let want = match &dest {
                Dest::Host(s) => s.len(),
                Dest::Device(span) => span.len(),
            };
            let n = usize::try_from(self.size().saturating_sub(offset)).unwrap_or(usize::MAX).min(want);
            counts.push(n);
            match dest {
                Dest::Host(slice) => {
                    for (i, piece) in slice[..n].chunks_mut(part).enumerate() {
                        let at = offset + (i * part) as u64;
                        parts.push((at, piece.len(), Box::new(HostSink(piece))));
                    }
                }
                Dest::Device(span) => {
                    let staging = staging.ok_or_else(|| self.invalid("device memory needs staging buffers"))?;
                    for from in (0..n).step_by(part) {
                        let len = part.min(n - from);
                        let sink = DeviceSink { staging, buf: None, span: span.part(from, len), url: self.url() };
                        parts.push((offset + from as u64, len, Box::new(sink)));
                    }
                }
            }
        }
        self.fetch(parts)?;
        Ok(counts)
    }

    /// Reads the whole object into `file` (at the same offsets), `connections` parts at once.
    pub(crate) fn read_to_file(&self, file: &std::fs::File) -> Result<()> {
        let size = usize::try_from(self.size()).map_err(|_| self.invalid("larger than this machine's memory space"))?;
        let part = self.settings.part_size;
        let parts = (0..size)
            .step_by(part)
            .map(|from| {
                let sink: Box<dyn Sink + Send + '_> = Box::new(FileSink { file, at: from as u64, url: self.url() });
                (from as u64, part.min(size - from), sink)
            })
            .collect();
        self.fetch(parts)
    }

    fn invalid(&self, why: &str) -> Error {
        Error::new(ErrorKind::Invalid, self.url(), why.to_owned())
    }

    /// Runs every part's request, `connections` at once.
    fn fetch(&self, parts: Vec<(u64, usize, Box<dyn Sink + Send + '_>)>) -> Result<()> {
        let requests = futures::stream::iter(parts)
            .map(|(offset, len, sink)| self.fetch_part(offset, len, sink))
            .buffer_unordered(self.settings.connections);
        block_on(requests.try_collect::<Vec<()>>()).map(drop)
    }

    /// One part: a range request for `len` bytes at `offset`, its body handed to `sink` as it
    /// comes. A body cut short (a reset connection, a dead server that comes back) is asked for
    /// again from where it stopped, three times at most; a changed object is an error at once.
    async fn fetch_part(&self, offset: u64, len: usize, mut sink: Box<dyn Sink + Send + '_>) -> Result<()> {
        const TRIES: usize = 4;
        let mut got = 0;
        let mut failures = 0;
        let (mut last, mut kind) = (String::new(), ErrorKind::Store);
        while got < len {
            if failures == TRIES {
                return Err(Error::new(kind, self.url(), format!("{len} bytes at {offset}: {last} ({TRIES} tries)")));
            }
            let range = offset + got as u64..offset + len as u64;
            let options = GetOptions {
                range: Some(GetRange::Bounded(range.clone())),
                if_match: self.version.etag.clone(),
                ..GetOptions::default()
            };
            let result = match self.loc.store.get_opts(&self.loc.key, options).await {
                Ok(r) => r,
                Err(e) => {
                    let e = Error::store(self.url(), e);
                    if e.kind() != ErrorKind::Store {
                        return Err(e);
                    }
                    failures += 1;
                    (last, kind) = (e.to_string(), ErrorKind::Store);
                    continue;
                }
            };
            // A store that ignores If-Match still says which version it sent.
            if let (Some(want), Some(sent)) = (&self.version.etag, &result.meta.e_tag)
                && want != sent
            {
                return Err(Error::new(ErrorKind::Changed, self.url(), format!("the object changed while it was read (ETag {want} became {sent})")));
            }
            let mut body = result.into_stream();
            let before = got;
            while got < len {
                match body.next().await {
                    Some(Ok(bytes)) => {
                        let take = bytes.len().min(len - got);
                        sink.put(got, &bytes[..take])?;
                        got += take;
                    }
                    // A body that ends early (a closed or reset connection) or in error.
                    end => {
                        let why = end.and_then(|r| r.err()).map(|e| format!(" ({e})")).unwrap_or_default();
                        let sent = got - before;
                        last = format!("the body ended after {sent} of {} bytes{why}", range.end - range.start);
                        kind = ErrorKind::ShortBody;
                        break;
                    }
                }
            }
            if got < len {
                failures += 1;
            }
        }
        sink.done(len)
    }
}

/// Where a part's body goes, piece by piece (`pos` from the part's start), then `done`.
trait Sink {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()>;
    fn done(&mut self, _len: usize) -> Result<()> {
        Ok(())
    }
}

struct HostSink<'a>(&'a mut [u8]);

impl Sink for HostSink<'_> {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        self.0[pos..pos + data.len()].copy_from_slice(data);
        Ok(())
    }
}

struct FileSink<'a> {
    file: &'a std::fs::File,
    at: u64,
    url: &'a str,
}

impl Sink for FileSink<'_> {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(data, self.at + pos as u64).map_err(|e| Error::cache(self.url, "writing the local copy", &e))
    }
}

/// A part bound for device memory: gathered in a pinned buffer, then copied in one call.
struct DeviceSink<'a> {
    staging: &'a Staging,
    buf: Option<Buffer>,
    span: DeviceSpan,
    url: &'a str,
}

impl Sink for DeviceSink<'_> {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        let buf = self.buf.get_or_insert_with(|| self.staging.take()).bytes();
        buf[pos..pos + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn done(&mut self, len: usize) -> Result<()> {
        let Some(mut buf) = self.buf.take() else { return Ok(()) };
        let copied = self.staging.gpu.copy_to_device(self.span.part(0, len), &buf.bytes()[..len]);
        self.staging.give(buf);
        copied.map_err(|e| Error::new(ErrorKind::Invalid, self.url, format!("the copy to device memory failed ({e})")))
    }
}

impl Drop for DeviceSink<'_> {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.staging.give(buf);
        }
    }
}

/// Pinned host buffers of one part each, for reads into device memory: allocated on first use,
/// kept for the next read (`connections` of them at most in use at once).
pub struct Staging {
    gpu: Arc<dyn GpuRuntime>,
    part: usize,
    free: Mutex<Vec<Buffer>>,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").field("part", &self.part).finish_non_exhaustive()
    }
}

/// A staging buffer: pinned where the runtime gives pinned memory, else ordinary memory (the
/// copies are slower, never wrong).
enum Buffer {
    Pinned(*mut u8, usize),
    Heap(Vec<u8>),
}

// SAFETY: a `Pinned` buffer is an allocation owned by one `Buffer` value at a time (taken from
// and given back to its `Staging`), never aliased; moving it to another thread moves that
// ownership.
unsafe impl Send for Buffer {}

impl Buffer {
    fn bytes(&mut self) -> &mut [u8] {
        match self {
            // SAFETY: `ptr` is a live `host_alloc` allocation of `len` bytes owned by this
            // value (see `Send` above); the borrow of `self` keeps it exclusive.
            Buffer::Pinned(ptr, len) => unsafe { std::slice::from_raw_parts_mut(*ptr, *len) },
            Buffer::Heap(v) => v,
        }
    }
}

impl Staging {
    /// Staging for reads of `settings`' parts into `gpu`'s memory.
    pub fn new(gpu: Arc<dyn GpuRuntime>, settings: Settings) -> Staging {
        Staging { gpu, part: settings.part_size, free: Mutex::new(Vec::new()) }
    }

    fn take(&self) -> Buffer {
        if let Some(buf) = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return buf;
        }
        match self.gpu.host_alloc(self.part) {
            Ok(ptr) if !ptr.is_null() => Buffer::Pinned(ptr, self.part),
            _ => Buffer::Heap(vec![0; self.part]),
        }
    }

    fn give(&self, buf: Buffer) {
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(buf);
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        for buf in self.free.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            if let Buffer::Pinned(ptr, _) = buf {
                // SAFETY: `ptr` came from this runtime's `host_alloc` and nothing uses it now
                // (every buffer in use is given back before its read returns).
                let _ = unsafe { self.gpu.host_free(ptr) };
            }
        }
    }
}
