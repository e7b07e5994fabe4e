//! The file side of one bounce chunk: page-cache-aware reads and durable-friendly writes.
//!
//! What a request does with the page cache is the driver's decision (semantics §16), which this
//! side obeys:
//! - **keep**: everything goes through the page cache. Reads of data it does not hold fill it
//!   (cut into pieces the threads read in parallel, like cached data; the kernel reads ahead of
//!   them, twice its default window on the handle's buffered descriptor, semantics §3), and
//!   durable writes go buffered, each chunk's writeback started as soon as it is written
//!   (`sync_file_range`), so that the call's `fdatasync` finds little left to do and the
//!   written pages stay in memory, clean, for the next read.
//! - **bypass**: reads ask the page cache first, per chunk, with `cachestat(2)` (Linux 6.5): a
//!   chunk the cache holds, even in part, is read buffered; a chunk it holds none of is read
//!   with `O_DIRECT` where aligned, so a cold file goes from disk to the pinned buffer once
//!   instead of through the page cache, and its unaligned edges are read buffered.
//!   (`preadv2(RWF_NOWAIT)` would answer too, but on a miss it starts readahead of the range,
//!   which then competes with the direct read.) Without `cachestat`, everything is read
//!   buffered. Durable writes send the aligned interior `O_DIRECT` (no dirty pages to flush
//!   afterwards) and the edges buffered.
//!
//! Buffer addresses follow file offsets modulo [`PAGE`] (see [`crate::lanes`]), so aligned file
//! offsets land on aligned memory.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use hipfile_core::io::{pread, transfer_loop};
use hipfile_core::sync::{lock, wait};
use hipfile_core::{CacheUse, Error, FileHandle, Result};

use crate::uring::{IoBuf, LaneRing, UringState};

/// How a lane does direct I/O: through its io_uring with registered buffers, else syscalls.
pub(crate) struct DirectIo<'a> {
    pub(crate) ring: Option<&'a mut LaneRing>,
    pub(crate) state: &'a UringState,
}

impl DirectIo<'_> {
    fn transfer(&mut self, fd: i32, mut buf: IoBuf<'_>, offset: u64) -> Result<usize> {
        if let Some(ring) = self.ring.as_deref_mut()
            && let Some(result) = ring.transfer(self.state, fd, &mut buf, offset)
        {
            return result;
        }
        buf.syscall(fd, offset)
    }
}

/// The page size the staging buffers are laid out against; direct I/O is done in multiples of
/// it (or of the file's larger `statx` alignment).
pub(crate) const PAGE: u64 = 4096;

/// The descriptors and alignment of the file a request works on, and what the request does
/// with the page cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FileSide {
    buffered: i32,
    /// The `O_DIRECT` descriptor and the alignment direct I/O needs on it; `None` where the
    /// file has none, or the request keeps the page cache.
    direct: Option<(i32, u64)>,
    /// The request keeps the page cache: durable writes start their writeback early.
    keep: bool,
}

impl FileSide {
    /// The side of a request on `file` that uses the page cache as `cache` says.
    pub(crate) fn new(file: &FileHandle, cache: CacheUse) -> Self {
        let align = PAGE.max(file.dio_offset_align().into()).max(file.dio_mem_align().into());
        let keep = cache == CacheUse::Keep;
        let direct = file.direct_fd().filter(|_| !keep).map(|fd| (fd, align));
        FileSide { buffered: file.buffered_fd(), direct, keep }
    }

    /// A side with no real descriptors, for tests of the arithmetic around it.
    #[cfg(test)]
    pub(crate) fn for_tests() -> Self {
        FileSide { buffered: -1, direct: None, keep: false }
    }

    pub(crate) fn buffered_fd(&self) -> i32 {
        self.buffered
    }

