//! The safe Rust API: a driver guard that keeps the driver open, a registered file that keeps
//! its descriptor borrowed, and a registered buffer, each undone on drop.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use crate::backend::Direction;
use crate::batch::{BatchEntry, BatchEvent, BatchId};
use crate::driver::{Driver, HandleId, Platform};
use crate::error::{Error, Result};
use crate::gpu::Stream;
use crate::memory::{Allocation, DeviceMemory};
use crate::stream::AsyncParams;

/// Keeps a driver open (one use count) for as long as it lives.
pub struct DriverGuard<P: Platform> {
    driver: Arc<Driver<P>>,
}

impl<P: Platform> DriverGuard<P> {
    /// Opens `driver` (`hipFileDriverOpen`).
    pub fn open(driver: Arc<Driver<P>>) -> Result<Self> {
        driver.open()?;
        Ok(DriverGuard { driver })
    }

    /// The driver this guard holds open.
    pub fn driver(&self) -> &Arc<Driver<P>> {
        &self.driver
    }

    /// Registers `file` for GPU I/O; the registration lasts as long as the returned value,
    /// which borrows the descriptor so it cannot be closed first.
    pub fn register_file<'a>(&'a self, file: &'a impl AsFd) -> Result<RegisteredFile<'a, P>> {
        let fd = file.as_fd();
        let id = self.driver.handle_register(fd)?;
        Ok(RegisteredFile { driver: &self.driver, id, _fd: fd })
    }

    /// A batch of up to `capacity` entries (`hipFileBatchIOSetUp`, 1 to 128); destroyed on
    /// drop, after its running entries have finished.
    pub fn batch(&self, capacity: usize) -> Result<Batch<'_, P>> {
        Ok(Batch { driver: &self.driver, id: self.driver.batch_setup(capacity)? })
    }

    /// Registers `stream` with `flags` (`STREAM_FIXED_*`, `hipFileStreamRegister`) until
    /// [`deregister_stream`](Self::deregister_stream).
    pub fn register_stream(&self, stream: Stream, flags: u32) -> Result<()> {
        self.driver.stream_register(stream, flags)
    }

    /// Forgets a stream's flags (`hipFileStreamDeregister`).
    pub fn deregister_stream(&self, stream: Stream) -> Result<()> {
        self.driver.stream_deregister(stream)
    }

    /// Registers the device memory `[addr, addr + len)`; deregistered on drop. Host memory is
    /// refused (`hipFileHipMemoryTypeInvalid`), whatever the configuration allows: I/O into a
    /// registered buffer is safe because the runtime vouches for the range. Host memory is
    /// read and written with [`RegisteredFile::read_host`] and `write_host`.
    pub fn register_buffer(&self, addr: usize, len: usize) -> Result<RegisteredBuffer<'_, P>> {
        self.driver.buf_register_device(addr, len, 0)?;
        Ok(RegisteredBuffer { driver: &self.driver, addr, len, owner: None })
    }

    /// `len` bytes of device memory on the calling thread's current device, allocated through
    /// the driver's runtime; freed when dropped and no longer used (see [`DeviceMemory`]).
    pub fn device_alloc(&self, len: usize) -> Result<DeviceMemory> {
        let gpu = Arc::clone(self.driver.gpu());
        let device = gpu.current_device()?;
        Ok(DeviceMemory::alloc(&gpu, device, len)?)
    }

    /// Registers all of `memory` (as [`register_buffer`](Self::register_buffer)); the
    /// registration keeps it allocated, and so does each stream-ordered operation queued on
    /// the registration until its stream has run it.
    pub fn register_memory(&self, memory: &DeviceMemory) -> Result<RegisteredBuffer<'_, P>> {
        let (addr, len) = (memory.addr(), memory.len());
        self.driver.buf_register_device(addr, len, 0)?;
        Ok(RegisteredBuffer { driver: &self.driver, addr, len, owner: Some(memory.owner()) })
    }
}

impl<P: Platform> Drop for DriverGuard<P> {
    fn drop(&mut self) {
        // The guard holds one count, so the count is above zero and close cannot fail.
        let _ = self.driver.close();
    }
}

