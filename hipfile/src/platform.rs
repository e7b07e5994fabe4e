//! The platform of a real process: a GPU runtime (the one the application uses, one with a
//! device, or the mock GPU) and the backends that can serve it. The C ABI and the `hipfile`
//! tool both run on it.

use std::sync::{Arc, Mutex, OnceLock, Weak};

use hipfile_backend_bounce::Bounce;
#[cfg(feature = "mock")]
use hipfile_backend_mock::{Faults, MockEngine, MockGpu, MockP2p};
use hipfile_backend_p2p::P2p;
use hipfile_backend_p2p::ais::{Ais, HipAis};
use hipfile_backend_p2p::gds::{Gds, LibCuFile, Session};
use hipfile_core::{BackendChoice, BackendKind, Capability, Config, Error, GpuRuntime, OpError, Platform, Result};
use hipfile_runtime::{LoadedRuntime, Vendor};

hipfile_core::backend_set! {
    /// The backends of a real process.
    pub enum SystemBackend {
        /// AMD's p2p path, over a HIP runtime that has it (the mock HIP runtime emulates it).
        Ais(P2p<Ais<HipAis>>),
        /// NVIDIA GPUDirect Storage, over the CUDA runtime, where cuFile can do direct I/O.
        Gds(P2p<Gds<LibCuFile>>),
        /// The p2p-shaped mock path, over the in-process mock GPU.
        @cfg(feature = "mock") MockP2p(MockP2p),
        /// The bounce path, over any runtime.
        Bounce(Bounce<dyn GpuRuntime>),
    }
}

