//! The platform the C ABI's driver runs on: the HIP runtime the application uses, and the
//! backends that can serve it.

use std::sync::Arc;

use hipfile_backend_mock::{Faults, MockDirect, MockStaged};
use hipfile_core::{BackendChoice, Config, Error, GpuRuntime, LoadedRuntime, OpError, Platform, Result};

hipfile_core::backend_set! {
    /// The backends the C ABI can use.
    pub enum CapiBackend {
        /// The direct-shaped path, only over the mock HIP runtime (its device memory is host
        /// memory).
        MockDirect(MockDirect),
        /// The staged path, over any HIP runtime.
        Staged(MockStaged<LoadedRuntime>),
    }
}

/// The application's HIP runtime and the backends over it.
#[derive(Debug)]
pub struct CapiPlatform {
    hip: Arc<LoadedRuntime>,
}

impl CapiPlatform {
    /// The platform over `hip`.
    pub fn new(hip: LoadedRuntime) -> Self {
        CapiPlatform { hip: Arc::new(hip) }
    }
}

impl Platform for CapiPlatform {
    type Backend = CapiBackend;

    fn gpu(&self) -> &dyn GpuRuntime {
        &*self.hip
    }

    fn backends(&self, config: &Config) -> Result<Vec<CapiBackend>> {
        let faults = Arc::new(Faults::default());
        let staged = || CapiBackend::Staged(MockStaged::new(Arc::clone(&self.hip), Arc::clone(&faults)));
        if !self.hip.is_mock() {
            return match config.backend {
                BackendChoice::Auto | BackendChoice::Bounce => Ok(vec![staged()]),
                choice => Err(unavailable(format!(
                    "HIPFILE_BACKEND={} is not available over the HIP runtime {} ({}): it needs {}",
                    choice.name(),
                    self.hip.version_string(),
                    self.hip.path(),
                    match choice {
                        BackendChoice::Mock => "the mock HIP runtime (libhipfile_mockhip.so)",
                        _ => "a P2P backend, which this build does not have yet",
                    }
                ))),
            };
        }
        let direct = || {
            // SAFETY: the runtime is the mock HIP runtime, whose device allocations are host
            // memory; the driver only gives a backend ranges inside device allocations.
            let direct = unsafe { MockDirect::host_addressable(Arc::clone(&faults), config.unsupported_file_systems) };
            CapiBackend::MockDirect(direct)
        };
        Ok(match config.backend {
            BackendChoice::Auto | BackendChoice::Mock => vec![direct(), staged()],
            BackendChoice::P2p => vec![direct()],
            BackendChoice::Bounce => vec![staged()],
        })
    }
}

/// Reports why the driver cannot open (C callers only see the code) and gives the code.
pub(crate) fn unavailable(why: String) -> Error {
    crate::log_once(&why);
    OpError::PlatformNotSupported.into()
}
