//! What counting statistics costs (semantics §14): 8 threads reading a page-cached file into
//! (emulated) GPU memory through the system platform over the mock GPU, 4 KiB and 1 MiB per
//! call, with `HIPFILE_STATS_LEVEL` 0 (off) and 3 (everything).
//!
//! Two runs of the same configuration differ by several percent on a shared 2-core machine, more
//! than the cost being measured, so under `cargo bench` the levels are also compared in pairs:
//! 20 rounds, each timing both levels back to back (in alternating order), and the median and
//! quartiles of the ratio printed (`paired ...`).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hipfile::{Driver, DriverGuard, SystemPlatform};
use hipfile_backend_mock::MockGpu;

const THREADS: usize = 8;
const FILE: usize = 64 << 20;

/// One driver at one statistics level, a file, and device memory (1 MiB per thread, shared by
/// the drivers).
struct Setup {
    guard: DriverGuard<SystemPlatform>,
    file: std::fs::File,
    dev: usize,
}

fn setup(gpu: &Arc<MockGpu>, path: &std::path::Path, level: &'static str, dev: usize) -> Setup {
    let driver = Driver::with_env(SystemPlatform::over_mock(Arc::clone(gpu)), move |name| {
        (name == "HIPFILE_STATS_LEVEL").then(|| level.to_string())
    });
    let guard = DriverGuard::open(Arc::new(driver)).unwrap();
    let file = std::fs::File::open(path).unwrap();
    Setup { guard, file, dev }
}

/// `iters` reads of `size` bytes by each of 8 threads; the time they took together.
fn run(s: &Setup, size: usize, iters: u64) -> Duration {
    let handle = s.guard.register_file(&s.file).unwrap();
    let barrier = Barrier::new(THREADS + 1);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (handle, barrier) = (&handle, &barrier);
            scope.spawn(move || {
                let slots = (FILE / size) as u64;
                barrier.wait();
                for i in 0..iters {
                    let offset = ((i * 7 + t as u64 * 13) % slots) * size as u64;
                    assert_eq!(handle.read(s.dev, size, offset, (t << 20) as u64).unwrap(), size);
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    })
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench");
    std::fs::write(&path, (0..FILE).map(|i| (i >> 12) as u8).collect::<Vec<u8>>()).unwrap();
    let gpu = MockGpu::new(1);
    let dev = gpu.malloc(THREADS << 20).unwrap();
    let levels = [("level_0", setup(&gpu, &path, "0", dev)), ("level_3", setup(&gpu, &path, "3", dev))];
    if std::env::args().any(|a| a == "--bench") {
        for (name, size, iters) in [("4KiB", 4096, 20_000), ("1MiB", 1 << 20, 200)] {
            paired(name, &levels[0].1, &levels[1].1, size, iters);
        }
    }
    for (name, size) in [("read_4KiB_8_threads", 4096), ("read_1MiB_8_threads", 1 << 20)] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes((THREADS * size) as u64)).sample_size(40);
        for (level, s) in &levels {
            g.bench_function(*level, |b| b.iter_custom(|iters| run(s, size, iters)));
        }
        g.finish();
    }
}

/// Level 3's time over level 0's, measured in pairs; prints the median and quartiles.
fn paired(name: &str, off: &Setup, on: &Setup, size: usize, iters: u64) {
    run(off, size, iters); // warm both
    run(on, size, iters);
    let mut ratios: Vec<f64> = (0..20)
        .map(|round| {
            let (a, b) = if round % 2 == 0 {
                let a = run(off, size, iters);
                (a, run(on, size, iters))
            } else {
                let b = run(on, size, iters);
                (run(off, size, iters), b)
            };
            b.as_secs_f64() / a.as_secs_f64()
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    let q = |p: usize| ratios[(ratios.len() - 1) * p / 4];
    println!(
        "paired {name} x {THREADS} threads: level 3 / level 0 time = {:.4} (quartiles {:.4} - {:.4})",
        q(2),
        q(1),
        q(3)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
