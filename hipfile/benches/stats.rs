//! What counting statistics costs (semantics §14): 8 threads reading a page-cached file into
//! (emulated) GPU memory through the system platform over the mock GPU, 4 KiB and 1 MiB per
//! call, with the statistics level 0 (off) and 3 (everything); and counting one request alone.
//!
//! One driver serves both levels (closed, the level staged with the profile-stats parameter,
//! reopened), so nothing but the level differs. Two runs of the same configuration still differ
//! by several percent on a shared 2-core machine, more than the cost being measured, so under
//! `cargo bench` the levels are also compared in pairs: 20 rounds, each timing both levels back
//! to back (in alternating order), and the median and quartiles of the ratio printed
//! (`paired ...`).

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hipfile::{Driver, DriverGuard, SizeParam, SystemPlatform};
use hipfile_backend_mock::MockGpu;

const THREADS: usize = 8;
const FILE: usize = 64 << 20;

/// The driver, a file, and device memory (1 MiB per thread).
struct Setup {
    driver: Arc<Driver<SystemPlatform>>,
    file: std::fs::File,
    dev: usize,
}

/// `iters` reads of `size` bytes by each of 8 threads at statistics `level`; the time they
/// took together.
fn run(s: &Setup, level: usize, size: usize, iters: u64) -> Duration {
    s.driver.set_size_parameter(SizeParam::ProfileStats, level).unwrap();
    let guard = DriverGuard::open(Arc::clone(&s.driver)).unwrap();
    assert_eq!(s.driver.stats().level() as usize, level);
    let handle = guard.register_file(&s.file).unwrap();
    let buffer = guard.register_buffer(s.dev, THREADS << 20).unwrap();
    let barrier = Barrier::new(THREADS + 1);
    std::thread::scope(|scope| {
        for t in 0..THREADS {
            let (handle, barrier, buffer) = (&handle, &barrier, &buffer);
            scope.spawn(move || {
                let slots = (FILE / size) as u64;
                barrier.wait();
                for i in 0..iters {
                    let offset = ((i * 7 + t as u64 * 13) % slots) * size as u64;
                    assert_eq!(handle.read(buffer, size, offset, (t << 20) as u64).unwrap(), size);
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

/// Level 3's time over level 0's, measured in pairs; prints the median and quartiles.
fn paired(name: &str, s: &Setup, size: usize, iters: u64) {
    run(s, 0, size, iters); // warm both
    run(s, 3, size, iters);
    let mut ratios: Vec<f64> = (0..20)
        .map(|round| {
            let (off, on) = if round % 2 == 0 {
                let off = run(s, 0, size, iters);
                (off, run(s, 3, size, iters))
            } else {
                let on = run(s, 3, size, iters);
                (run(s, 0, size, iters), on)
            };
            on.as_secs_f64() / off.as_secs_f64()
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

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench");
    std::fs::write(&path, (0..FILE).map(|i| (i >> 12) as u8).collect::<Vec<u8>>()).unwrap();
    let gpu = MockGpu::new(1);
    let s = Setup {
        driver: Arc::new(Driver::with_env(SystemPlatform::over_mock(Arc::clone(&gpu)), |_| None)),
        file: std::fs::File::open(&path).unwrap(),
        dev: gpu.malloc(THREADS << 20).unwrap(),
    };
    if std::env::args().any(|a| a == "--bench") {
        for (name, size, iters) in [("4KiB", 4096, 50_000), ("1MiB", 1 << 20, 2000)] {
            paired(name, &s, size, iters);
        }
    }
    // What counting one request costs by itself (the clock read twice, a few stores).
    let mut g = c.benchmark_group("count_one_request");
    for level in [0u8, 1, 3] {
        let stats = hipfile::stats::Stats::private();
        stats.set_level(level);
        g.bench_function(format!("level_{level}"), |b| {
            b.iter(|| {
                if let Some(t) = stats.start() {
                    let ok = Ok(4096);
                    stats.io(t, hipfile::Direction::Read, hipfile::stats::Path::Bounce, 0, 4096, false, &ok);
                }
            })
        });
    }
    g.finish();
    for (name, size) in [("read_4KiB_8_threads", 4096), ("read_1MiB_8_threads", 1 << 20)] {
        let mut g = c.benchmark_group(name);
        g.throughput(Throughput::Bytes((THREADS * size) as u64)).sample_size(40);
        for level in [0, 3] {
            g.bench_function(format!("level_{level}"), |b| b.iter_custom(|iters| run(&s, level, size, iters)));
        }
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
