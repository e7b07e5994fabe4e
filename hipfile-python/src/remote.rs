//! Remote sources (hipfile-remote, docs/remote.md) for Python: objects opened by URL and read
//! into any buffer the package takes, the node cache, uploads, listings, safetensors headers.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use hipfile::boundary::sync::lock;

use hipfile::{DeviceSpan, MemoryType};
use hipfile_remote::{Cache, Dest, RemoteObject, RemoteWriter, Staging};
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;

use crate::buffers::{Req, fit};
use crate::common::{add_functions, gpu};
use crate::safetensors::{HeaderTuple, header_tuple, safetensors_err};

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Remote>()?;
    m.add_class::<RemoteUpload>()?;
    add_functions!(
        m,
        remote_open,
        remote_create,
        remote_cached,
        remote_cache_entries,
        remote_list,
        remote_delete,
        remote_cache_flush,
        is_url,
    );
    Ok(())
}

/// A remote error as Python's `OSError`, with the errno a local file's would have and the
/// message naming the URL (never a credential).
fn remote_err(e: hipfile_remote::Error) -> PyErr {
    PyOSError::new_err((e.errno(), e.to_string()))
}

/// The staging buffers of reads into device memory, over the package's runtime.
fn staging() -> &'static Staging {
    static STAGING: OnceLock<Staging> = OnceLock::new();
    STAGING.get_or_init(|| Staging::new(Arc::clone(gpu()), hipfile_remote::Settings::from_env()))
}

/// Whether `addr` is device (or managed) memory of the runtime.
fn on_device(addr: usize) -> bool {
    gpu().pointer_info(addr).is_ok_and(|i| matches!(i.memory_type, MemoryType::Device | MemoryType::Managed))
}

/// An object of a store, opened by URL (`hipfile.open("s3://...")` wraps one).
#[pyclass(module = "hipfile._hipfile", frozen)]
pub(crate) struct Remote {
    object: RemoteObject,
}

/// Opens the object at `url`: one request, which must find it.
#[pyfunction]
pub(crate) fn remote_open(py: Python<'_>, url: String) -> PyResult<Remote> {
    let object = py.detach(|| RemoteObject::open(&url)).map_err(remote_err)?;
    Ok(Remote { object })
}

#[pymethods]
impl Remote {
    /// The object's size in bytes.
    fn size(&self) -> u64 {
        self.object.size()
    }

    /// The URL as shown.
    fn url(&self) -> &str {
        self.object.url()
    }

    /// The store's version of it: `size`, `etag`, `last_modified`, `version`.
    fn version(&self) -> BTreeMap<&'static str, Option<String>> {
        let v = self.object.version();
        BTreeMap::from([
            ("size", Some(v.size.to_string())),
            ("etag", v.etag.clone()),
            ("last_modified", Some(v.last_modified.clone())),
            ("version", v.version.clone()),
        ])
    }

    /// Reads each request `(buffer, size, file_offset, buf_offset)` at once (host or device
    /// memory, checked against the buffer's extent first): the bytes each read (fewer only at
    /// the object's end).
    fn read_many(&self, py: Python<'_>, reqs: Vec<Req<'_>>) -> PyResult<Vec<usize>> {
        let mut fitted = Vec::with_capacity(reqs.len());
        for req in &reqs {
            let f = fit(req, false, false)?;
            let offset = u64::try_from(f.file_offset).map_err(|_| PyValueError::new_err("a negative file offset"))?;
            fitted.push((f, offset));
        }
        let mut work = Vec::with_capacity(fitted.len());
        for (f, offset) in &fitted {
            let addr = f.memory.addr + f.buf_offset as usize;
            work.push((addr, f.size, *offset, on_device(f.memory.addr)));
        }
        let object = &self.object;
        let done = py.detach(move || {
            let dests = work
                .into_iter()
                .map(|(addr, size, offset, device)| {
                    let dest = if device {
                        // SAFETY: `[addr, addr + size)` lies inside the buffer's device memory
                        // (checked by `fit`), held by `fitted` until this returns.
                        Dest::Device(unsafe { DeviceSpan::new(addr, size) })
                    } else {
                        // SAFETY: as above, host memory the buffer object exports writable and
                        // holds; nothing else of this call touches it.
                        Dest::Host(unsafe { std::slice::from_raw_parts_mut(addr as *mut u8, size) })
                    };
                    (offset, dest)
                })
                .collect();
            object.read_into(Some(staging()), dests)
        });
        drop(fitted);
        done.map_err(remote_err)
    }

    /// The checked safetensors header at the object's start (as `safetensors_header`): its
    /// length, then the header alone, read from the store.
    fn safetensors_header(&self, py: Python<'_>) -> PyResult<HeaderTuple> {
        let object = &self.object;
        let read =
            py.detach(|| hipfile_safetensors::Header::read_at(object.size(), |at, buf| Ok(object.read(at, buf)?)));
        let header = read.map_err(|e| safetensors_err(e, std::path::Path::new(object.url())))?;
        Ok(header_tuple(header))
    }
}

