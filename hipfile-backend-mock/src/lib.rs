//! hipfile-backend-mock: a GPU emulated in host memory, so all of hipfile-rs can be built,
//! tested and benchmarked without a GPU.
//!
//! - [`MockGpu`] implements [`hipfile_core::GpuRuntime`]: an allocation table (pointer queries
//!   answer `Device` only for its allocations), several devices with a current device per
//!   thread, in-order streams with host callbacks, pinned and registered host memory.
//! - [`Faults`] injects failures: the Nth copy failing with a chosen HIP error, slow copies,
//!   short reads and writes, `EIO` at a file offset, `EINTR` storms, a p2p path with no
//!   path to the device.
//! - [`MockP2p`] and [`MockBounce`] are data paths shaped like the real p2p and bounce
//!   ones; [`MockPlatform`] offers them to a [`hipfile_core::Driver`].
//!
//! Invariant: mock device addresses are host addresses of live allocations; nothing outside
//! this crate dereferences them (tests use [`MockGpu::read_device`] / [`MockGpu::write_device`]).

mod backend;
mod faults;
pub mod fork_gate;
mod gpu;

pub use backend::{MockBackend, MockBounce, MockEngine, MockP2p, MockPlatform, STAGE_SIZE};
pub use faults::Faults;
pub use gpu::{MOCK_ALIGN, MockGpu, PciAddress};

/// The mock's AIS switches (docs/configuration.md), one reading for both emulations of it (the
/// mock HIP runtime's `hipAmdFile*` and the in-process mock GPU's p2p path):
/// `HIPFILE_MOCK_AIS=absent`, no AIS entry points.
pub fn ais_absent() -> bool {
    std::env::var("HIPFILE_MOCK_AIS").is_ok_and(|v| v.trim() == "absent")
}

/// `HIPFILE_MOCK_AIS_STATUS=<errno>`: every AIS call fails with that errno (see [`ais_absent`]).
pub fn ais_failing_errno() -> Option<i32> {
    std::env::var("HIPFILE_MOCK_AIS_STATUS").ok().and_then(|v| v.trim().parse().ok())
}

/// Deterministic bytes that differ at every offset (xorshift64 from `seed`): test and
/// benchmark data whose misplacement by even one byte shows.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