/// A GPU runtime and the backends over it: what a [`Driver`](crate::Driver) runs on. The
/// runtime is the one the process already uses, else one with a device (HIP, then CUDA), else,
/// with the `mock` feature, a GPU emulated in host memory.
///
/// # Example
/// ```
/// use hipfile::SystemPlatform;
///
/// let (platform, why_mock) = SystemPlatform::discover_or_mock();
/// match why_mock {
///     None => println!("GPU runtime: {}", platform.description()),
///     Some(why) => println!("no GPU runtime ({why}): the mock GPU serves"),
/// }
/// let devices = platform.runtime().device_count()?;
/// assert!(devices >= 1);
/// # Ok::<(), hipfile::HipError>(())
/// ```
pub struct SystemPlatform {
    gpu: Arc<dyn GpuRuntime>,
    /// The loaded runtime (`None`: the in-process mock GPU).
    loaded: Option<Arc<LoadedRuntime>>,
    /// cuFile's driver while a GDS engine uses it (one per process; the capability report
    /// looks at the open one rather than opening another).
    gds: Mutex<Weak<Session<LibCuFile>>>,
    /// Why cuFile could not be opened, once it could not: not asked again while this platform
    /// lives (the process, for the C library's driver). Loading libcufile and failing
    /// `cuFileDriverOpen` costs 0.2 s on an H200 machine without `nvidia-fs`, which every
    /// driver open would pay again (docs/compat.md, "p2p").
    gds_refused: OnceLock<String>,
    description: String,
    /// Why no runtime could be loaded, for the platform of a process without one
    /// ([`SystemPlatform::without_runtime`]).
    absent: Option<String>,
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
        let loaded = Arc::new(runtime);
        let gpu = Arc::clone(&loaded) as Arc<dyn GpuRuntime>;
        SystemPlatform {
            gpu,
            loaded: Some(loaded),
            gds: Mutex::new(Weak::new()),
            gds_refused: OnceLock::new(),
            description,
            absent: None,
        }
    }

    /// The platform of a process where no GPU runtime could be loaded (`why`): parameters,
    /// properties and statistics work (semantics §13), the open fails with
    /// `hipFilePlatformNotSupported` and says why where `HIPFILE_LOG` asks.
    pub fn without_runtime(why: String) -> Self {
        SystemPlatform {
            gpu: Arc::new(crate::absent::NoRuntime),
            loaded: None,
            gds: Mutex::new(Weak::new()),
            gds_refused: OnceLock::new(),
            description: format!("no GPU runtime ({why})"),
            absent: Some(why),
        }
    }

    /// The platform over the runtime the process uses (see [`LoadedRuntime::discover`]), or
    /// why there is none.
    pub fn discover() -> std::result::Result<Self, String> {
        LoadedRuntime::discover().map(Self::over_runtime).map_err(|why| why.0)
    }

    /// The platform over a mock GPU in this process.
    #[cfg(feature = "mock")]
    pub fn over_mock(gpu: Arc<MockGpu>) -> Self {
        SystemPlatform {
            gpu,
            loaded: None,
            gds: Mutex::new(Weak::new()),
            gds_refused: OnceLock::new(),
            description: "the mock GPU (host memory)".into(),
            absent: None,
        }
    }

    /// The runtime found by [`LoadedRuntime::discover`], else the mock GPU and why.
    #[cfg(feature = "mock")]
    pub fn discover_or_mock() -> (Self, Option<String>) {
        match Self::discover() {
            Ok(platform) => (platform, None),
            Err(why) => (Self::over_mock(MockGpu::new(1)), Some(why)),
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

    /// Why this platform has no GPU runtime ([`without_runtime`](Self::without_runtime)), if so.
    pub fn missing_runtime(&self) -> Option<&str> {
        self.absent.as_deref()
    }

    /// Which runtime's API the loaded runtime has (HIP or CUDA's); `None` for the in-process
    /// mock GPU and a platform with no runtime.
    pub fn vendor(&self) -> Option<Vendor> {
        self.loaded.as_ref().map(|rt| rt.vendor())
    }

    /// Whether the GPU is emulated (the in-process mock GPU or the mock HIP runtime).
    pub fn is_mock(&self) -> bool {
        self.loaded.as_ref().is_none_or(|rt| rt.is_mock())
    }

    /// The p2p backend of this platform's runtime, or its name and why it cannot work.
    fn direct(&self, config: &Config) -> std::result::Result<SystemBackend, (&'static str, String)> {
        let unsupported_fs = config.unsupported_file_systems;
        let Some(runtime) = &self.loaded else {
            return self.mock_direct(unsupported_fs);
        };
        match runtime.vendor() {
            Vendor::Hip => HipAis::lookup(runtime)
                .map(|api| SystemBackend::Ais(P2p::new(Ais::new(api), unsupported_fs)))
                .map_err(|why| ("p2p (AIS)", why)),
            Vendor::Cuda => {
                if let Some(why) = self.gds_refused.get() {
                    return Err(("p2p (GDS)", why.clone()));
                }
                hipfile_backend_p2p::gds::possible()
                    .and_then(|()| Session::shared(&self.gds, LibCuFile::load))
                    .map(|session| SystemBackend::Gds(P2p::new(Gds::new(session), unsupported_fs)))
                    .map_err(|why| ("p2p (GDS)", self.gds_refused.get_or_init(|| why).clone()))
            }
        }
    }

    /// The p2p path of the in-process mock GPU (only it has no loaded runtime). It honours the
    /// mock HIP runtime's AIS switches, so the tool and Python answer as a C program over
    /// `libhipfile_mockhip.so` does: `HIPFILE_MOCK_AIS=absent` (no p2p path) and
    /// `HIPFILE_MOCK_AIS_STATUS=<errno>` (every p2p request fails with it; semantics §6).
    #[cfg(feature = "mock")]
    fn mock_direct(&self, unsupported_fs: bool) -> std::result::Result<SystemBackend, (&'static str, String)> {
        if hipfile_backend_mock::ais_absent() {
            return Err(("mock-p2p", "HIPFILE_MOCK_AIS=absent: the mock GPU has no AIS".to_owned()));
        }
        let faults = Faults::default();
        if let Some(errno) = hipfile_backend_mock::ais_failing_errno() {
            faults.fail_direct_path(errno);
        }
        // SAFETY: device memory of the in-process mock GPU is host memory; the driver only
        // gives a backend ranges inside device allocations.
        let engine = unsafe { MockEngine::host_addressable(Arc::new(faults)) };
        Ok(SystemBackend::MockP2p(P2p::new(engine, unsupported_fs)))
    }

    #[cfg(not(feature = "mock"))]
    fn mock_direct(&self, _unsupported_fs: bool) -> std::result::Result<SystemBackend, (&'static str, String)> {
        Err(("mock-p2p", "built without the mock GPU (cargo feature `mock`)".to_owned()))
    }

    fn bounce(&self, config: &Config) -> SystemBackend {
        SystemBackend::Bounce(Bounce::new(Arc::clone(&self.gpu), &config.bounce))
    }
}

impl Platform for SystemPlatform {
    type Backend = SystemBackend;

    fn gpu(&self) -> std::sync::Arc<dyn GpuRuntime> {
        self.gpu.clone()
    }

    fn backends(&self, config: &Config) -> Result<Vec<SystemBackend>> {
        if let Some(why) = &self.absent {
            return Err(unavailable(why.clone()));
        }
        Ok(match config.backend {
            BackendChoice::Auto => match self.direct(config) {
                Ok(direct) => vec![direct, self.bounce(config)],
                Err((name, why)) => {
                    // Said once: a slow path nobody mentions is what users of every peer
                    // complain about.
                    hipfile_core::log::log_once(&format!("{name} is not available: {why}; I/O goes through bounce"));
                    vec![self.bounce(config)]
                }
            },
            BackendChoice::P2p => match self.direct(config) {
                Ok(direct) => vec![direct],
                Err((name, why)) => {
                    return Err(refused(format!("HIPFILE_BACKEND=p2p: {name} is not available: {why}")));
                }
            },
            BackendChoice::Bounce => vec![self.bounce(config)],
            BackendChoice::Mock if self.is_mock() => {
                self.direct(config).ok().into_iter().chain([self.bounce(config)]).collect()
            }
            BackendChoice::Mock => {
                return Err(refused(format!(
                    "HIPFILE_BACKEND=mock is not available over {}: it needs the mock GPU or the mock HIP \
                     runtime (libhipfile_mockhip.so)",
                    self.description
                )));
            }
        })
    }

    fn capabilities(&self, config: &Config) -> Vec<Capability> {
        if let Some(why) = &self.absent {
            let none = |backend: &str, kind| Capability::new(backend, kind, Err(why.clone()));
            return vec![none("p2p", BackendKind::P2p), none("bounce", BackendKind::Bounce)];
        }
        let chosen = |family: &str| match config.backend {
            BackendChoice::Bounce if family == "p2p" => {
                Err("not used: the bounce backend was asked for (HIPFILE_BACKEND or --backend)".to_owned())
            }
            BackendChoice::P2p if family == "bounce" => {
                Err("not used: the p2p backend was asked for (HIPFILE_BACKEND or --backend)".to_owned())
            }
            _ => Ok(()),
        };
        let direct = match self.direct(config) {
            Ok(backend) => {
                let name = hipfile_core::Backend::name(&backend).to_owned();
                let off = (!config.p2p_enabled()).then(|| "off: HIPFILE_FORCE_COMPAT_MODE=true".to_owned());
                Capability::new(name, BackendKind::P2p, off.map_or(chosen("p2p"), Err))
            }
            Err((name, why)) => Capability::new(name, BackendKind::P2p, Err(why)),
        };
        let off = (!config.bounce_enabled()).then(|| "off: HIPFILE_ALLOW_COMPAT_MODE=false".to_owned());
        let bounce = Capability {
            notes: vec![hipfile_backend_bounce::reads_tails(&config.bounce)],
            ..Capability::new("bounce", BackendKind::Bounce, off.map_or(chosen("bounce"), Err))
        };
        vec![direct, bounce]
    }
}

/// [`unavailable`] for a backend the caller named explicitly and does not get: a warning.
fn refused(why: String) -> Error {
    hipfile_core::log::log_once_at(hipfile_core::log::Level::WARN, &why, || why.clone());
    unavailable(why)
}

/// Reports why the driver cannot open (C callers only see the code) and gives the code,
/// `hipFilePlatformNotSupported`.
fn unavailable(why: String) -> Error {
    // The caller gets the code; the reason is a warning where `HIPFILE_LOG` asks for one
    // (semantics §13): quiet by default, as the library always is.
    hipfile_core::log::log_once_at(hipfile_core::log::Level::WARN, &why, || why.clone());
    OpError::PlatformNotSupported.into()
}