    /// Reads `[offset, offset + buf.len())` into `buf`; fewer bytes only at end of file.
    /// `buf` follows the layout rule of the module docs (`buf as u64 % PAGE == offset %
    /// PAGE`), or direct reads fall back to the buffered descriptor.
    pub(crate) fn read(
        &self,
        policy: &ReadPolicy,
        io: &mut DirectIo<'_>,
        buf: &mut [u8],
        offset: u64,
    ) -> Result<usize> {
        let (start, end) = (offset, offset + buf.len() as u64);
        let direct = self.direct.filter(|_| policy.cache.none_cached(self.buffered, start, end));
        let Some((direct_fd, align)) = direct else {
            policy.cached_chunks.fetch_add(1, Ordering::Relaxed);
            return self.piece(io, self.buffered, IoBuf::Read(buf), offset);
        };
        policy.direct_chunks.fetch_add(1, Ordering::Relaxed);
        let _stream = policy.direct_streams.acquire();
        let mut done = 0;
        for (fd, from, to) in self.pieces(start, end, Some((direct_fd, align))) {
            let piece = &mut buf[(from - offset) as usize..(to - offset) as usize];
            let want = piece.len();
            let got = self.piece(io, fd, IoBuf::Read(piece), from)?;
            done += got;
            if got < want {
                break; // end of file
            }
        }
        Ok(done)
    }

    /// Whether a read of `[start, end)` goes `O_DIRECT`: the file has a direct descriptor and
    /// the page cache holds none of the range.
    pub(crate) fn reads_direct(&self, policy: &ReadPolicy, start: u64, end: u64) -> bool {
        self.direct.is_some() && policy.cache.none_cached(self.buffered, start, end)
    }

    /// Reads `[offset, offset + buf.len())` into `buf` through the page cache, without asking
    /// it first (the caller did); fewer bytes only at end of file.
    pub(crate) fn read_buffered(&self, buf: &mut [u8], offset: u64) -> Result<usize> {
        transfer_loop(buf.len(), true, |d, r| pread(self.buffered, &mut buf[d..d + r], offset + d as u64))
    }

    /// `[start, end)` as buffered head, direct interior and buffered tail (empty pieces
    /// dropped): the interior is the aligned part, when there is one and `direct` is given.
    fn pieces(&self, start: u64, end: u64, direct: Option<(i32, u64)>) -> Vec<(i32, u64, u64)> {
        let whole = vec![(self.buffered, start, end)];
        let Some((fd, align)) = direct else { return whole };
        let (a, b) = (start.next_multiple_of(align), end / align * align);
        if a >= b {
            return whole;
        }
        [(self.buffered, start, a), (fd, a, b), (self.buffered, b, end)].into_iter().filter(|p| p.1 < p.2).collect()
    }

    /// Moves one piece in full (a read stops early only at end of file): through `io` on the
    /// direct descriptor, with syscalls on the buffered one.
    fn piece(&self, io: &mut DirectIo<'_>, fd: i32, mut buf: IoBuf<'_>, offset: u64) -> Result<usize> {
        // The buffered descriptor takes what the direct one cannot: the rest after a short
        // direct transfer that left it unaligned, and a transfer the direct descriptor refuses
        // (`EINVAL`: for example a write the file size limit cuts at an unaligned length, or
        // memory off the layout rule). It is the same file; durable writes are flushed by the
        // call's fdatasync.
        let align = self.direct.map_or(PAGE, |(_, align)| align);
        transfer_loop(buf.len(), !buf.is_write(), |d, r| {
            let off = offset + d as u64;
            if fd == self.buffered || !(d as u64).is_multiple_of(align) {
                return buf.part(d, d + r).syscall(self.buffered, off);
            }
            match io.transfer(fd, buf.part(d, d + r), off) {
                Err(Error::Os(libc::EINVAL)) => buf.part(d, d + r).syscall(self.buffered, off),
                moved => moved,
            }
        })
    }

    /// Writes `buf` at `offset`, all of it or an error. A `durable` write (one the call will
    /// `fdatasync`) sends the aligned interior through the `O_DIRECT` descriptor, or, when the
    /// request keeps the page cache, starts the writeback of what it wrote.
    pub(crate) fn write(&self, io: &mut DirectIo<'_>, buf: &[u8], offset: u64, durable: bool) -> Result<()> {
        let direct = self.direct.filter(|_| durable);
        for (fd, from, to) in self.pieces(offset, offset + buf.len() as u64, direct) {
            let piece = &buf[(from - offset) as usize..(to - offset) as usize];
            self.piece(io, fd, IoBuf::Write(piece), from)?;
        }
        if durable && self.keep && !buf.is_empty() {
            start_writeback(self.buffered, offset, buf.len() as u64);
        }
        Ok(())
    }
}

