//! The main job for now: write a file, read it into (mock) GPU memory through hipfile-rs,
//! verify every byte, and print the throughput.
//!
//! `cargo run --release -p hipfile-backend-mock --example roundtrip [-- SIZE_MIB [DIR]]`
//! (default 256 MiB in the system temp directory). `HIPFILE_BACKEND` and the other
//! `HIPFILE_*` variables apply.

use std::sync::Arc;
use std::time::Instant;

use hipfile_backend_mock::{MockGpu, MockPlatform};
use hipfile_core::{Driver, DriverGuard};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mib: usize = args.next().map_or(Ok(256), |a| a.parse())?;
    let dir = args.next().map_or_else(std::env::temp_dir, Into::into);
    let size = mib << 20;
    let path = dir.join(format!("hipfile-roundtrip-{}", std::process::id()));
    let data: Vec<u8> = (0..size).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();

    let gpu = MockGpu::new(1);
    let driver = Arc::new(Driver::new(MockPlatform::new(Arc::clone(&gpu))));
    let guard = DriverGuard::open(driver)?;
    println!(
        "backend: mock GPU (no GPU runtime is loaded yet); data paths: {}",
        guard.driver().backend_names().join(", ")
    );

    let dev = gpu.malloc(size)?;
    let buffer = guard.register_buffer(dev, size)?;
    gpu.write_device(dev, &data)?;

    let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path)?;
    let result = (|| -> Result<(), Box<dyn std::error::Error>> {
        let handle = guard.register_file(&file)?;
        let t = Instant::now();
        handle.write_all(&buffer, size, 0)?;
        let write_s = t.elapsed().as_secs_f64();

        gpu.memset(dev, 0, size)?;
        let t = Instant::now();
        let n = handle.read_all(&buffer, size, 0)?;
        let read_s = t.elapsed().as_secs_f64();

        let mut back = vec![0u8; size];
        gpu.read_device(dev, &mut back)?;
        if n != size || back != data {
            return Err(format!("verification failed: read {n} of {size} bytes, contents differ").into());
        }
        let gbps = |s: f64| size as f64 / s / 1e9;
        println!("write {mib} MiB:               {:.2} GB/s", gbps(write_s));
        println!("read  {mib} MiB (page cache):  {:.2} GB/s", gbps(read_s));
        println!("verified {size} bytes: OK");
        Ok(())
    })();
    std::fs::remove_file(&path)?;
    result
}
