//! Writes through a shared mapping of the file, for a file whose writer says no one else
//! changes its size while it writes (semantics §5: `mapped writes`). Buffered `pwrite`s to one
//! file take the inode's lock one at a time (ext4 and most file systems), so the threads of a
//! write that keeps the page cache fill it no faster than one (on the H200 machines: one
//! thread 4.9 GB/s, sixteen 2.8); stores through a mapping fault the pages in in parallel.
//!
//! Only the range the file already has is mapped: a write past the end of the file goes by
//! `pwrite`, which extends it. The mapping's pages are the page cache's, left dirty for the
//! kernel's writeback (the write is not durable); a file cut short while mapped would end the
//! process with `SIGBUS`, which is why the writer must ask for this.

use crate::fileio::PAGE;

/// `[base, base + len)` of a file, mapped shared and writable until dropped.
pub(crate) struct FileMap {
    ptr: *mut u8,
    len: usize,
    base: u64,
}

// SAFETY: the mapping is plain memory shared by the threads of one write, each of which stores
// to chunks of its own (the work hands each chunk to one thread); it is unmapped only when
// dropped, after every thread is done.
unsafe impl Send for FileMap {}
// SAFETY: as above: shared references only store to disjoint ranges.
unsafe impl Sync for FileMap {}

impl FileMap {
    /// `[start, end)` of the file `fd` mapped for writing, where the file is at least `end`
    /// bytes long now; else `None` (and the write goes by `pwrite`).
    pub(crate) fn new(fd: i32, start: u64, end: u64) -> Option<FileMap> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: `st` is writable; a bad descriptor is an error, not a write.
        if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
            return None;
        }
        // SAFETY: filled by the successful call above.
        let size = unsafe { st.assume_init() }.st_size as u64;
        let base = start / PAGE * PAGE;
        if end <= start || size < end {
            return None;
        }
        let len = usize::try_from(end - base).ok()?;
        // SAFETY: a new mapping of the file's range (inside the file, checked above), at an
        // address the kernel picks; nothing else refers to it.
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_WRITE, libc::MAP_SHARED, fd, base as libc::off_t)
        };
        (ptr != libc::MAP_FAILED).then_some(FileMap { ptr: ptr.cast(), len, base })
    }

    /// Stores `data` at file offset `offset`, which must lie with `data` inside the mapping.
    pub(crate) fn write(&self, offset: u64, data: &[u8]) {
        let at = (offset - self.base) as usize;
        assert!(offset >= self.base && at + data.len() <= self.len, "a store outside the mapped range");
        // SAFETY: `at` is inside the mapping (asserted), which lives as long as `self`.
        let to = unsafe { self.ptr.add(at) };
        // SAFETY: `data.len()` bytes from `to` are inside the mapping (asserted); the work gives
        // each chunk to one thread, so no two stores overlap.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), to, data.len()) };
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, unmapped once; no store is in flight (the write's
        // threads are done with the work that owns it).
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}
