//! A remote object, read by ranges in parallel: into host memory, into GPU memory through pinned
//! staging buffers, or into a file (the cache's fill and `hipfile cp`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use hipfile_core::DeviceSpan;
use object_store::{GetOptions, GetRange, ObjectStoreExt};

use crate::error::{Error, ErrorKind, Result};
use crate::location::Location;
use crate::settings::Settings;
use crate::sink::{DeviceSink, FileSink, HostSink, Sink, Staging};

/// Runs `f` on the library's runtime for the stores' clients (object_store is async) and waits
/// for it: its threads run the connections, the caller's thread waits. A caller that is itself
/// a task of some runtime waits on a thread of its own (a runtime may not block in another).
pub(crate) fn block_on<F>(f: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        return std::thread::scope(|s| {
            s.spawn(|| runtime().block_on(f)).join().unwrap_or_else(|p| std::panic::resume_unwind(p))
        });
    }
    runtime().block_on(f)
}

/// The runtime of this process: made on first use, and again in a child after `fork` (whose
/// copy of the parent's has no threads).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: Mutex<Option<(u32, &'static tokio::runtime::Runtime)>> = Mutex::new(None);
    let mut held = RUNTIME.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    if let Some((owner, rt)) = *held
        && owner == pid
    {
        return rt;
    }
    // Its threads parse the bodies and copy them to where they go: up to one a CPU.
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get().clamp(2, 16));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("hipfile-remote")
        .enable_all()
        .build()
        .expect("a runtime of a few threads can be made");
    // Kept for the life of the process (a parent's, in a child, is never dropped either: its
    // threads are not there to stop).
    let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(rt));
    *held = Some((pid, rt));
    rt
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
    shared: Arc<Shared>,
    settings: Settings,
}

/// What every part's task of a read needs of its object.
#[derive(Debug)]
struct Shared {
    loc: Location,
    url: Arc<str>,
    version: Version,
}

/// Where a read's bytes go.
pub enum Dest<'a> {
    /// Host memory.
    Host(&'a mut [u8]),
    /// Device memory, through [`Staging`]'s pinned buffers.
    Device(DeviceSpan),
}

