//! The platform of a real process: a GPU runtime (the one the application uses, one with a
//! device, or the mock GPU) and the backends that can serve it. The C ABI and the `hipfile`
//! tool both run on it.

use std::sync::Arc;

use hipfile_backend_bounce::Bounce;
use hipfile_backend_mock::{Faults, MockDirect, MockGpu};
use hipfile_core::{BackendChoice, Config, Error, GpuRuntime, LoadedRuntime, OpError, Platform, Result};

hipfile_core::backend_set! {
    /// The backends of a real process.
    pub enum SystemBackend {
        /// The direct-shaped mock path, only where device memory is host memory (the mock GPU
        /// or the mock HIP runtime).
        MockDirect(MockDirect),
        /// The staged path, over any runtime.
        Bounce(Bounce<dyn GpuRuntime>),
    }
}

/// A GPU runtime and the backends over it.
pub struct SystemPlatform {
    gpu: Arc<dyn GpuRuntime>,
    /// Whether device addresses are host addresses (so the mock direct path may serve).
    host_addressable: bool,
    description: String,
}

impl std::fmt::Debug for SystemPlatform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.description)
    }
}

impl SystemPlatform {
    /// The platform over a loaded runtime.
    pub fn over_runtime(runtime: LoadedRuntime) -> Self {
        let description = format!(
            "{} ({}{})",
            runtime.version_string(),
            runtime.path(),
            if runtime.is_mock() { ", the mock HIP runtime" } else { "" }
        );
        let host_addressable = runtime.is_mock();
        SystemPlatform { gpu: Arc::new(runtime), host_addressable, description }
    }

    /// The platform over a mock GPU in this process.
    pub fn over_mock(gpu: Arc<MockGpu>) -> Self {
        SystemPlatform { gpu, host_addressable: true, description: "the mock GPU (host memory)".into() }
    }

    /// The runtime found by [`LoadedRuntime::discover`], else the mock GPU and why.
    pub fn discover_or_mock() -> (Self, Option<String>) {
        match LoadedRuntime::discover() {
            Ok(runtime) => (Self::over_runtime(runtime), None),
            Err(why) => (Self::over_mock(MockGpu::new(1)), Some(why.0)),
        }
    }

    /// The runtime, for allocating and checking device memory.
    pub fn runtime(&self) -> &Arc<dyn GpuRuntime> {
        &self.gpu
    }

    /// What the platform runs on, in words.
    pub fn description(&self) -> &str {
        &self.description
    }
}

impl Platform for SystemPlatform {
    type Backend = SystemBackend;

    fn gpu(&self) -> &dyn GpuRuntime {
        &*self.gpu
    }

    fn backends(&self, config: &Config) -> Result<Vec<SystemBackend>> {
        let bounce = || SystemBackend::Bounce(Bounce::new(Arc::clone(&self.gpu), &config.bounce));
        if !self.host_addressable {
            return match config.backend {
                BackendChoice::Auto | BackendChoice::Bounce => Ok(vec![bounce()]),
                choice => Err(unavailable(format!(
                    "HIPFILE_BACKEND={} is not available over {}: it needs {}",
                    choice.name(),
                    self.description,
                    match choice {
                        BackendChoice::Mock => "the mock GPU or the mock HIP runtime (libhipfile_mockhip.so)",
                        _ => "a P2P backend, which this build does not have yet",
                    }
                ))),
            };
        }
        let direct = || {
            // SAFETY: device memory of this platform is host memory (`host_addressable`); the
            // driver only gives a backend ranges inside device allocations.
            let direct =
                unsafe { MockDirect::host_addressable(Arc::new(Faults::default()), config.unsupported_file_systems) };
            SystemBackend::MockDirect(direct)
        };
        Ok(match config.backend {
            BackendChoice::Auto | BackendChoice::Mock => vec![direct(), bounce()],
            BackendChoice::P2p => vec![direct()],
            BackendChoice::Bounce => vec![bounce()],
        })
    }
}

/// Reports why the driver cannot open (C callers only see the code) and gives the code.
pub(crate) fn unavailable(why: String) -> Error {
    hipfile_core::log::log_once(&why);
    OpError::PlatformNotSupported.into()
}
