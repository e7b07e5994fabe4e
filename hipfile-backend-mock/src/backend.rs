//! The mock data paths and the platform that offers them.
//!
//! - [`MockP2p`] is the real p2p backend ([`P2p`]) over [`MockEngine`]: it serves a
//!   request only where a real p2p path could (the same eligibility code as AIS and GDS)
//!   and the engine moves the bytes with `pread`/`pwrite` straight into emulated device
//!   memory. It uses the buffered descriptor, so a page-cached file is read from the cache,
//!   and benchmarks measure the library rather than the disk.
//! - [`MockBounce`] is shaped like bounce: it serves any device memory by staging through
//!   a host buffer and the runtime's copies, so it works over any [`GpuRuntime`] (including a
//!   mockall mock) and exercises copy failures.

use std::sync::Arc;

use hipfile_backend_p2p::{Engine, P2p};
use hipfile_core::io::{fdatasync, pread, pwrite, transfer_loop};
use hipfile_core::{
    Backend, BackendChoice, BackendKind, Config, DeviceCopy, Direction, GpuRuntime, IoRequest, Platform, Result,
};

use crate::faults::Faults;
use crate::gpu::MockGpu;

/// A file system call of the mock data paths on `buf` (filled by a read, sent by a write),
/// with the armed faults applied (which may shorten it).
fn file_io(faults: &Faults, direction: Direction, fd: i32, buf: &mut [u8], offset: u64) -> Result<usize> {
    let len = faults.before_file_io(offset, buf.len())?;
    let buf = &mut buf[..len];
    match direction {
        Direction::Read => pread(fd, buf, offset),
        Direction::Write => pwrite(fd, buf, offset),
    }
}

/// The most one system call of the p2p-shaped mock path moves: a large request goes in pieces,
/// as a DMA engine moves it, so that it advances where a watcher can see it (the file side
/// `hipfile bench`'s progress line follows) rather than in one call of up to 2 GiB.
const DIRECT_PIECE: usize = 64 << 20;

/// The engine of the p2p-shaped mock path: `pread`/`pwrite` straight into emulated device
/// memory, under the real p2p backend ([`P2p`]), so the mock path is scored, declined and
/// counted by the same code as AIS and GDS.
#[derive(Debug)]
pub struct MockEngine {
    faults: Arc<Faults>,
}

/// The p2p-shaped mock path (see the module docs): the real p2p backend over
/// [`MockEngine`].
pub type MockP2p = P2p<MockEngine>;

impl MockEngine {
    /// An engine moving bytes into `gpu`'s memory, which must not be guarded (its device
    /// memory is then host memory the engine reaches).
    pub fn new(gpu: &MockGpu) -> Self {
        assert!(!gpu.is_guarded(), "a guarded mock GPU's device memory is out of the host's reach");
        // SAFETY: an unguarded MockGpu's device memory is host memory.
        unsafe { Self::host_addressable(Arc::clone(gpu.faults())) }
    }

    /// An engine for a platform whose device memory the host can address (the in-process
    /// mock GPU, unguarded), with file faults from `faults`.
    ///
    /// # Safety
    /// Every device range in a request this engine is given must be host memory, valid for
    /// the request's length while the request runs.
    pub unsafe fn host_addressable(faults: Arc<Faults>) -> Self {
        MockEngine { faults }
    }
}

impl Engine for MockEngine {
    fn name(&self) -> &'static str {
        "mock-p2p"
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        let faults = &self.faults;
        faults.before_direct()?;
        let fd = req.file().buffered_fd();
        // SAFETY: the request's span lies in a device allocation, which is host memory here
        // (the constructors' contract), valid while the request runs; the caller does not
        // touch it meanwhile.
        let memory = unsafe { std::slice::from_raw_parts_mut(req.device_addr() as *mut u8, req.size()) };
        transfer_loop(req.size(), req.direction() == Direction::Read, |done, remaining| {
            let piece = remaining.min(DIRECT_PIECE);
            file_io(faults, req.direction(), fd, &mut memory[done..done + piece], req.file_offset() + done as u64)
        })
    }
}

