//! AMD's p2p path, AIS (semantics §7): `hipAmdFileRead`/`hipAmdFileWrite`, which HIP does not
//! export but hands out through `hipGetProcAddress`. Each call passes the file's `O_DIRECT`
//! descriptor and the device address `buffer + buffer_offset`; the kernel (KFD) moves the data
//! between the storage and the GPU's memory by PCI peer-to-peer DMA. A nonzero `status` is an
//! errno (`ENODEV` or `EREMOTEIO`: no P2P path, which goes to bounce); a nonzero HIP
//! result is a runtime error.

use std::ffi::{c_int, c_void};

use hipfile_core::{Direction, Error, HipError, IoRequest, Result};
use hipfile_runtime::{AmdFileHandle, AmdFileIo, LoadedRuntime};

use crate::Engine;

/// What one AIS call reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AisOutcome {
    /// The HIP result.
    pub hip: c_int,
    /// Bytes moved.
    pub size_copied: u64,
    /// An errno from the kernel, or 0.
    pub status: i32,
}

/// The AIS entry points (a seam for tests).
#[cfg_attr(test, mockall::automock)]
pub trait AisApi: Send + Sync {
    /// Calls `hipAmdFileRead` (read) or `hipAmdFileWrite` (write).
    ///
    /// # Safety
    /// `[device_ptr, device_ptr + size)` must be device memory of the runtime, valid for the
    /// call; `fd` an open `O_DIRECT` descriptor.
    unsafe fn file_io(
        &self,
        direction: Direction,
        fd: c_int,
        device_ptr: *mut c_void,
        size: u64,
        offset: i64,
    ) -> AisOutcome;
}

/// `hipError_t hipInit(unsigned int flags)`.
type HipInit = unsafe extern "C" fn(std::ffi::c_uint) -> c_int;

/// The entry points of a loaded HIP runtime.
#[derive(Clone, Copy, Debug)]
pub struct HipAis {
    read: AmdFileIo,
    write: AmdFileIo,
    /// Called once per thread before its first AIS call, as upstream does: HIP can crash when
    /// `hipAmdFileRead` is a thread's first HIP call (semantics §7).
    init: Option<HipInit>,
}

impl HipAis {
    /// Looks both entry points up in `runtime`, or says why AIS is not there.
    pub fn lookup(runtime: &LoadedRuntime) -> std::result::Result<HipAis, String> {
        let read = runtime.proc_address("hipAmdFileRead")?;
        let write = runtime.proc_address("hipAmdFileWrite")?;
        // SAFETY: the runtime returned these addresses for these names, whose C signature
        // (semantics §7, HIP's `hip_storage.h`) is `AmdFileIo`.
        let read = unsafe { std::mem::transmute::<*mut c_void, AmdFileIo>(read) };
        // SAFETY: as above.
        let write = unsafe { std::mem::transmute::<*mut c_void, AmdFileIo>(write) };
        let init = runtime.proc_address("hipInit").ok().map(|p| {
            // SAFETY: the runtime's `hipInit`, whose C signature is `HipInit`.
            unsafe { std::mem::transmute::<*mut c_void, HipInit>(p) }
        });
        Ok(HipAis { read, write, init })
    }
}