/// Starts writing `[offset, offset + len)` back to the disk without waiting for it (a hint: the
/// call's `fdatasync` is what makes the write durable, and waits for what is left).
fn start_writeback(fd: i32, offset: u64, len: u64) {
    // SAFETY: a plain system call on a descriptor the request holds open.
    unsafe { libc::sync_file_range(fd, offset as i64, len as i64, libc::SYNC_FILE_RANGE_WRITE) };
}

/// How reads choose their path: the page cache probe, and a bound on concurrent direct reads
/// (more streams than the device queues well only add seeks: on one H200 machine's virtio disk,
/// with an earlier version that gave threads contiguous parts, 8 streams of 4 MiB read at 1.63
/// GB/s where 16 read at 1.52; later A/B runs were within the disk's noise).
#[derive(Debug)]
pub(crate) struct ReadPolicy {
    pub(crate) cache: CacheProbe,
    pub(crate) direct_streams: Permits,
    /// Chunks read buffered (cached in part or whole, or no p2p path) and with `O_DIRECT`.
    pub(crate) cached_chunks: AtomicU64,
    pub(crate) direct_chunks: AtomicU64,
}

impl ReadPolicy {
    pub(crate) fn new(direct_streams: usize) -> Self {
        ReadPolicy {
            cache: CacheProbe::new(),
            direct_streams: Permits::new(direct_streams.max(1)),
            cached_chunks: AtomicU64::new(0),
            direct_chunks: AtomicU64::new(0),
        }
    }
}

/// A counting semaphore that keeps the time spent waiting on it.
#[derive(Debug)]
pub(crate) struct Permits {
    free: Mutex<usize>,
    returned: Condvar,
    pub(crate) wait_ns: AtomicU64,
}

/// One permit, given back on drop.
pub(crate) struct Permit<'a>(&'a Permits);

impl Permits {
    fn new(n: usize) -> Self {
        Permits { free: Mutex::new(n), returned: Condvar::new(), wait_ns: AtomicU64::new(0) }
    }

    fn acquire(&self) -> Permit<'_> {
        let mut free = lock(&self.free);
        if *free == 0 {
            let start = std::time::Instant::now();
            while *free == 0 {
                free = wait(&self.returned, free);
            }
            self.wait_ns.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        *lock(&self.0.free) += 1;
        self.0.returned.notify_one();
    }
}

/// Asks the page cache how much of a range it holds (`cachestat`), remembering when the
/// kernel cannot answer.
#[derive(Debug)]
pub(crate) struct CacheProbe {
    unsupported: AtomicBool,
}

/// `struct cachestat_range` of the kernel's ABI.
#[repr(C)]
struct CachestatRange {
    off: u64,
    len: u64,
}

/// `struct cachestat` of the kernel's ABI.
#[repr(C)]
#[derive(Default)]
struct Cachestat {
    nr_cache: u64,
    nr_dirty: u64,
    nr_writeback: u64,
    nr_evicted: u64,
    nr_recently_evicted: u64,
}

/// `cachestat`'s system call number (the same on every architecture).
const SYS_CACHESTAT: libc::c_long = 451;

impl CacheProbe {
    pub(crate) fn new() -> Self {
        CacheProbe { unsupported: AtomicBool::new(false) }
    }

    /// Whether the page cache holds no page of `[start, end)`; false when unknown.
    fn none_cached(&self, fd: i32, start: u64, end: u64) -> bool {
        if self.unsupported.load(Ordering::Relaxed) {
            return false;
        }
        let range = CachestatRange { off: start, len: end - start };
        let mut stat = Cachestat::default();
        // SAFETY: both structures have the kernel's layout and outlive the call.
        let rc = unsafe { libc::syscall(SYS_CACHESTAT, fd, &range, &mut stat, 0) };
        if rc != 0 {
            if Error::last_os_error().errno() == Some(libc::ENOSYS) {
                self.unsupported.store(true, Ordering::Relaxed);
            }
            return false;
        }
        stat.nr_cache == 0
    }
}