/// Largest staging buffer of bounce-shaped mock path.
pub const STAGE_SIZE: usize = 4 << 20;

/// Bounce-shaped mock path over any runtime (see the module docs). Writes are durable
/// when the call returns (one `fdatasync` per call).
pub struct MockBounce<G: GpuRuntime> {
    gpu: Arc<G>,
    faults: Arc<Faults>,
}

impl<G: GpuRuntime> MockBounce<G> {
    /// A bounce path over `gpu`, with file faults from `faults`.
    pub fn new(gpu: Arc<G>, faults: Arc<Faults>) -> Self {
        MockBounce { gpu, faults }
    }
}

impl<G: GpuRuntime> Backend for MockBounce<G> {
    fn name(&self) -> &'static str {
        "mock-bounce"
    }

    fn kind(&self) -> BackendKind {
        BackendKind::Bounce
    }

    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize> {
        let mut stage = vec![0u8; req.size().min(STAGE_SIZE)];
        let fd = req.file().buffered_fd();
        let mut done = 0;
        while done < req.size() {
            let len = (req.size() - done).min(stage.len());
            let (memory, offset) = (req.memory().part(done, len), req.file_offset() + done as u64);
            let stage = &mut stage[..len];
            // The file side of one chunk, in either direction, through `stage`.
            let file_part = |stage: &mut [u8], direction| {
                transfer_loop(len, direction == Direction::Read, |d, r| {
                    file_io(&self.faults, direction, fd, &mut stage[d..d + r], offset + d as u64)
                })
            };
            let moved = match req.direction() {
                Direction::Read => {
                    let n = file_part(stage, Direction::Read)?;
                    self.gpu.copy_to_device(memory, &stage[..n])?;
                    n
                }
                Direction::Write => {
                    self.gpu.copy_from_device(stage, memory)?;
                    file_part(stage, Direction::Write)?
                }
            };
            done += moved;
            if moved < len {
                break; // end of file
            }
        }
        if req.direction() == Direction::Write {
            fdatasync(fd)?;
        }
        Ok(done)
    }
}

hipfile_core::backend_set! {
    /// The closed set of mock backends.
    pub enum MockBackend {
        /// The p2p-shaped path.
        P2p(MockP2p),
        /// The bounce path.
        Bounce(MockBounce<MockGpu>),
    }
}

/// The mock platform: a [`MockGpu`] and the mock data paths. `HIPFILE_BACKEND=auto` or `mock`
/// gives both (direct first); `p2p` only the p2p-shaped one; `bounce` only the bounce one.
#[derive(Clone, Debug)]
pub struct MockPlatform {
    gpu: Arc<MockGpu>,
}

impl MockPlatform {
    /// The platform over `gpu`.
    pub fn new(gpu: Arc<MockGpu>) -> Self {
        MockPlatform { gpu }
    }

    /// The mock GPU.
    pub fn mock_gpu(&self) -> &Arc<MockGpu> {
        &self.gpu
    }
}

impl Platform for MockPlatform {
    type Backend = MockBackend;

    fn gpu(&self) -> std::sync::Arc<dyn GpuRuntime> {
        self.gpu.clone()
    }

    fn backends(&self, config: &Config) -> Result<Vec<MockBackend>> {
        let direct = || MockBackend::P2p(P2p::new(MockEngine::new(&self.gpu), config.unsupported_file_systems));
        let staged = || MockBackend::Bounce(MockBounce::new(Arc::clone(&self.gpu), Arc::clone(self.gpu.faults())));
        Ok(match config.backend {
            BackendChoice::Auto | BackendChoice::Mock => vec![direct(), staged()],
            BackendChoice::P2p => vec![direct()],
            BackendChoice::Bounce => vec![staged()],
        })
    }
}