/// A file registered with the driver (`hipFileHandleRegister`).
pub struct RegisteredFile<'a, P: Platform> {
    driver: &'a Driver<P>,
    id: HandleId,
    _fd: BorrowedFd<'a>,
}

fn offset(value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| Error::Os(libc::EINVAL))
}

impl<P: Platform> RegisteredFile<'_, P> {
    /// The driver the file is registered with.
    pub fn driver(&self) -> &Driver<P> {
        self.driver
    }

    /// The handle's key (what the C ABI hands out as `hipFileHandle_t`).
    pub fn id(&self) -> HandleId {
        self.id
    }

    /// This file's own page-cache policy, for the transfers that start after this (`None`: the
    /// driver's, `HIPFILE_PAGE_CACHE`; semantics §16).
    pub fn set_page_cache(&self, setting: Option<crate::cache::PageCache>) -> Result<()> {
        self.driver.handle_set_page_cache(self.id, setting)
    }

    /// The page-cache rule a read of the whole file follows now (semantics §16).
    pub fn page_cache_rule(&self) -> Result<crate::cache::CacheRule> {
        self.driver.page_cache_rule(self.id)
    }

    /// Reads up to `size` bytes at `file_offset` into `buffer` at `buffer_offset`; returns the
    /// bytes read (fewer at end of file, at most `max_rw_count()`). The range must lie inside
    /// the buffer (`hipFileInvalidValue` otherwise).
    ///
    /// Safe code names memory by type, never by address:
    /// ```compile_fail,E0308
    /// fn read_anywhere<P: hipfile_core::Platform>(file: &hipfile_core::RegisteredFile<'_, P>) {
    ///     let _ = file.read(0xdead_beef, 4096, 0, 0); // an address is not a buffer
    /// }
    /// ```
    pub fn read(
        &self,
        buffer: &RegisteredBuffer<'_, P>,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
    ) -> Result<usize> {
        // SAFETY: a `RegisteredBuffer` is device memory (registration refused anything else),
        // which the driver checks the range against; no host memory is involved.
        unsafe { self.transfer(Direction::Read, buffer.addr, size, file_offset, buffer_offset) }
    }

    /// Writes `size` bytes from `buffer` at `buffer_offset` to `file_offset`; returns the bytes
    /// written (at most `max_rw_count()`).
    pub fn write(
        &self,
        buffer: &RegisteredBuffer<'_, P>,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
    ) -> Result<usize> {
        // SAFETY: as in `read`.
        unsafe { self.transfer(Direction::Write, buffer.addr, size, file_offset, buffer_offset) }
    }

    /// Reads up to `buf.len()` bytes at `file_offset` into host memory, where the driver allows
    /// host memory (`HIPFILE_ALLOW_SYSTEM_MEMORY` or its parameter, semantics §4; else
    /// `hipFileHipMemoryTypeInvalid`). Returns the bytes read.
    pub fn read_host(&self, buf: &mut [u8], file_offset: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // SAFETY: `buf` is valid for writes of its length for the whole call, and the request
        // is exactly that long.
        unsafe { self.transfer(Direction::Read, buf.as_mut_ptr() as usize, buf.len(), file_offset, 0) }
    }

    /// Writes up to `buf.len()` bytes (at most `max_rw_count()`) of host memory at
    /// `file_offset`, where the driver allows host memory (see [`read_host`](Self::read_host)).
    pub fn write_host(&self, buf: &[u8], file_offset: u64) -> Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // SAFETY: `buf` is valid for reads of its length for the whole call, and the request is
        // exactly that long.
        unsafe { self.transfer(Direction::Write, buf.as_ptr() as usize, buf.len(), file_offset, 0) }
    }

    /// One synchronous read or write of this file: the one path of the four above.
    ///
    /// # Safety
    /// As [`Driver::transfer`]: memory that is not device memory
    /// must be valid for the whole range, for the call's duration.
    unsafe fn transfer(
        &self,
        direction: Direction,
        addr: usize,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
    ) -> Result<usize> {
        // SAFETY: the caller's contract, which is `Driver::transfer`'s.
        unsafe { self.driver.transfer(direction, self.id, addr, size, offset(file_offset)?, offset(buffer_offset)?) }
    }

    /// Reads `size` bytes into `buffer` from its start, looping over the per-call cap; stops
    /// early only at end of file.
    pub fn read_all(&self, buffer: &RegisteredBuffer<'_, P>, size: usize, file_offset: u64) -> Result<usize> {
        let mut done = 0;
        while done < size {
            let n = self.read(buffer, size - done, end(file_offset, done)?, done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    /// Writes `size` bytes of `buffer` from its start, looping over the per-call cap.
    pub fn write_all(&self, buffer: &RegisteredBuffer<'_, P>, size: usize, file_offset: u64) -> Result<()> {
        let mut done = 0;
        while done < size {
            done += self.write(buffer, size - done, end(file_offset, done)?, done as u64)?;
        }
        Ok(())
    }

    /// Queues a read into `buffer` on `stream` (`hipFileReadAsync`, semantics §12): it runs
    /// after the work queued before it and before the work queued after it. The values live in
    /// the returned [`StreamIo`], read when the operation runs unless the stream was registered
    /// with FIXED flags; its result is there once the stream has run it. The device memory must
    /// stay allocated until then: a [`DeviceMemory`] registered with
    /// [`DriverGuard::register_memory`] does (the operation owns it too); other memory is freed
    /// only by `unsafe` code, whose contract that is.
    pub fn read_async(
        &self,
        buffer: &RegisteredBuffer<'_, P>,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
        stream: Stream,
    ) -> Result<Arc<StreamIo>> {
        self.stream_io(Direction::Read, buffer, size, file_offset, buffer_offset, stream)
    }

    /// Queues a write from `buffer` on `stream` (`hipFileWriteAsync`); see
    /// [`read_async`](Self::read_async).
    pub fn write_async(
        &self,
        buffer: &RegisteredBuffer<'_, P>,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
        stream: Stream,
    ) -> Result<Arc<StreamIo>> {
        self.stream_io(Direction::Write, buffer, size, file_offset, buffer_offset, stream)
    }

    fn stream_io(
        &self,
        direction: Direction,
        buffer: &RegisteredBuffer<'_, P>,
        size: usize,
        file_offset: u64,
        buffer_offset: u64,
        stream: Stream,
    ) -> Result<Arc<StreamIo>> {
        let mut io = StreamIo::new(size, offset(file_offset)?, offset(buffer_offset)?);
        io.owner = buffer.owner.clone();
        let io = Arc::new(io);
        // SAFETY: device memory (a `RegisteredBuffer`), no host memory involved.
        unsafe { self.driver.submit_async(direction, self.id, buffer.addr, io.clone(), stream)? };
        Ok(io)
    }
}

/// `file_offset + done`, `EINVAL` past the largest offset.
fn end(file_offset: u64, done: usize) -> Result<u64> {
    file_offset.checked_add(done as u64).ok_or(Error::Os(libc::EINVAL))
}

impl<P: Platform> Drop for RegisteredFile<'_, P> {
    fn drop(&mut self) {
        // Fails only if the driver dropped the registration already, which a guard prevents.
        let _ = self.driver.handle_deregister(self.id);
    }
}

/// The result of a [`StreamIo`] still to run.
const PENDING: i64 = i64::MIN;

/// A stream-ordered operation's values and result, shared with the library until its stream
/// has run it: what C passes as pointers to `hipFileReadAsync`.
#[derive(Debug)]
pub struct StreamIo {
    size: AtomicUsize,
    file_offset: AtomicI64,
    buffer_offset: AtomicI64,
    result: AtomicI64,
    /// The memory the operation moves, where the program owns it: kept allocated while the
    /// library holds the operation.
    owner: Option<Arc<Allocation>>,
}

impl StreamIo {
    /// The values of an operation still to run.
    pub fn new(size: usize, file_offset: i64, buffer_offset: i64) -> StreamIo {
        StreamIo {
            size: AtomicUsize::new(size),
            file_offset: AtomicI64::new(file_offset),
            buffer_offset: AtomicI64::new(buffer_offset),
            result: AtomicI64::new(PENDING),
            owner: None,
        }
    }

    /// The bytes moved, or a negative error (`-errno`, `-hipFileOpError`, `-hipError_t`), once
    /// the stream has run the operation; `None` before.
    pub fn result(&self) -> Option<i64> {
        Some(self.result.load(Ordering::Acquire)).filter(|&r| r != PENDING)
    }

    /// Changes the size before the stream reaches the operation (ignored when the stream is
    /// registered with `STREAM_FIXED_FILE_SIZE`); larger than at submission fails it.
    pub fn set_size(&self, size: usize) {
        self.size.store(size, Ordering::Release);
    }

    /// Changes the file offset before the stream reaches the operation (ignored with
    /// `STREAM_FIXED_FILE_OFFSET`).
    pub fn set_file_offset(&self, offset: i64) {
        self.file_offset.store(offset, Ordering::Release);
    }

    /// Changes the buffer offset before the stream reaches the operation (ignored with
    /// `STREAM_FIXED_BUF_OFFSET`).
    pub fn set_buffer_offset(&self, offset: i64) {
        self.buffer_offset.store(offset, Ordering::Release);
    }
}

impl AsyncParams for StreamIo {
    fn size(&self) -> usize {
        self.size.load(Ordering::Acquire)
    }

    fn file_offset(&self) -> i64 {
        self.file_offset.load(Ordering::Acquire)
    }

    fn buffer_offset(&self) -> i64 {
        self.buffer_offset.load(Ordering::Acquire)
    }

    fn complete(&self, result: i64) {
        self.result.store(result, Ordering::Release);
    }
}

/// Device memory registered with the driver (`hipFileBufRegister`).
pub struct RegisteredBuffer<'a, P: Platform> {
    driver: &'a Driver<P>,
    addr: usize,
    len: usize,
    /// The memory, where it was registered as a [`DeviceMemory`]: kept allocated until the
    /// registration ends.
    owner: Option<Arc<Allocation>>,
}

