//! Where a part's body goes: host memory, device memory through pinned staging buffers, or a
//! file. Each part runs as a task of the library's runtime, so a sink owns what it writes to
//! (an address and a length, a staging buffer, a descriptor) for as long as the task lives;
//! the read that made it waits for every task before it returns (`object.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use hipfile_core::{DeviceCopy, DeviceSpan, GpuRuntime};

use crate::error::{Error, ErrorKind, Result};
use crate::settings::Settings;

/// Where a part's body goes, piece by piece (`pos` from the part's start), then `done`.
pub(crate) trait Sink: Send {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()>;
    fn done(&mut self, _len: usize) -> Result<()> {
        Ok(())
    }
}

/// `len` bytes of host memory at `ptr`, written by one part.
pub(crate) struct HostSink {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the memory is a part of a `&mut [u8]` the read borrows until every part's task has
// ended, and no other part's sink covers any of its bytes: writing it from another thread is
// writing through that exclusive borrow.
unsafe impl Send for HostSink {}

impl HostSink {
    /// A sink over `part`, which must stay borrowed until the task that owns the sink has ended.
    pub(crate) fn new(part: &mut [u8]) -> HostSink {
        HostSink { ptr: part.as_mut_ptr(), len: part.len() }
    }
}

impl Sink for HostSink {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        // SAFETY: `[ptr, ptr + len)` is the part, which this sink may write (see `Send` above);
        // the slice below is bounds-checked.
        let part = unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) };
        part[pos..pos + data.len()].copy_from_slice(data);
        Ok(())
    }
}

/// A part bound for a file at offset `at`.
pub(crate) struct FileSink {
    pub(crate) file: Arc<std::fs::File>,
    pub(crate) at: u64,
    pub(crate) url: Arc<str>,
}

impl Sink for FileSink {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        use std::os::unix::fs::FileExt;
        self.file
            .write_all_at(data, self.at + pos as u64)
            .map_err(|e| Error::cache(&self.url, "writing the local copy", &e))
    }
}

/// A part bound for device memory: gathered in a pinned buffer, then copied in one call.
pub(crate) struct DeviceSink {
    pub(crate) staging: Staging,
    pub(crate) buf: Option<Buffer>,
    pub(crate) span: DeviceSpan,
    pub(crate) url: Arc<str>,
}

impl Sink for DeviceSink {
    fn put(&mut self, pos: usize, data: &[u8]) -> Result<()> {
        let buf = self.buf.get_or_insert_with(|| self.staging.take()).bytes();
        buf[pos..pos + data.len()].copy_from_slice(data);
        Ok(())
    }

    fn done(&mut self, len: usize) -> Result<()> {
        let Some(mut buf) = self.buf.take() else { return Ok(()) };
        let copied = self.staging.0.gpu.copy_to_device(self.span.part(0, len), &buf.bytes()[..len]);
        self.staging.give(buf);
        copied.map_err(|e| Error::new(ErrorKind::Invalid, &self.url, format!("the copy to device memory failed ({e})")))
    }
}

impl Drop for DeviceSink {
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            self.staging.give(buf);
        }
    }
}

/// Pinned host buffers of one part each, for reads into device memory: allocated on first use,
/// kept for the next read (as many in use at once as parts in flight). Clones share the
/// buffers.
#[derive(Clone)]
pub struct Staging(Arc<Pool>);

struct Pool {
    gpu: Arc<dyn GpuRuntime>,
    part: usize,
    free: Mutex<Vec<Buffer>>,
    /// Whether the runtime gave pinned memory (else ordinary memory serves).
    pinned: AtomicBool,
}

impl std::fmt::Debug for Staging {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Staging").field("part", &self.0.part).finish_non_exhaustive()
    }
}

/// A staging buffer: pinned where the runtime gives pinned memory, else ordinary memory (the
/// copies are slower, never wrong).
pub(crate) enum Buffer {
    Pinned(*mut u8, usize),
    Heap(Vec<u8>),
}

// SAFETY: a `Pinned` buffer is an allocation owned by one `Buffer` value at a time (taken from
// and given back to its pool), never aliased; moving it to another thread moves that
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
        let pool = Pool { gpu, part: settings.part_size, free: Mutex::new(Vec::new()), pinned: AtomicBool::new(true) };
        Staging(Arc::new(pool))
    }

    /// The bytes of one buffer: a part of these settings must fit.
    pub(crate) fn part(&self) -> usize {
        self.0.part
    }

    fn take(&self) -> Buffer {
        if let Some(buf) = self.0.free.lock().unwrap_or_else(|p| p.into_inner()).pop() {
            return buf;
        }
        if self.0.pinned.load(Ordering::Relaxed) {
            match self.0.gpu.host_alloc(self.0.part) {
                Ok(ptr) if !ptr.is_null() => return Buffer::Pinned(ptr, self.0.part),
                _ => self.0.pinned.store(false, Ordering::Relaxed),
            }
        }
        Buffer::Heap(vec![0; self.0.part])
    }

    fn give(&self, buf: Buffer) {
        self.0.free.lock().unwrap_or_else(|p| p.into_inner()).push(buf);
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        for buf in self.free.get_mut().unwrap_or_else(|p| p.into_inner()).drain(..) {
            if let Buffer::Pinned(ptr, _) = buf {
                // SAFETY: `ptr` came from this runtime's `host_alloc`, and nothing uses it now:
                // the pool is dropped once no sink holds it, and a sink gives its buffer back.
                let _ = unsafe { self.gpu.host_free(ptr) };
            }
        }
    }
}
