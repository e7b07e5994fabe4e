//! hipfile-backend-mock: a GPU emulated in host memory, so all of hipfile-rs can be built,
//! tested and benchmarked without a GPU.
//!
//! - [`MockGpu`] implements [`hipfile_core::GpuRuntime`]: an allocation table (pointer queries
//!   answer `Device` only for its allocations), several devices with a current device per
//!   thread, in-order streams with host callbacks, pinned and registered host memory.
//! - [`Faults`] injects failures: the Nth copy failing with a chosen HIP error, slow copies,
//!   short reads and writes, `EIO` at a file offset, `EINTR` storms, a direct path with no
//!   path to the device.
//! - [`MockDirect`] and [`MockStaged`] are data paths shaped like the real direct and staged
//!   ones; [`MockPlatform`] offers them to a [`hipfile_core::Driver`].
//!
//! Invariant: mock device addresses are host addresses of live allocations; nothing outside
//! this crate dereferences them (tests use [`MockGpu::read_device`] / [`MockGpu::write_device`]).

mod backend;
mod faults;
mod gpu;

pub use backend::{MockBackend, MockDirect, MockPlatform, MockStaged, STAGE_SIZE};
pub use faults::Faults;
pub use gpu::{CopyKind, MOCK_ALIGN, MockGpu};