/// One range request of a read: `len` bytes at `offset`, and where they go.
struct Part {
    offset: u64,
    len: usize,
    sink: Box<dyn Sink>,
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
        let url: Arc<str> = Arc::from(loc.shown.as_str());
        tracing::debug!("{url}: {} bytes, ETag {:?}, read from the store", version.size, version.etag);
        Ok(RemoteObject { shared: Arc::new(Shared { loc, url, version }), settings: Settings::from_env() })
    }

    /// With other settings.
    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The URL as shown (no credentials, no query).
    pub fn url(&self) -> &str {
        &self.shared.url
    }

    /// The version read at the open.
    pub fn version(&self) -> &Version {
        &self.shared.version
    }

    /// The object's size in bytes.
    pub fn size(&self) -> u64 {
        self.shared.version.size
    }

    /// Reads `dst.len()` bytes at `offset` into host memory (fewer at the object's end): the
    /// bytes read.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<usize> {
        Ok(self.read_into(None, vec![(offset, Dest::Host(dst))])?[0])
    }

    /// Reads each `(offset, destination)` at once, their parts `connections` at a time on the
    /// library's threads; the bytes each read (fewer only at the object's end). Device
    /// destinations need `staging`.
    pub fn read_into(&self, staging: Option<&Staging>, reqs: Vec<(u64, Dest<'_>)>) -> Result<Vec<usize>> {
        let mut counts = Vec::with_capacity(reqs.len());
        let mut parts = Vec::new();
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
                        let sink = Box::new(HostSink::new(piece));
                        parts.push(Part { offset: offset + (i * part) as u64, len: piece.len(), sink });
                    }
                }
                Dest::Device(span) => {
                    let staging = staging.ok_or_else(|| self.invalid("device memory needs staging buffers"))?;
                    let part = part.min(staging.part());
                    for from in (0..n).step_by(part) {
                        let len = part.min(n - from);
                        let sink = DeviceSink {
                            staging: staging.clone(),
                            buf: None,
                            span: span.part(from, len),
                            url: Arc::clone(&self.shared.url),
                        };
                        parts.push(Part { offset: offset + from as u64, len, sink: Box::new(sink) });
                    }
                }
            }
        }
        // The host slices stay borrowed (by `reqs`' lifetime) until `fetch` has waited for
        // every part's task.
        self.fetch(parts)?;
        Ok(counts)
    }

    /// Reads the whole object into `file` (at the same offsets), `connections` parts at once.
    pub(crate) fn read_to_file(&self, file: &std::fs::File) -> Result<()> {
        let size = usize::try_from(self.size()).map_err(|_| self.invalid("larger than this machine's memory space"))?;
        let url = Arc::clone(&self.shared.url);
        let file = Arc::new(file.try_clone().map_err(|e| Error::cache(&url, "the local copy", &e))?);
        let part = self.settings.part_size;
        let parts = (0..size)
            .step_by(part)
            .map(|from| {
                let sink = FileSink { file: Arc::clone(&file), at: from as u64, url: Arc::clone(&url) };
                Part { offset: from as u64, len: part.min(size - from), sink: Box::new(sink) }
            })
            .collect();
        self.fetch(parts)
    }

    fn invalid(&self, why: &str) -> Error {
        Error::new(ErrorKind::Invalid, self.url(), why.to_owned())
    }

    /// Runs every part as a task of the runtime, `connections` at once, and waits for all of
    /// them, even after one fails (the others then stop at their next piece): no task touches
    /// a destination once this returns. The first error, if any.
    fn fetch(&self, parts: Vec<Part>) -> Result<()> {
        let cancel = Arc::new(AtomicBool::new(false));
        let tasks = futures::stream::iter(parts)
            .map(|part| {
                let (shared, cancel) = (Arc::clone(&self.shared), Arc::clone(&cancel));
                runtime().spawn(async move {
                    let done = fetch_part(&shared, part, &cancel).await;
                    if done.is_err() {
                        cancel.store(true, Ordering::Relaxed);
                    }
                    done
                })
            })
            .buffer_unordered(self.settings.connections);
        let results: Vec<_> = block_on(tasks.collect());
        let mut first = None;
        for r in results {
            let e = match r {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e,
                Err(join) => self.invalid(&format!("a read's task failed ({join})")),
            };
            first.get_or_insert(e);
        }
        first.map_or(Ok(()), Err)
    }
}

/// One part: a range request for its bytes, the body handed to its sink as it comes. A body
/// cut short (a reset connection, a dead server that comes back) is asked for again from where
/// it stopped, three times at most; a changed object is an error at once. Nothing is done
/// once `cancel` is set (another part failed).
async fn fetch_part(shared: &Shared, mut part: Part, cancel: &AtomicBool) -> Result<()> {
    const TRIES: usize = 4;
    let (offset, len, url) = (part.offset, part.len, &*shared.url);
    let mut got = 0;
    let mut failures = 0;
    let (mut last, mut kind) = (String::new(), ErrorKind::Store);
    while got < len {
        if cancel.load(Ordering::Relaxed) {
            return Ok(()); // the read fails with the error that set it
        }
        if failures == TRIES {
            return Err(Error::new(kind, url, format!("{len} bytes at {offset}: {last} ({TRIES} tries)")));
        }
        let range = offset + got as u64..offset + len as u64;
        let options = GetOptions {
            range: Some(GetRange::Bounded(range.clone())),
            if_match: shared.version.etag.clone(),
            ..GetOptions::default()
        };
        let result = match shared.loc.store.get_opts(&shared.loc.key, options).await {
            Ok(r) => r,
            Err(e) => {
                let e = Error::store(url, e);
                if e.kind() != ErrorKind::Store {
                    return Err(e);
                }
                failures += 1;
                (last, kind) = (e.to_string(), ErrorKind::Store);
                continue;
            }
        };
        // A store that ignores If-Match still says which version it sent.
        if let (Some(want), Some(sent)) = (&shared.version.etag, &result.meta.e_tag)
            && want != sent
        {
            let why = format!("the object changed while it was read (ETag {want} became {sent})");
            return Err(Error::new(ErrorKind::Changed, url, why));
        }
        let mut body = result.into_stream();
        let before = got;
        while got < len && !cancel.load(Ordering::Relaxed) {
            match body.next().await {
                Some(Ok(bytes)) => {
                    let take = bytes.len().min(len - got);
                    part.sink.put(got, &bytes[..take])?;
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
    part.sink.done(len)
}
