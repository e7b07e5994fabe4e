//! hipfile-backend-p2p: direct DMA between storage and GPU memory (upstream's "p2p"),
//! through whichever engine the platform has:
//! - [`ais`]: AMD's AIS, `hipAmdFileRead`/`hipAmdFileWrite` found through `hipGetProcAddress`
//!   (semantics §7), called with the file's `O_DIRECT` descriptor;
//! - [`gds`]: NVIDIA GPUDirect Storage, `libcufile.so.0` loaded at run time, with cuFile's own
//!   compatibility mode turned off, so that only real direct I/O counts.
//!
//! The backend ([`P2p`]) applies upstream's eligibility (semantics §6) before an engine sees a
//! request: an `O_DIRECT` descriptor, a block device or a regular file on xfs or ext4
//! `data=ordered` (any file system with `HIPFILE_UNSUPPORTED_FILE_SYSTEMS`), and offset, size
//! and address aligned to the file's direct-I/O alignment. Requests it declines, and requests
//! an engine answers with `ENODEV`/`EREMOTEIO` ("no path"), go to bounce when compat mode
//! allows (the driver does that, and says so once per reason); other errors are returned.
//!
//! Where an engine cannot work at all, its constructor says why, in words a user can act on;
//! the platform puts that in the capability report.

pub mod ais;
pub mod eligibility;
pub mod gds;

use std::sync::atomic::{AtomicU64, Ordering};

use hipfile_core::io::transfer_loop;
use hipfile_core::{Backend, BackendKind, Declined, Direction, FileHandle, IoRequest, Result, Score};

/// What moves the bytes of an eligible request.
pub trait Engine: Send + Sync {
    /// The backend's name with the engine's (`p2p (AIS)`, `p2p (GDS)`).
    fn name(&self) -> &'static str;

    /// Whether the engine can serve `file` (beyond the eligibility [`P2p`] checks itself).
    fn accepts_file(&self, _file: &FileHandle) -> std::result::Result<(), Declined> {
        Ok(())
    }

    /// Moves the bytes of `req`, which [`P2p`] found eligible: the file has a direct
    /// descriptor and the request meets its alignment. Returns the bytes moved (fewer only at
    /// end of file).
    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize>;

    /// See [`Backend::buffer_registered`].
    fn buffer_registered(&self, _base: usize, _len: usize) {}

    /// See [`Backend::buffer_deregistered`].
    fn buffer_deregistered(&self, _base: usize) {}
}

/// The p2p backend over the engine `E`.
pub struct P2p<E: Engine> {
    engine: E,
    unsupported_file_systems: bool,
    requests: AtomicU64,
    bytes: AtomicU64,
    errors: AtomicU64,
}

impl<E: Engine> P2p<E> {
    /// A p2p backend driving `engine`; `unsupported_file_systems` is
    /// `HIPFILE_UNSUPPORTED_FILE_SYSTEMS`.
    pub fn new(engine: E, unsupported_file_systems: bool) -> Self {
        P2p {
            engine,
            unsupported_file_systems,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
        }
    }

    /// The engine.
    pub fn engine(&self) -> &E {
        &self.engine
    }

    /// The whole request, in as many engine calls as it takes (semantics §5): a short count
    /// that keeps the direct alignment (a signal, a partial transfer) is continued, `EINTR` is
    /// retried; a short read that breaks it is the end of the file, the only place `O_DIRECT`
    /// stops at an unaligned length.
    fn transfer_whole(&self, req: &IoRequest<'_>) -> Result<usize> {
        let align = u64::from(req.file().dio_offset_align().max(1));
        let read = req.direction() == Direction::Read;
        let mut stop = false;
        transfer_loop(req.size(), read, |done, rest| {
            if stop {
                return Ok(0);
            }
            let part = req.rest(done);
            let n = self.engine.transfer(&part)?;
            stop = read && n < rest && !(n as u64).is_multiple_of(align);
            Ok(n)
        })
    }
}

impl<E: Engine> Backend for P2p<E> {
    fn name(&self) -> &'static str {
        self.engine.name()
    }

    fn kind(&self) -> BackendKind {
        BackendKind::P2p
    }

    fn score(&self, req: &IoRequest<'_>) -> Score {
        if req.is_managed() {
            return Err(Declined::fixed("managed memory: the p2p path moves data by DMA to device memory only"));
        }
        self.accepts_file(req.file())?;
        eligibility::alignment(req.file(), req.file_offset(), req.size(), req.device_addr())?;
        Ok(100)
    }

    fn accepts_file(&self, file: &FileHandle) -> std::result::Result<(), Declined> {
        eligibility::file_rule(file, self.unsupported_file_systems)?;
        self.engine.accepts_file(file)
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        let result = self.transfer_whole(req);
        match &result {
            Ok(n) => {
                self.requests.fetch_add(1, Ordering::Relaxed);
                self.bytes.fetch_add(*n as u64, Ordering::Relaxed);
            }
            Err(_) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        result
    }

    fn buffer_registered(&self, base: usize, len: usize, _device: i32) {
        self.engine.buffer_registered(base, len);
    }

    fn buffer_deregistered(&self, base: usize) {
        self.engine.buffer_deregistered(base);
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("direct_requests", get(&self.requests)),
            ("direct_bytes", get(&self.bytes)),
            ("errors", get(&self.errors)),
        ]
    }
}

#[cfg(test)]
mod tests {
    use hipfile_core::FileHandle;
    use std::os::fd::AsRawFd;

    /// A registered file of `len` bytes in the workspace's target directory (a file system
    /// with O_DIRECT; the tests lift the file-system rule, which `FileHandle` tests cover).
    pub(crate) fn file(len: usize) -> (tempfile::NamedTempFile, FileHandle) {
        let f = tempfile::NamedTempFile::new_in(concat!(env!("CARGO_MANIFEST_DIR"), "/../target")).unwrap();
        f.as_file().set_len(len as u64).unwrap();
        let h = FileHandle::open(f.as_file().as_raw_fd()).unwrap();
        (f, h)
    }
}
