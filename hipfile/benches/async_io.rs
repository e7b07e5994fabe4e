//! Batches and stream-ordered operations against synchronous calls, CPU only: the system
//! platform over the mock GPU (the real bounce path), a page-cached file.
//! - 128 random 1 MiB reads: synchronous calls from one thread, one batch of 128, and 128
//!   stream-ordered reads on one stream (each waited for at the end);
//! - one 4 KiB read: synchronous, as a batch of one, on a stream (the per-operation cost).

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hipfile::{BatchEntry, Direction, Driver, DriverGuard, GpuRuntime, SystemPlatform};
use hipfile_backend_mock::MockGpu;

const FILE: usize = 256 << 20;
const IO: usize = 1 << 20;
const COUNT: usize = 128;

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench");
    std::fs::write(&path, (0..FILE).map(|i| (i >> 12) as u8).collect::<Vec<u8>>()).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let gpu = MockGpu::new(1);
    let driver = Driver::with_env(SystemPlatform::over_mock(Arc::clone(&gpu)), |name| {
        (name == "HIPFILE_BACKEND").then(|| "bounce".to_string())
    });
    let guard = DriverGuard::open(Arc::new(driver)).unwrap();
    let registered = guard.register_file(&file).unwrap();
    let dev = gpu.malloc(COUNT * IO).unwrap();
    let buffer = guard.register_buffer(dev, COUNT * IO).unwrap();
    let stream = gpu.stream_create().unwrap();
    // Random distinct 1 MiB slots of the file, each read into its own part of the buffer.
    let mut x: u64 = 11;
    let offsets: Vec<u64> = (0..COUNT)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % (FILE / IO) as u64) * IO as u64
        })
        .collect();
    let entries: Vec<BatchEntry> = offsets
        .iter()
        .enumerate()
        .map(|(i, &o)| BatchEntry {
            direction: Direction::Read,
            handle: registered.id(),
            buffer_base: dev,
            buffer_offset: (i * IO) as i64,
            file_offset: o as i64,
            size: IO,
            cookie: i,
        })
        .collect();
    let batch = guard.batch(COUNT).unwrap();
    registered.read_all(&buffer, COUNT * IO, 0).unwrap(); // warm the device pages and the staging

    let mut g = c.benchmark_group("random_128x1MiB");
    g.throughput(Throughput::Bytes((COUNT * IO) as u64)).sample_size(20);
    g.bench_function("sync_1_thread", |b| {
        b.iter(|| {
            for (i, &o) in offsets.iter().enumerate() {
                assert_eq!(registered.read(&buffer, IO, o, (i * IO) as u64).unwrap(), IO);
            }
        })
    });
    g.bench_function("batch_128", |b| {
        b.iter(|| {
            // SAFETY: the entries name the registered device memory, no host memory.
            unsafe { batch.submit(&entries) }.unwrap();
            assert_eq!(batch.status(COUNT, COUNT, None).unwrap().len(), COUNT);
        })
    });
    g.bench_function("stream_128", |b| {
        b.iter(|| {
            let ios: Vec<_> = offsets
                .iter()
                .enumerate()
                .map(|(i, &o)| registered.read_async(&buffer, IO, o, (i * IO) as u64, stream).unwrap())
                .collect();
            gpu.stream_synchronize(stream).unwrap();
            assert!(ios.iter().all(|io| io.result() == Some(IO as i64)));
        })
    });
    g.finish();

    let mut g = c.benchmark_group("one_4KiB");
    g.throughput(Throughput::Bytes(4096));
    g.bench_function("sync", |b| b.iter(|| assert_eq!(registered.read(&buffer, 4096, 0, 0).unwrap(), 4096)));
    g.bench_function("batch_of_1", |b| {
        b.iter(|| {
            // SAFETY: as above.
            unsafe { batch.submit(&entries[..1]) }.unwrap();
            batch.status(1, 1, None).unwrap();
        })
    });
    g.bench_function("stream", |b| {
        b.iter(|| {
            let io = registered.read_async(&buffer, 4096, 0, 0, stream).unwrap();
            gpu.stream_synchronize(stream).unwrap();
            assert_eq!(io.result(), Some(4096));
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
