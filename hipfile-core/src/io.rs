//! The arithmetic of one I/O call (bounds, the per-call cap), and the system-call loop every
//! backend shares (short transfers, `EINTR`, end of file).

use crate::error::{Error, OpError, Result};

/// Which way the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// File to GPU memory.
    Read,
    /// GPU memory to file.
    Write,
}

/// The most one call moves: `INT_MAX` rounded down to a page, 0x7ffff000 with 4 KiB pages
/// (Linux's `MAX_RW_COUNT`; upstream `getMaxRwCount`). Callers loop for more.
pub fn max_rw_count() -> usize {
    static MAX: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *MAX.get_or_init(|| {
        let page = Some(rustix::param::page_size()).filter(|p| p.is_power_of_two()).unwrap_or(4096);
        i32::MAX as usize & !(page - 1)
    })
}

/// A checked I/O call: what to move and where.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoPlan {
    /// Bytes to move: `size` capped at `max_rw_count()`.
    pub size: usize,
    /// `buffer_base + buffer_offset`.
    pub device_addr: usize,
    /// The file offset, now known to be non-negative.
    pub file_offset: u64,
}

/// Checks one call's arguments against a buffer of `buffer_len` bytes at `buffer_base`
/// (semantics §1, §5): negative offsets are `EINVAL` (upstream since 0.4.0); `buffer_offset` must
/// lie inside the buffer and `size` must fit after it (`hipFileInvalidValue`); the transfer
/// must not run past the largest file offset (`EINVAL`).
pub fn plan_io(
    buffer_base: usize,
    buffer_len: usize,
    size: usize,
    file_offset: i64,
    buffer_offset: i64,
) -> Result<IoPlan> {
    let (Ok(file_offset), Ok(buffer_offset)) = (u64::try_from(file_offset), usize::try_from(buffer_offset)) else {
        return Err(Error::Os(libc::EINVAL));
    };
    if buffer_offset >= buffer_len || size > buffer_len - buffer_offset {
        return Err(OpError::InvalidValue.into());
    }
    let size = size.min(max_rw_count());
    if file_offset.checked_add(size as u64).is_none_or(|end| end > i64::MAX as u64) {
        return Err(Error::Os(libc::EINVAL));
    }
    let device_addr = buffer_base.checked_add(buffer_offset).ok_or(OpError::InvalidValue)?;
    Ok(IoPlan { size, device_addr, file_offset })
}

/// How many `EAGAIN`s in a row [`transfer_loop`] waits out before reporting one.
pub const EAGAIN_RETRIES: u32 = 1000;

