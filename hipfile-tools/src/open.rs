//! How each subcommand opens the library: the platform (a GPU runtime, else the mock GPU), a
//! driver that publishes its statistics, and the open driver.

/// The platform the tool runs on: the GPU runtime the machine has, else (or with `--backend
/// mock`) the mock GPU with `mock_devices` devices, and why there was no runtime.
pub(crate) fn platform(backend: Option<&str>, mock_devices: i32) -> (hipfile::SystemPlatform, Option<String>) {
    use hipfile::SystemPlatform as Sys;
    use hipfile::mock::MockGpu;
    match backend {
        Some("mock") => (Sys::over_mock(MockGpu::new(mock_devices)), None),
        _ => match Sys::discover() {
            Ok(platform) => (platform, None),
            Err(why) => (Sys::over_mock(MockGpu::new(mock_devices)), Some(why)),
        },
    }
}

/// A driver over `platform` that takes `HIPFILE_BACKEND` from `--backend` (else the
/// environment), with statistics another process can read (`hipfile stats`).
pub(crate) fn driver(
    platform: hipfile::SystemPlatform,
    backend: Option<String>,
) -> std::sync::Arc<hipfile::Driver<hipfile::SystemPlatform>> {
    let env = move |name: &str| match (name, &backend) {
        ("HIPFILE_BACKEND", Some(b)) => Some(b.clone()),
        _ => std::env::var(name).ok(),
    };
    std::sync::Arc::new(hipfile::Driver::with_env(platform, env).with_stats(hipfile::stats::published()))
}

/// An open driver of the tool (see [`platform`] and [`driver`]), what it runs on, and its GPU
/// runtime.
pub(crate) struct Opened {
    pub(crate) description: String,
    pub(crate) guard: hipfile::DriverGuard<hipfile::SystemPlatform>,
    pub(crate) gpu: std::sync::Arc<dyn hipfile::GpuRuntime>,
}

/// Opens the tool's driver on the best platform (the mock GPU with `mock_devices` devices where
/// there is no runtime, which it says on stderr unless `quiet`).
pub(crate) fn open_driver(backend: Option<&str>, mock_devices: i32, quiet: bool) -> Result<Opened, String> {
    let (platform, why_mock) = platform(backend, mock_devices);
    if why_mock.is_some() && !quiet {
        eprintln!("hipfile: no GPU runtime found; using the mock GPU (hipfile check says why)");
    }
    let description = platform.description().to_owned();
    let driver = driver(platform, backend.map(str::to_owned));
    let gpu = std::sync::Arc::clone(driver.gpu());
    let guard = hipfile::DriverGuard::open(driver).map_err(|e| format!("cannot open the driver: {e}"))?;
    Ok(Opened { description, guard, gpu })
}