/// The node cache's local copy of the object at `url`: `(path, "hit" or "fetched")`, or
/// `(None, why)` where the cache could not hold it (its disk full or read-only, the object over
/// its limit: the caller reads the store instead); `None` where no cache is configured. The
/// cache is `cache_dir` (with `limit` bytes at most) or `HIPFILE_REMOTE_CACHE`'s. The store's
/// errors (no such object, denied, failed) raise.
#[pyfunction]
#[pyo3(signature = (url, cache_dir = None, limit = None))]
pub(crate) fn remote_cached(
    py: Python<'_>,
    url: String,
    cache_dir: Option<std::path::PathBuf>,
    limit: Option<u64>,
) -> PyResult<Option<(Option<std::path::PathBuf>, String)>> {
    let cache = match cache_dir {
        Some(dir) => Cache::new(dir).with_limit(limit),
        None => match Cache::from_env() {
            Some(c) => c,
            None => return Ok(None),
        },
    };
    let got = py.detach(|| {
        let object = RemoteObject::open(&url)?;
        cache.get(&object)
    });
    match got {
        Ok((path, hipfile_remote::Served::Hit)) => Ok(Some((Some(path), "hit".to_owned()))),
        Ok((path, hipfile_remote::Served::Fetched)) => Ok(Some((Some(path), "fetched".to_owned()))),
        Err(e) if e.kind() == hipfile_remote::ErrorKind::Cache => Ok(Some((None, e.to_string()))),
        Err(e) => Err(remote_err(e)),
    }
}

/// The node cache's entries (`cache_dir`, or `HIPFILE_REMOTE_CACHE`'s): `(url, size, path)`,
/// least recently used first.
#[pyfunction]
#[pyo3(signature = (cache_dir = None))]
pub(crate) fn remote_cache_entries(cache_dir: Option<std::path::PathBuf>) -> Vec<(String, u64, std::path::PathBuf)> {
    let cache = cache_dir.map(Cache::new).or_else(Cache::from_env);
    cache.map(|c| c.entries().into_iter().map(|e| (e.url, e.version.size, e.path)).collect()).unwrap_or_default()
}

/// Waits until every copy this process fetched into a node cache is on the disk with its
/// record (the package calls it at exit).
#[pyfunction]
pub(crate) fn remote_cache_flush(py: Python<'_>) {
    py.detach(hipfile_remote::flush);
}

/// Deletes the object at `url`.
#[pyfunction]
pub(crate) fn remote_delete(py: Python<'_>, url: String) -> PyResult<()> {
    py.detach(|| hipfile_remote::delete(&url)).map_err(remote_err)
}

/// The objects under the prefix `url`: `(url, size)`, sorted.
#[pyfunction]
pub(crate) fn remote_list(py: Python<'_>, url: String) -> PyResult<Vec<(String, u64)>> {
    py.detach(|| hipfile_remote::list(&url)).map_err(remote_err)
}

/// An object being written in order (a multipart upload): it appears once `finish` returns,
/// and never where `abort` (or collection) comes first.
#[pyclass(module = "hipfile._hipfile", frozen)]
pub(crate) struct RemoteUpload {
    writer: Mutex<Option<RemoteWriter>>,
}

/// Starts writing the object at `url`.
#[pyfunction]
pub(crate) fn remote_create(py: Python<'_>, url: String) -> PyResult<RemoteUpload> {
    let writer = py.detach(|| RemoteWriter::create(&url)).map_err(remote_err)?;
    Ok(RemoteUpload { writer: Mutex::new(Some(writer)) })
}

#[pymethods]
impl RemoteUpload {
    /// Appends the request `(buffer, size, file_offset, buf_offset)` (host or device memory);
    /// `file_offset` must be the bytes written so far.
    fn write(&self, py: Python<'_>, req: Req<'_>) -> PyResult<usize> {
        let f = fit(&req, true, false)?;
        let offset = u64::try_from(f.file_offset).map_err(|_| PyValueError::new_err("a negative file offset"))?;
        let (addr, size) = (f.memory.addr + f.buf_offset as usize, f.size);
        let device = on_device(f.memory.addr);
        // The lock is taken without the GIL: a writer of another thread may hold it meanwhile.
        let done = py.detach(|| {
            let mut held = lock(&self.writer);
            let Some(writer) = held.as_mut() else { return Ok(false) };
            if device {
                // SAFETY: inside the buffer's device memory (checked by `fit`), held by `f`.
                writer.write_from_device(gpu().as_ref(), offset, unsafe { DeviceSpan::new(addr, size) })
            } else {
                // SAFETY: host memory the buffer object exports and `f` holds for the call.
                writer.write(offset, unsafe { std::slice::from_raw_parts(addr as *const u8, size) })
            }
            .map(|()| true)
        });
        drop(f);
        if !done.map_err(remote_err)? {
            return Err(PyValueError::new_err("the upload has ended"));
        }
        Ok(size)
    }

    /// The bytes written so far.
    fn position(&self) -> u64 {
        lock(&self.writer).as_ref().map_or(0, RemoteWriter::position)
    }

    /// Completes the upload: the object appears, whole.
    fn finish(&self, py: Python<'_>) -> PyResult<()> {
        let writer =
            py.detach(|| lock(&self.writer).take()).ok_or_else(|| PyValueError::new_err("the upload has ended"))?;
        py.detach(|| writer.finish()).map_err(remote_err)
    }

    /// Abandons the upload: nothing appears.
    fn abort(&self, py: Python<'_>) {
        let taken = py.detach(|| lock(&self.writer).take());
        if let Some(mut writer) = taken {
            py.detach(|| writer.abort());
        }
    }
}

/// Whether `text` names a remote object (`s3://`, `gs://`, `az://`, `http(s)://`).
#[pyfunction]
pub(crate) fn is_url(text: &str) -> bool {
    hipfile_remote::is_url(text)
}
