//! What a driver runs on ([`Platform`]), and the keys and records of what is registered with it.

use std::sync::Arc;

use crate::backend::{Backend, BackendKind, Capability};
use crate::config::Config;
use crate::error::Result;
use crate::gpu::GpuRuntime;
use crate::words::Words;

/// What a driver runs on: a GPU runtime and the closed set of backends it can build.
pub trait Platform: Send + Sync {
    /// The closed set of backends (see [`crate::backend_set!`]).
    type Backend: Backend + 'static;

    /// The runtime that answers pointer queries for buffer registration and I/O, and that
    /// library threads outliving a call use (stream-ordered I/O). The driver takes it once.
    fn gpu(&self) -> Arc<dyn GpuRuntime>;

    /// The backends for a driver opening with `config`, p2p backends first. The driver drops
    /// the kinds the compat-mode settings switch off.
    fn backends(&self, config: &Config) -> Result<Vec<Self::Backend>>;

    /// Every backend this platform knows of under `config`, available or not and why not: the
    /// capability report. By default, the backends [`backends`](Self::backends) builds.
    fn capabilities(&self, config: &Config) -> Vec<Capability> {
        match self.backends(config) {
            Ok(backends) => backends.iter().map(|b| Capability::new(b.name(), b.kind(), Ok(()))).collect(),
            Err(e) => vec![Capability::new(config.backend.word(), BackendKind::Bounce, Err(e.to_string()))],
        }
    }
}

/// A registered file's key: opaque, never reused, never dereferenced, so a garbage or stale
/// value is simply not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HandleId(pub u64);

/// A registered buffer (semantics §4): bookkeeping only, nothing is pinned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// The registered base address.
    pub base: usize,
    /// The registered length.
    pub len: usize,
    /// The caller's flags, kept as given.
    pub flags: i32,
    /// The device that owns the memory (-1 for host memory).
    pub device: i32,
    /// Host memory (where the configuration allows it, semantics §4).
    pub host: bool,
}