impl<P: Platform> RegisteredBuffer<'_, P> {
    /// The device address.
    pub fn addr(&self) -> usize {
        self.addr
    }

    /// The registered length.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the registered length is zero (never: registration refuses it).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<P: Platform> Drop for RegisteredBuffer<'_, P> {
    fn drop(&mut self) {
        let _ = self.driver.buf_deregister(self.addr);
    }
}

/// A batch (semantics §11): entries submitted together run concurrently and are reaped as
/// events. Dropping it cancels what has not run and waits for what is running.
pub struct Batch<'a, P: Platform> {
    driver: &'a Driver<P>,
    id: BatchId,
}

impl<P: Platform> Batch<'_, P> {
    /// The batch's key.
    pub fn id(&self) -> BatchId {
        self.id
    }

    /// Checks every entry, then runs them all (`hipFileBatchIOSubmit`).
    ///
    /// # Safety
    /// As [`Driver::batch_submit`]: entries name memory by address, so those that are not
    /// device memory must name host memory that stays valid until their events are reaped.
    pub unsafe fn submit(&self, entries: &[BatchEntry]) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.driver.batch_submit(self.id, entries) }
    }

    /// Waits for at least `min` events (or until nothing more can come, or `timeout`) and
    /// reaps up to `max` (`hipFileBatchIOGetStatus`).
    pub fn status(&self, min: usize, max: usize, timeout: Option<std::time::Duration>) -> Result<Vec<BatchEvent>> {
        self.driver.batch_status(self.id, min, max, timeout)
    }

    /// Drops what has not run and waits for what is running (`hipFileBatchIOCancel`).
    pub fn cancel(&self) -> Result<()> {
        self.driver.batch_cancel(self.id)
    }
}

impl<P: Platform> Drop for Batch<'_, P> {
    fn drop(&mut self) {
        self.driver.batch_destroy(self.id);
    }
}
