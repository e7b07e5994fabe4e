//! The mock data path against plain `pread` into the same emulated device memory:
//! - a 256 MiB page-cached file read through the driver vs a `pread` loop;
//! - one 4 KiB read through the driver vs one bare `pread` (the per-call overhead).

use std::hint::black_box;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use hipfile_backend_mock::{MockGpu, MockPlatform};
use hipfile_core::Direction;
use hipfile_core::Driver;

const BIG: usize = 256 << 20;

fn pread_loop(fd: i32, addr: usize, len: usize) -> usize {
    let mut done = 0;
    while done < len {
        // SAFETY: [addr, addr + len) is a live MockGpu allocation (host memory).
        let n = unsafe { libc::pread(fd, (addr + done) as *mut libc::c_void, len - done, done as libc::off_t) };
        assert!(n > 0, "pread failed or hit EOF early");
        done += n as usize;
    }
    done
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bench");
    std::fs::write(&path, (0..BIG).map(|i| (i >> 12) as u8).collect::<Vec<u8>>()).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let fd = file.as_raw_fd();

    let gpu = MockGpu::new(1);
    let driver = Driver::with_env(MockPlatform::new(Arc::clone(&gpu)), |_| None);
    let dev = gpu.malloc(BIG).unwrap();
    driver.buf_register(dev, BIG, 0).unwrap();
    let h = driver.handle_register(&file).unwrap();
    pread_loop(fd, dev, BIG); // warm the page cache and the device pages

    let mut g = c.benchmark_group("read_256MiB_cached");
    g.throughput(Throughput::Bytes(BIG as u64)).sample_size(20);
    g.bench_function("pread_loop", |b| b.iter(|| black_box(pread_loop(fd, dev, BIG))));
    g.bench_function("driver", |b| {
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        b.iter(|| assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, BIG, 0, 0) }.unwrap(), BIG))
    });
    g.finish();

    let mut g = c.benchmark_group("read_4KiB_cached");
    g.throughput(Throughput::Bytes(4096));
    g.bench_function("pread", |b| b.iter(|| black_box(pread_loop(fd, dev, 4096))));
    g.bench_function("driver", |b| {
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        b.iter(|| assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4096, 0, 0) }.unwrap(), 4096))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