impl AisApi for HipAis {
    unsafe fn file_io(
        &self,
        direction: Direction,
        fd: c_int,
        device_ptr: *mut c_void,
        size: u64,
        offset: i64,
    ) -> AisOutcome {
        let entry = match direction {
            Direction::Read => self.read,
            Direction::Write => self.write,
        };
        thread_local! {
            static INITIALISED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if let Some(init) = self.init
            && !INITIALISED.get()
        {
            // SAFETY: `hipInit(0)` has no preconditions; a failure shows in the call below.
            unsafe { init(0) };
            INITIALISED.set(true);
        }
        let mut out = AisOutcome::default();
        // SAFETY: the caller guarantees the device range and the descriptor; the out-pointers
        // are writable locals.
        out.hip =
            unsafe { entry(AmdFileHandle { fd }, device_ptr, size, offset, &mut out.size_copied, &mut out.status) };
        out
    }
}

/// The AIS engine over the entry points `A`.
pub struct Ais<A: AisApi> {
    api: A,
}

impl<A: AisApi> Ais<A> {
    /// An engine calling `api`.
    pub fn new(api: A) -> Self {
        Ais { api }
    }
}

impl<A: AisApi> Engine for Ais<A> {
    fn name(&self) -> &'static str {
        "p2p (AIS)"
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        let fd = req.file().direct_fd().ok_or(Error::Os(libc::EBADF))?;
        let offset = i64::try_from(req.file_offset()).map_err(|_| Error::Os(libc::EINVAL))?;
        // SAFETY: the request's device range lies in a device allocation valid for the call
        // (IoRequest's contract); `fd` is the file's open O_DIRECT descriptor.
        let out = unsafe {
            self.api.file_io(req.direction(), fd, req.device_addr() as *mut c_void, req.size() as u64, offset)
        };
        if out.status != 0 {
            return Err(Error::Os(out.status.abs()));
        }
        if out.hip != 0 {
            return Err(Error::Hip(HipError(out.hip)));
        }
        // The kernel never reports more than was asked; a short count is end of file.
        Ok((out.size_copied as usize).min(req.size()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::P2p;
    use crate::tests::file;
    use hipfile_core::{Backend, FileHandle};
    use std::os::fd::AsRawFd;

    fn request(file: &FileHandle, direction: Direction, addr: usize, size: usize, offset: u64) -> IoRequest<'_> {
        // SAFETY: the mocked API never touches the address.
        IoRequest::new(direction, file, unsafe { hipfile_core::DeviceSpan::new(addr, size) }, 0, offset)
    }

    #[test]
    fn eligible_requests_reach_the_entry_point_with_the_direct_descriptor() {
        let (_f, file) = file(1 << 20);
        let direct = file.direct_fd().expect("the file system has O_DIRECT");
        let mut api = MockAisApi::new();
        api.expect_file_io()
            .withf(move |d, fd, ptr, size, off| {
                *d == Direction::Read && *fd == direct && *ptr as usize == 0x10_0000 && *size == 8192 && *off == 4096
            })
            .times(1)
            .returning(|_, _, _, size, _| AisOutcome { hip: 0, size_copied: size, status: 0 });
        let p2p = P2p::new(Ais::new(api), true);
        let req = request(&file, Direction::Read, 0x10_0000, 8192, 4096);
        assert_eq!(p2p.score(&req), Ok(100));
        assert_eq!(p2p.transfer(&req), Ok(8192));
        assert_eq!(p2p.counters()[..2], [("direct_requests", 1), ("direct_bytes", 8192)]);
    }

    #[test]
    fn unaligned_requests_are_declined_with_the_reason() {
        let (_f, file) = file(1 << 20);
        let p2p = P2p::new(Ais::new(MockAisApi::new()), true);
        for (addr, size, offset) in [(0x10_0000, 8192, 100), (0x10_0000, 100, 0), (0x10_0010, 4096, 0)] {
            let why = p2p.score(&request(&file, Direction::Write, addr, size, offset)).unwrap_err();
            assert!(why.0.contains("not aligned for direct I/O"), "{why}");
        }
    }

    #[test]
    fn status_is_an_errno_and_hip_results_are_runtime_errors() {
        let (_f, file) = file(1 << 20);
        for (outcome, expected) in [
            (AisOutcome { hip: 0, size_copied: 0, status: -libc::ENODEV }, Error::Os(libc::ENODEV)),
            (AisOutcome { hip: 1, size_copied: 0, status: libc::EREMOTEIO }, Error::Os(libc::EREMOTEIO)),
            (AisOutcome { hip: 1, size_copied: 0, status: 0 }, Error::Hip(HipError(1))),
        ] {
            let mut api = MockAisApi::new();
            api.expect_file_io().times(1).return_const(outcome);
            let p2p = P2p::new(Ais::new(api), true);
            assert_eq!(p2p.transfer(&request(&file, Direction::Read, 0x10_0000, 4096, 0)), Err(expected.clone()));
            assert_eq!(hipfile_core::backend::is_no_path(&expected), expected.errno().is_some());
        }
    }

    #[test]
    fn a_file_system_outside_the_rule_is_declined_with_its_name() {
        // tmpfs, where the machine has it mounted at /dev/shm with O_DIRECT (Linux 6.6+).
        let Ok(f) = tempfile::NamedTempFile::new_in("/dev/shm") else { return };
        let file = FileHandle::open(f.as_file().as_raw_fd()).unwrap();
        let p2p = P2p::new(Ais::new(MockAisApi::new()), false);
        let why = p2p.accepts_file(&file).unwrap_err();
        assert!(why.0.contains("tmpfs") || why.0.contains("O_DIRECT"), "{why}");
        assert!(P2p::new(Ais::new(MockAisApi::new()), true).accepts_file(&file).is_ok() || file.direct_fd().is_none());
    }

    #[test]
    fn short_aligned_counts_and_eintr_are_continued() {
        let (_f, file) = file(1 << 20);
        let align = file.dio_offset_align() as u64;
        let mut api = MockAisApi::new();
        let mut seq = mockall::Sequence::new();
        let calls = [(0, 64 * 1024, 0, 4 * align), (4 * align, 64 * 1024 - 4 * align, libc::EINTR, 0)];
        for (offset, size, status, copied) in calls {
            api.expect_file_io()
                .withf(move |_, _, _, s, o| *s == size && *o == offset as i64)
                .times(1)
                .in_sequence(&mut seq)
                .return_const(AisOutcome { hip: 0, size_copied: copied, status });
        }
        api.expect_file_io()
            .withf(move |_, _, _, s, o| *s == 64 * 1024 - 4 * align && *o == 4 * align as i64)
            .times(1)
            .in_sequence(&mut seq)
            .return_const(AisOutcome { hip: 0, size_copied: 64 * 1024 - 4 * align, status: 0 });
        let p2p = P2p::new(Ais::new(api), true);
        assert_eq!(p2p.transfer(&request(&file, Direction::Read, 0x10_0000, 64 * 1024, 0)), Ok(64 * 1024));
    }

    #[test]
    fn a_short_count_is_end_of_file() {
        let (_f, file) = file(6000);
        let mut api = MockAisApi::new();
        api.expect_file_io().times(1).return_const(AisOutcome { hip: 0, size_copied: 6000 - 4096, status: 0 });
        let p2p = P2p::new(Ais::new(api), true);
        assert_eq!(p2p.transfer(&request(&file, Direction::Read, 0x10_0000, 4096, 4096)), Ok(6000 - 4096));
    }
}
