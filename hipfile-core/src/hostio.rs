//! Host memory as the buffer (semantics §4), where `hipFileParamPropertiesAllowSystemMemory`
//! allows it: the bytes move straight between the file and the caller's memory, pinned or
//! pageable, with no staging copy: through the page cache where the page-cache policy keeps the
//! file (semantics §16), else through the `O_DIRECT` descriptor where the address, the file
//! offset and the size suit it, buffered otherwise. A write is durable when it returns, as
//! the bounce path's writes are (`HIPFILE_DURABLE_WRITES`).
//!
//! The library cannot check the bounds of host memory it did not allocate: the caller vouches
//! for `[addr, addr + len)` as it does for `pread(2)`, and an address the kernel cannot reach
//! is `EFAULT`, not a fault in the library (the bytes are only ever touched by the kernel).

use crate::backend::Direction;
use crate::cache::CacheUse;
use crate::error::{Error, Result};
use crate::file::FileHandle;
use crate::io::{fdatasync, transfer_loop};

/// Moves `len` bytes between host memory at `addr` and `file` at `offset`.
pub(crate) fn transfer(
    direction: Direction,
    file: &FileHandle,
    addr: usize,
    len: usize,
    offset: u64,
    durable: bool,
    cache: CacheUse,
) -> Result<usize> {
    let read = direction == Direction::Read;
    let moved = transfer_loop(len, read, |done, rest| {
        let (at, off) = (addr + done, offset + done as u64);
        let off = libc::off_t::try_from(off).map_err(|_| Error::Os(libc::EINVAL))?;
        let fd = match cache {
            CacheUse::Keep => file.buffered_fd(),
            CacheUse::Bypass => descriptor(file, at, off as u64, rest),
        };
        let n = if read {
            // SAFETY: the kernel writes at most `rest` bytes at `at`, inside the caller's
            // range (module docs); an address it cannot reach is EFAULT.
            unsafe { libc::pread(fd, at as *mut libc::c_void, rest, off) }
        } else {
            // SAFETY: as above, reading.
            unsafe { libc::pwrite(fd, at as *const libc::c_void, rest, off) }
        };
        if n < 0 { Err(Error::last_os_error()) } else { Ok(n as usize) }
    })?;
    if !read && durable && moved > 0 {
        fdatasync(file.buffered_fd())?;
    }
    Ok(moved)
}

/// The `O_DIRECT` descriptor where `addr`, `offset` and `len` meet its alignment, else the
/// buffered one.
fn descriptor(file: &FileHandle, addr: usize, offset: u64, len: usize) -> i32 {
    let (mem, off) = (file.dio_mem_align().max(1) as usize, file.dio_offset_align().max(1) as usize);
    match file.direct_fd() {
        Some(fd) if addr.is_multiple_of(mem) && offset.is_multiple_of(off as u64) && len.is_multiple_of(off) => fd,
        _ => file.buffered_fd(),
    }
}