/// Runs `step(done, remaining)` until `size` bytes have moved, retrying `EINTR` (a signal
/// arrived), `EAGAIN` (up to [`EAGAIN_RETRIES`] in a row, backing off) and continuing after
/// short transfers. `step` returns how many bytes it moved; 0 means end of file for a read
/// (the call returns what moved so far) and is an error (`EIO`) for a write, which would
/// otherwise never finish. Any other error ends the call: bytes moved before it are not
/// reported as if the call had succeeded.
pub fn transfer_loop(size: usize, is_read: bool, mut step: impl FnMut(usize, usize) -> Result<usize>) -> Result<usize> {
    let mut done = 0;
    let mut again = 0;
    while done < size {
        match step(done, size - done) {
            Ok(0) if is_read => break,
            Ok(0) => return Err(Error::Os(libc::EIO)),
            Ok(n) => {
                done += n.min(size - done);
                again = 0;
            }
            Err(Error::Os(libc::EINTR)) => continue,
            Err(Error::Os(libc::EAGAIN)) if again < EAGAIN_RETRIES => {
                again += 1;
                if again > 10 {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

/// `pread` into `buf` that reports failure as `Error`.
pub fn pread(fd: i32, buf: &mut [u8], offset: u64) -> Result<usize> {
    let offset = libc::off_t::try_from(offset).map_err(|_| Error::Os(libc::EINVAL))?;
    // SAFETY: `buf` is valid for writes of its length for the whole call.
    let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), offset) };
    if n < 0 { Err(Error::last_os_error()) } else { Ok(n as usize) }
}

/// `pwrite` from `buf` that reports failure as `Error`.
pub fn pwrite(fd: i32, buf: &[u8], offset: u64) -> Result<usize> {
    let offset = libc::off_t::try_from(offset).map_err(|_| Error::Os(libc::EINVAL))?;
    // SAFETY: `buf` is valid for reads of its length for the whole call.
    let n = unsafe { libc::pwrite(fd, buf.as_ptr().cast(), buf.len(), offset) };
    if n < 0 { Err(Error::last_os_error()) } else { Ok(n as usize) }
}

/// `fdatasync`, retrying `EINTR`.
pub fn fdatasync(fd: i32) -> Result<()> {
    loop {
        // SAFETY: no pointers involved.
        if unsafe { libc::fdatasync(fd) } == 0 {
            return Ok(());
        }
        match Error::last_os_error() {
            Error::Os(libc::EINTR) => continue,
            e => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn cap_is_int_max_rounded_to_a_page() {
        assert_eq!(max_rw_count(), 0x7fff_f000);
    }

    #[test]
    fn plan_rules() {
        assert_eq!(
            plan_io(0x1000, 100, 10, 0, 90).unwrap(),
            IoPlan { size: 10, device_addr: 0x1000 + 90, file_offset: 0 }
        );
        assert_eq!(plan_io(0x1000, 100, 0, 0, 99).unwrap().size, 0);
        assert_eq!(plan_io(0x1000, 100, 11, 0, 90), Err(OpError::InvalidValue.into()));
        assert_eq!(plan_io(0x1000, 100, 0, 0, 100), Err(OpError::InvalidValue.into()));
        assert_eq!(plan_io(0x1000, 100, 1, -1, 0), Err(Error::Os(libc::EINVAL)));
        assert_eq!(plan_io(0x1000, 100, 1, 0, -1), Err(Error::Os(libc::EINVAL)));
        assert_eq!(plan_io(0x1000, 100, 1, i64::MAX, 0), Err(Error::Os(libc::EINVAL)));
        assert_eq!(plan_io(0x1000, usize::MAX / 2, usize::MAX / 4, 0, 0).unwrap().size, 0x7fff_f000);
    }

    proptest! {
        #[test]
        fn plan_never_leaves_the_buffer(base in 0usize..1 << 40, len in 0usize..1 << 33, size in any::<usize>(),
                                        file_offset in any::<i64>(), buffer_offset in any::<i64>()) {
            match plan_io(base, len, size, file_offset, buffer_offset) {
                Ok(p) => {
                    prop_assert!(p.device_addr >= base);
                    prop_assert!(p.device_addr - base + p.size <= len);
                    prop_assert!(p.device_addr - base < len);
                    prop_assert!(p.size == size.min(max_rw_count()));
                    prop_assert!(p.file_offset + p.size as u64 <= i64::MAX as u64);
                }
                Err(Error::Os(libc::EINVAL)) => prop_assert!(file_offset < 0 || buffer_offset < 0
                    || file_offset as u64 + size.min(max_rw_count()) as u64 > i64::MAX as u64),
                Err(e) => {
                    prop_assert_eq!(e, Error::Op(OpError::InvalidValue));
                    let off = buffer_offset as usize;
                    prop_assert!(off >= len || size > len - off);
                }
            }
        }

        #[test]
        fn loop_moves_everything_despite_short_steps_and_eintr(size in 0usize..100_000, chunk in 1usize..5000,
                                                               eintr_every in 2usize..10, eof in proptest::option::of(0usize..100_000)) {
            let mut calls = 0;
            let got = transfer_loop(size, true, |done, remaining| {
                calls += 1;
                if calls % eintr_every == 0 { return Err(Error::Os(libc::EINTR)); }
                let avail = eof.map_or(usize::MAX, |e| e.saturating_sub(done));
                Ok(remaining.min(chunk).min(avail))
            }).unwrap();
            prop_assert_eq!(got, eof.map_or(size, |e| e.min(size)));
        }
    }

    #[test]
    fn loop_waits_out_eagain_but_not_forever() {
        let mut calls = 0;
        let got = transfer_loop(10, true, |_, r| {
            calls += 1;
            if calls % 50 == 0 { Ok(r.min(1)) } else { Err(Error::Os(libc::EAGAIN)) }
        });
        assert_eq!(got, Ok(10));
        let mut calls = 0;
        let got = transfer_loop(10, false, |_, _| {
            calls += 1;
            Err(Error::Os(libc::EAGAIN))
        });
        assert_eq!((got, calls), (Err(Error::Os(libc::EAGAIN)), EAGAIN_RETRIES + 1));
    }

    #[test]
    fn loop_errors() {
        assert_eq!(transfer_loop(10, false, |_, _| Ok(0)), Err(Error::Os(libc::EIO)));
        let mut n = 0;
        let r = transfer_loop(10, true, |_, _| {
            n += 1;
            if n == 1 { Ok(4) } else { Err(Error::Os(libc::EIO)) }
        });
        assert_eq!(r, Err(Error::Os(libc::EIO)));
    }
}
