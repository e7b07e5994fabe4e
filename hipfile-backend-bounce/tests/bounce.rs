//! The bounce backend on the mock GPU, through the driver: every path (page cache, `O_DIRECT`
//! for uncached data, buffered edges), unaligned offsets and sizes, end of file, copy failures,
//! concurrency, staging reuse and its limit, several devices, and a property test against a
//! reference model.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use hipfile_backend_bounce::Bounce;
use hipfile_backend_mock::{MockGpu, pattern};
use hipfile_core::{
    Backend, BounceSettings, Config, DeviceSpan, Direction, Driver, Error, FileHandle, GpuRuntime, HandleId, HipError,
    IoRequest, OpError, PageCache, Platform, Result,
};
use proptest::prelude::*;

const CHUNK: usize = 64 << 10;

/// The mock GPU with the bounce backend alone.
struct BouncePlatform {
    gpu: Arc<MockGpu>,
    settings: BounceSettings,
}

impl Platform for BouncePlatform {
    type Backend = Bounce<MockGpu>;

    fn gpu(&self) -> std::sync::Arc<dyn GpuRuntime> {
        self.gpu.clone()
    }

    fn backends(&self, _config: &Config) -> Result<Vec<Bounce<MockGpu>>> {
        Ok(vec![Bounce::new(Arc::clone(&self.gpu), &self.settings)])
    }
}

fn settings(threads: usize, memory_limit: usize) -> BounceSettings {
    BounceSettings { threads, chunk: CHUNK, memory_limit, ..BounceSettings::default() }
}

fn driver_with(gpu: &Arc<MockGpu>, settings: BounceSettings) -> Driver<BouncePlatform> {
    driver_env(gpu, settings, &[])
}

/// An open driver whose environment holds `vars` and nothing else.
fn driver_env(gpu: &Arc<MockGpu>, settings: BounceSettings, vars: &[(&str, &str)]) -> Driver<BouncePlatform> {
    let vars: Vec<(String, String)> = vars.iter().map(|&(k, v)| (k.to_owned(), v.to_owned())).collect();
    let driver = Driver::with_env(BouncePlatform { gpu: Arc::clone(gpu), settings }, move |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    });
    driver.open().unwrap();
    driver
}

/// The bounce backend's counter `name`.
fn counter(driver: &Driver<BouncePlatform>, name: &str) -> u64 {
    let all = driver.backend_counters();
    all[0].1.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap()
}

fn driver(gpu: &Arc<MockGpu>) -> Driver<BouncePlatform> {
    driver_with(gpu, settings(4, 64 << 20))
}

/// A file of `len` bytes of `pattern(len, seed)` (its directory, and the file), and a driver over a mock GPU of `devices`
/// devices with the file registered.
fn registered(
    len: usize,
    seed: u64,
    devices: i32,
) -> (Vec<u8>, tempfile::TempDir, File, Arc<MockGpu>, Driver<BouncePlatform>, HandleId) {
    let data = pattern(len, seed);
    let (dir, file) = file_with(&data);
    let gpu = MockGpu::new(devices);
    let driver = driver(&gpu);
    let h = driver.handle_register(&file).unwrap();
    (data, dir, file, gpu, driver, h)
}

/// A file on the temp directory's file system (ext4 here: O_DIRECT works) holding `data`.
fn file_with(data: &[u8]) -> (tempfile::TempDir, File) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, data).unwrap();
    (dir, std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap())
}

/// Drops the file's pages from the page cache, so the next read finds it cold.
fn evict(file: &File) {
    file.sync_all().unwrap();
    // SAFETY: a plain advice call on an open descriptor.
    let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
}

/// Which pages of the file's first `len` bytes are in the page cache.
fn cached_pages(file: &File, len: usize) -> Vec<bool> {
    // SAFETY: a read-only shared mapping of an open file, unmapped below.
    let map = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    assert_ne!(map, libc::MAP_FAILED);
    let mut vec = vec![0u8; len.div_ceil(4096)];
    // SAFETY: `vec` has one byte per page of the mapping.
    assert_eq!(unsafe { libc::mincore(map, len, vec.as_mut_ptr()) }, 0);
    // SAFETY: mapped above.
    unsafe { libc::munmap(map, len) };
    vec.iter().map(|b| b & 1 == 1).collect()
}

fn device_bytes(gpu: &MockGpu, addr: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0; len];
    gpu.read_device(addr, &mut out).unwrap();
    out
}

#[test]
fn warm_and_cold_reads_at_unaligned_offsets() {
    let (data, _dir, file, gpu, driver, h) = registered(3 * 1024 * 1024 + 777, 1, 1);
    let dev = gpu.malloc(data.len() + 8192).unwrap();
    for cold in [false, true] {
        for (offset, len, boff) in
            [(0, data.len(), 0), (1, data.len() - 1, 3), (4095, 2_000_000, 4096), (123_457, 65_536, 1)]
        {
            if cold {
                evict(&file);
            }
            gpu.memset(dev, 0, data.len() + 8192).unwrap();
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            let n = unsafe { driver.transfer(Direction::Read, h, dev, len, offset as i64, boff as i64) }.unwrap();
            assert_eq!(n, len, "cold {cold} offset {offset}");
            assert!(device_bytes(&gpu, dev + boff, len) == data[offset..offset + len], "cold {cold} offset {offset}");
        }
    }
}

#[test]
fn uncached_data_is_read_with_o_direct_and_stays_out_of_the_page_cache() {
    let len = 2 * 1024 * 1024;
    let data = pattern(len, 2);
    let (_dir, file) = file_with(&data);
    evict(&file);
    assert!(cached_pages(&file, len).iter().all(|c| !c), "eviction works here");
    let gpu = MockGpu::new(1);
    let driver = driver_env(&gpu, settings(4, 64 << 20), &[("HIPFILE_PAGE_CACHE", "bypass")]);
    let h = driver.handle_register(&file).unwrap();
    assert_eq!(driver.page_cache_rule(h).unwrap().to_string(), "bypass (set to bypass)");
    let dev = gpu.malloc(len).unwrap();
    // Unaligned at both ends: the edges go through the page cache, the interior does not.
    let (offset, size) = (1000, len - 3000);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, size, offset as i64, offset as i64) }.unwrap(), size);
    assert!(device_bytes(&gpu, dev + offset, size) == data[offset..offset + size]);
    let cached = cached_pages(&file, len);
    assert!(cached[0] && cached[(offset + size) / 4096], "edges are read buffered");
    // The interior was read direct: apart from the few pages the kernel reads ahead after a
    // buffered edge, none of its 510 pages went through the page cache.
    let interior_cached = cached[1..(offset + size) / 4096].iter().filter(|c| **c).count();
    assert!(interior_cached <= 8, "{interior_cached} interior pages cached");
    let counter = |name: &str| counter(&driver, name);
    let direct_chunks = counter("chunks_read_direct");
    assert!(direct_chunks > 0 && counter("chunks_read_cached") == 0, "the counters say so too");
    // Warm data is taken from the page cache.
    let (_dir2, warm) = file_with(&data);
    let h2 = driver.handle_register(&warm).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h2, dev, len, 0, 0) }.unwrap(), len);
    assert!(device_bytes(&gpu, dev, len) == data);
    assert!(counter("chunks_read_cached") > 0 && counter("chunks_read_direct") == direct_chunks);
}

/// How many pages `cached` says are resident.
fn resident(cached: &[bool]) -> usize {
    cached.iter().filter(|c| **c).count()
}

/// Reads `[offset, offset + size)` of the registered file `h`, whose bytes are `data`, into
/// `dev + boff` (zeroed first), and checks the bytes the device got.
#[allow(clippy::too_many_arguments)]
fn read_and_check(
    driver: &Driver<BouncePlatform>,
    gpu: &MockGpu,
    h: hipfile_core::HandleId,
    dev: usize,
    data: &[u8],
    offset: usize,
    size: usize,
    boff: usize,
) {
    gpu.memset(dev, 0, boff + size).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    let n = unsafe { driver.transfer(Direction::Read, h, dev, size, offset as i64, boff as i64) }.unwrap();
    assert_eq!(n, size, "offset {offset}");
    assert!(device_bytes(gpu, dev + boff, size) == data[offset..offset + size], "offset {offset}");
}

/// Evicts `file` and checks that none of its first `len` bytes are cached any more.
fn evict_all(file: &File, len: usize) {
    evict(file);
    assert_eq!(resident(&cached_pages(file, len)), 0, "eviction works here");
}

#[test]
fn cold_reads_of_a_file_that_fits_fill_the_page_cache() {
    let len = 4 << 20;
    let data = pattern(len, 40);
    let (_dir, file) = file_with(&data);
    let gpu = MockGpu::new(1);
    let dev = gpu.malloc(len + 8192).unwrap();
    // The default (auto, the limit half of MemAvailable: 4 MiB fits) and keep.
    for (vars, rule) in [
        (&[][..], "keep (auto: the file, 4.0 MiB, fits within"),
        (&[("HIPFILE_PAGE_CACHE", "keep")][..], "keep (set to keep)"),
    ] {
        let driver = driver_env(&gpu, settings(4, 64 << 20), vars);
        let h = driver.handle_register(&file).unwrap();
        let said = driver.page_cache_rule(h).unwrap().to_string();
        assert!(said.starts_with(rule), "{vars:?}: {said}");
        for (offset, size, boff) in
            [(0, len, 0), (1000, len - 3000, 1000), (4095, len - 4095, 1), (123_457, len - 200_000, 4096)]
        {
            evict_all(&file, len);
            read_and_check(&driver, &gpu, h, dev, &data, offset, size, boff);
            // (Almost) every page the read touched went through the page cache; the first
            // read touches all of them.
            let cached = cached_pages(&file, len);
            let touched = &cached[offset / 4096..(offset + size).div_ceil(4096)];
            let n = resident(touched);
            assert!(n * 10 >= touched.len() * 9, "{vars:?} offset {offset}: {n} of {} pages cached", touched.len());
        }
        assert_eq!(counter(&driver, "chunks_read_direct"), 0, "{vars:?}: nothing read O_DIRECT");
        assert!(counter(&driver, "chunks_read_cached") > 0, "{vars:?}");
        // Warm now: read again, from the page cache.
        read_and_check(&driver, &gpu, h, dev, &data, 0, len, 0);
        assert_eq!(counter(&driver, "chunks_read_direct"), 0, "{vars:?}");
    }
}

#[test]
fn auto_bypasses_a_file_over_the_limit_and_evicts_nothing_else() {
    let len = 4 << 20;
    let data = pattern(len, 41);
    let (_dir, file) = file_with(&data);
    // Another file, all of it in the page cache (it was just written, and is read here).
    let other_data = pattern(len, 42);
    let (_dir2, other) = file_with(&other_data);
    assert!(std::fs::read(format!("/proc/self/fd/{}", other.as_raw_fd())).unwrap() == other_data);
    assert_eq!(resident(&cached_pages(&other, len)), len / 4096, "the other file is cached");
    // A file of exactly the limit fits; 4 MiB does not.
    let small_data = pattern(1 << 20, 43);
    let (_dir3, small) = file_with(&small_data);
    let gpu = MockGpu::new(1);
    let driver = driver_env(&gpu, settings(4, 64 << 20), &[("HIPFILE_PAGE_CACHE_LIMIT_MIB", "1")]);
    let h = driver.handle_register(&file).unwrap();
    let hs = driver.handle_register(&small).unwrap();
    let said = driver.page_cache_rule(h).unwrap().to_string();
    assert!(said.starts_with("bypass (auto") && said.contains("4.0 MiB") && said.contains("1.0 MiB"), "{said}");
    let said = driver.page_cache_rule(hs).unwrap().to_string();
    assert!(said.starts_with("keep (auto") && said.contains("1.0 MiB"), "{said}");
    let dev = gpu.malloc(len).unwrap();
    evict_all(&file, len);
    let (offset, size) = (1000, len - 3000);
    read_and_check(&driver, &gpu, h, dev, &data, offset, size, offset);
    let cached = cached_pages(&file, len);
    // As under bypass: buffered edges and the few pages read ahead after them, nothing else.
    let interior_cached = resident(&cached[1..(offset + size) / 4096]);
    assert!(interior_cached <= 8, "{interior_cached} interior pages cached");
    let direct = counter(&driver, "chunks_read_direct");
    assert!(direct > 0 && counter(&driver, "chunks_read_cached") == 0, "read O_DIRECT");
    assert_eq!(resident(&cached_pages(&other, len)), len / 4096, "the other file is still all cached");
    // The file that fits is read through the page cache, and fills it.
    evict_all(&small, 1 << 20);
    read_and_check(&driver, &gpu, hs, dev, &small_data, 0, 1 << 20, 0);
    let n = resident(&cached_pages(&small, 1 << 20));
    assert!(n * 10 >= 256 * 9, "{n} of 256 pages cached");
    assert_eq!(counter(&driver, "chunks_read_direct"), direct, "nothing more read O_DIRECT");
}

#[test]
fn a_files_own_setting_overrides_the_drivers() {
    let len = 4 << 20;
    let pages = len / 4096;
    let data = pattern(len, 44);
    let (_dir, file) = file_with(&data);
    let gpu = MockGpu::new(1);
    let driver = driver_env(&gpu, settings(4, 64 << 20), &[("HIPFILE_PAGE_CACHE", "bypass")]);
    let h = driver.handle_register(&file).unwrap();
    let dev = gpu.malloc(len).unwrap();
    let rule = || driver.page_cache_rule(h).unwrap().to_string();
    assert_eq!(rule(), "bypass (set to bypass)");
    // The file keeps the page cache, though the driver bypasses it.
    driver.handle_set_page_cache(h, Some(PageCache::Keep)).unwrap();
    assert_eq!(rule(), "keep (set to keep)");
    evict_all(&file, len);
    read_and_check(&driver, &gpu, h, dev, &data, 0, len, 0);
    let n = resident(&cached_pages(&file, len));
    assert!(n * 10 >= pages * 9, "{n} of {pages} pages cached");
    assert_eq!(counter(&driver, "chunks_read_direct"), 0);
    // Its own auto: the file fits.
    driver.handle_set_page_cache(h, Some(PageCache::Auto)).unwrap();
    assert!(rule().starts_with("keep (auto"), "{}", rule());
    // Back to the driver's: the next cold read is direct again.
    driver.handle_set_page_cache(h, None).unwrap();
    assert_eq!(rule(), "bypass (set to bypass)");
    evict_all(&file, len);
    read_and_check(&driver, &gpu, h, dev, &data, 0, len, 0);
    let n = resident(&cached_pages(&file, len));
    assert!(n <= 8, "{n} pages cached");
    assert!(counter(&driver, "chunks_read_direct") > 0);
    // A handle the driver does not know.
    driver.handle_deregister(h).unwrap();
    assert_eq!(driver.handle_set_page_cache(h, Some(PageCache::Keep)), Err(OpError::HandleNotRegistered.into()));
    assert_eq!(driver.page_cache_rule(h).map(|_| ()), Err(OpError::HandleNotRegistered.into()));
}

#[test]
fn durable_writes_keep_or_bypass_the_page_cache() {
    let len = 4 << 20;
    let pages = len / 4096;
    let data = pattern(len, 45);
    let gpu = MockGpu::new(1);
    let dev = gpu.malloc(len).unwrap();
    gpu.write_device(dev, &data).unwrap();
    let back = gpu.malloc(len).unwrap();
    // (environment, the file's bytes before, evicted before the write, its pages kept after)
    type Vars = &'static [(&'static str, &'static str)];
    let cases: [(Vars, usize, bool, bool); 6] = [
        (&[("HIPFILE_PAGE_CACHE", "keep")], len, true, true),
        (&[], len, true, true),
        (&[], 0, true, true),
        (&[("HIPFILE_PAGE_CACHE", "bypass")], len, true, false),
        // O_DIRECT writes drop what the page cache held of their range.
        (&[("HIPFILE_PAGE_CACHE", "bypass")], len, false, false),
        // auto judges a write by the size the file will have after it.
        (&[("HIPFILE_PAGE_CACHE_LIMIT_MIB", "1")], 0, true, false),
    ];
    for (vars, before, cold, kept) in cases {
        let case = format!("{vars:?} before {before} cold {cold}");
        let (_dir, file) = file_with(&pattern(before, 46));
        if cold {
            evict(&file);
            assert_eq!(resident(&cached_pages(&file, len)), 0, "{case}: evicted");
        } else {
            assert_eq!(resident(&cached_pages(&file, before)), pages, "{case}: cached before");
        }
        let driver = driver_env(&gpu, settings(4, 64 << 20), vars);
        let h = driver.handle_register(&file).unwrap();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, len, 0, 0) }.unwrap(), len, "{case}");
        let n = resident(&cached_pages(&file, len));
        if kept {
            assert!(n * 10 >= pages * 9, "{case}: {n} of {pages} pages cached");
        } else {
            assert!(n <= 8, "{case}: {n} of {pages} pages cached");
        }
        let on_disk = std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
        assert!(on_disk == data, "{case}");
        evict_all(&file, len);
        read_and_check(&driver, &gpu, h, back, &data, 0, len, 0);
    }
}

#[test]
fn a_file_of_its_own_durability_overrides_the_drivers() {
    // Under bypass a durable write goes O_DIRECT (nothing left in the page cache) and a write
    // that need not be durable goes buffered (semantics §5): which one each file's writes are
    // shows in its pages.
    let len = 4 << 20;
    let data = pattern(len, 47);
    let gpu = MockGpu::new(1);
    let dev = gpu.malloc(len).unwrap();
    gpu.write_device(dev, &data).unwrap();
    let driver = driver_env(&gpu, settings(4, 64 << 20), &[("HIPFILE_PAGE_CACHE", "bypass")]);
    for (own, kept) in [(None, false), (Some(false), true), (Some(true), false)] {
        let (_dir, file) = file_with(&[]);
        let h = driver.handle_register(&file).unwrap();
        driver.handle_set_durable(h, own).unwrap();
        // SAFETY: mock device memory.
        assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, len, 0, 0) }.unwrap(), len);
        let n = resident(&cached_pages(&file, len));
        assert_eq!(n * 10 >= (len / 4096) * 9, kept, "{own:?}: {n} pages cached");
        assert!(std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap() == data, "{own:?}");
        driver.handle_deregister(h).unwrap();
        assert_eq!(driver.handle_set_durable(h, own), Err(OpError::HandleNotRegistered.into()));
    }
}

#[test]
fn reads_past_end_of_file_are_short_then_empty() {
    let (data, _dir, file, gpu, driver, h) = registered(1_000_003, 3, 1);
    let dev = gpu.malloc(4 << 20).unwrap();
    // A request split over several threads, most of them past the end.
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4 << 20, 0, 0) }.unwrap(), data.len());
    assert!(device_bytes(&gpu, dev, data.len()) == data);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4096, 999_999, 0) }.unwrap(), 4);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4096, data.len() as i64, 0) }.unwrap(), 0);
    evict(&file);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4 << 20, 4096, 0) }.unwrap(), data.len() - 4096);
}

#[test]
fn writes_land_whole_and_durable_at_unaligned_offsets() {
    let data = pattern(2_500_001, 4);
    let (_dir, file) = file_with(&[]);
    let gpu = MockGpu::new(1);
    for durable in [true, false] {
        let driver = driver_with(&gpu, BounceSettings { durable_writes: durable, ..settings(4, 64 << 20) });
        let h = driver.handle_register(&file).unwrap();
        let dev = gpu.malloc(data.len()).unwrap();
        gpu.write_device(dev, &data).unwrap();
        file.set_len(0).unwrap();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, data.len() - 5, 5, 5) }.unwrap(), data.len() - 5);
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, 5, 0, 0) }.unwrap(), 5);
        assert!(std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap() == data, "durable {durable}");
        gpu.free(dev).unwrap();
    }
}

#[test]
fn a_copy_failing_mid_transfer_fails_the_call() {
    let (data, _dir, _file, gpu, driver, h) = registered(1 << 20, 5, 1);
    let dev = gpu.malloc(1 << 20).unwrap();
    // A failed write may have written some chunks (it only never reports them): keep the
    // device holding the file's own bytes, so those chunks change nothing.
    gpu.write_device(dev, &data).unwrap();
    for nth in [1, 3, 9] {
        gpu.faults().fail_copy(nth, HipError::LAUNCH_FAILURE);
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { driver.transfer(Direction::Read, h, dev, 1 << 20, 0, 0) },
            Err(Error::Hip(HipError::LAUNCH_FAILURE)),
            "read {nth}"
        );
        gpu.faults().fail_copy(nth, HipError::LAUNCH_FAILURE);
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { driver.transfer(Direction::Write, h, dev, 1 << 20, 0, 0) },
            Err(Error::Hip(HipError::LAUNCH_FAILURE)),
            "write {nth}"
        );
    }
    gpu.faults().clear();
    // The staging survives a failure: the next calls work.
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 1 << 20, 0, 0) }.unwrap(), 1 << 20);
    assert!(device_bytes(&gpu, dev, 1 << 20) == data);
}

#[test]
fn staging_memory_is_pinned_once_and_bounded() {
    let data = pattern(4 << 20, 6);
    let (_dir, file) = file_with(&data);
    let gpu = MockGpu::new(1);
    // Reads' slots get at most three quarters of the limit: room for 6, though 4 threads would
    // take 12 (threads + 8); writes the rest: one lane (2 buffers), though 4 threads would like
    // 4 lanes.
    let limit = 4 * 2 * (CHUNK + 8192);
    let driver = driver_with(&gpu, settings(4, limit));
    let h = driver.handle_register(&file).unwrap();
    let dev = gpu.malloc(4 << 20).unwrap();
    // The slots were set up when the driver opened (`driver_with`), in the background, before
    // any transfer.
    let ready = (0..1000).any(|_| {
        gpu.pinned_allocations().get(&0) == Some(&6)
            || (std::thread::sleep(std::time::Duration::from_millis(5)), false).1
    });
    assert!(ready, "pinned ahead of the first transfer: {:?}", gpu.pinned_allocations());
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4 << 20, 0, 0) }.unwrap(), 4 << 20);
    assert_eq!(gpu.pinned_allocations().get(&0), Some(&6), "reads use the slots set up ahead");
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, 4 << 20, 0, 0) }.unwrap(), 4 << 20);
    let after_first = gpu.pinned_allocations();
    assert_eq!(after_first.get(&0), Some(&8), "and writes their lane");
    for _ in 0..10 {
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 4 << 20, 0, 0) }.unwrap(), 4 << 20);
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, 4 << 20, 0, 0) }.unwrap(), 4 << 20);
    }
    assert_eq!(gpu.pinned_allocations(), after_first, "staging reused, never re-pinned");
    assert!(device_bytes(&gpu, dev, 4 << 20) == data);
    // Dropping the driver frees the staging memory.
    drop(driver);
    assert!(gpu.pinned_allocations().is_empty());
}

#[test]
fn concurrent_calls_on_one_handle() {
    let (data, _dir, _file, gpu, driver, h) = registered(8 << 20, 7, 1);
    std::thread::scope(|s| {
        for t in 0..8usize {
            let (gpu, driver, data) = (&gpu, &driver, &data);
            s.spawn(move || {
                let dev = gpu.malloc(1 << 20).unwrap();
                for round in 0..4usize {
                    let offset = ((t * 4 + round) % 8) * (1 << 20) + 17;
                    let len = (1 << 20) - 17;
                    assert_eq!(
                        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                        unsafe { driver.transfer(Direction::Read, h, dev, len, offset as i64, 0) }.unwrap(),
                        len
                    );
                    assert!(device_bytes(gpu, dev, len) == data[offset..offset + len]);
                }
                gpu.free(dev).unwrap();
            });
        }
    });
}

#[test]
fn several_devices_and_the_callers_device_is_kept() {
    let (data, _dir, _file, gpu, driver, h) = registered(1 << 20, 8, 2);
    gpu.set_device(1).unwrap();
    let dev1 = gpu.malloc(1 << 20).unwrap();
    gpu.set_device(0).unwrap();
    let dev0 = gpu.malloc(1 << 20).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev1, 1 << 20, 0, 0) }.unwrap(), 1 << 20);
    assert_eq!(gpu.current_device(), Ok(0), "the caller's device is left as it was");
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev0, 1 << 20, 0, 0) }.unwrap(), 1 << 20);
    assert!(device_bytes(&gpu, dev1, 1 << 20) == data && device_bytes(&gpu, dev0, 1 << 20) == data);
    let pinned = gpu.pinned_allocations();
    assert!(pinned.get(&0).is_some_and(|&n| n > 0) && pinned.get(&1).is_some_and(|&n| n > 0), "{pinned:?}");
}

#[test]
fn the_driver_checks_come_first() {
    let gpu = MockGpu::new(1);
    let driver = driver(&gpu);
    let (_dir, file) = file_with(&pattern(4096, 9));
    let h = driver.handle_register(&file).unwrap();
    let dev = gpu.malloc(4096).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { driver.transfer(Direction::Read, h, dev, 8192, 0, 0) }, Err(OpError::InvalidValue.into()));
}

#[derive(Clone, Debug)]
enum Op {
    Read { offset: usize, len: usize, boff: usize },
    Write { offset: usize, len: usize, boff: usize },
    Evict,
}

fn op() -> impl Strategy<Value = Op> {
    let span = || (0usize..600_000, 0usize..300_000, 0usize..100_000);
    prop_oneof![
        4 => span().prop_map(|(offset, len, boff)| Op::Read { offset, len, boff }),
        3 => span().prop_map(|(offset, len, boff)| Op::Write { offset, len, boff }),
        1 => Just(Op::Evict),
    ]
}

const DEV_LEN: usize = 400_000;

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Every read and write against a reference model of the file and the device buffer. With
    /// 64 KiB chunks, calls spread over many stripes and chunks; with 1 MiB chunks, a read is
    /// one stripe whose pieces several threads read, and a write's chunks are too few to
    /// share (the caller's thread writes them alone).
    #[test]
    fn matches_the_reference_model(
        initial in 0usize..400_000,
        ops in prop::collection::vec(op(), 1..12),
        chunk in prop_oneof![Just(CHUNK), Just(1 << 20)],
    ) {
        let mut model_file = pattern(initial, 10);
        let mut model_dev = pattern(DEV_LEN, 11);
        let (_dir, file) = file_with(&model_file);
        let gpu = MockGpu::new(1);
        let driver = driver_with(&gpu, BounceSettings { chunk, ..settings(3, 64 << 20) });
        let h = driver.handle_register(&file).unwrap();
        let dev = gpu.malloc(DEV_LEN).unwrap();
        gpu.write_device(dev, &model_dev).unwrap();
        for op in ops {
            match op {
                Op::Read { offset, len, boff } => {
                    let len = len.min(DEV_LEN - boff);
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    let got = unsafe { driver.transfer(Direction::Read, h, dev, len, offset as i64, boff as i64) }.unwrap();
                    let expected = len.min(model_file.len().saturating_sub(offset));
                    prop_assert_eq!(got, expected);
                    if got > 0 {
                        model_dev[boff..boff + got].copy_from_slice(&model_file[offset..offset + got]);
                    }
                }
                Op::Write { offset, len, boff } => {
                    let len = len.min(DEV_LEN - boff);
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    prop_assert_eq!(unsafe { driver.transfer(Direction::Write, h, dev, len, offset as i64, boff as i64) }.unwrap(), len);
                    if model_file.len() < offset + len {
                        model_file.resize(offset + len, 0);
                    }
                    model_file[offset..offset + len].copy_from_slice(&model_dev[boff..boff + len]);
                }
                Op::Evict => evict(&file),
            }
            prop_assert!(device_bytes(&gpu, dev, DEV_LEN) == model_dev);
        }
        let on_disk = std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
        prop_assert!(on_disk == model_file);
    }
}

/// Runs one transfer on `bounce` directly (the driver hides its backends), into memory of
/// device 0.
fn transfer(bounce: &Bounce<MockGpu>, direction: Direction, file: &File, dev: usize, len: usize, offset: u64) -> usize {
    transfer_on(bounce, 0, direction, file, dev, len, offset)
}

/// As [`transfer`], into memory of `device`.
fn transfer_on(
    bounce: &Bounce<MockGpu>,
    device: i32,
    direction: Direction,
    file: &File,
    dev: usize,
    len: usize,
    offset: u64,
) -> usize {
    let handle = FileHandle::open(file.as_raw_fd()).unwrap();
    // SAFETY: `dev` is a mock device allocation of at least `len` bytes, alive for the call.
    let memory = unsafe { DeviceSpan::new(dev, len) };
    let req = IoRequest::new(direction, &handle, memory, device, offset);
    bounce.transfer(&req).unwrap()
}

#[test]
fn direct_io_goes_through_io_uring_with_registered_buffers_or_syscalls() {
    let len = 4 << 20;
    let data = pattern(len, 12);
    let (_dir, file) = file_with(&data);
    for io_uring in [true, false] {
        let gpu = MockGpu::new(1);
        let bounce = Bounce::new(Arc::clone(&gpu), &BounceSettings { io_uring, ..settings(2, 64 << 20) });
        let dev = gpu.malloc(len).unwrap();
        evict(&file);
        assert_eq!(transfer(&bounce, Direction::Read, &file, dev, len - 100, 100), len - 100);
        assert!(device_bytes(&gpu, dev, len - 100) == data[100..], "io_uring {io_uring}");
        // Durable writes send the aligned interior direct too: zero the file's range, write
        // the device's copy of it back, and the file is whole again.
        std::fs::write(format!("/proc/self/fd/{}", file.as_raw_fd()), &data[..100]).unwrap();
        assert_eq!(transfer(&bounce, Direction::Write, &file, dev, len - 100, 100), len - 100);
        let on_disk = std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
        assert!(on_disk == data, "io_uring {io_uring}");
        // io_uring serves direct transfers where this kernel allows it (root: no memlock limit).
        let ops = bounce.io_uring_ops();
        if io_uring {
            assert!(ops > 0, "no direct transfer went through io_uring");
        } else {
            assert_eq!(ops, 0);
        }
    }
}

/// `0-3,8` as CPU numbers.
fn cpu_list(list: &str) -> Vec<usize> {
    let mut cpus = Vec::new();
    for part in list.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => cpus.extend(a.parse::<usize>().unwrap()..=b.parse().unwrap()),
            None => cpus.push(part.parse().unwrap()),
        }
    }
    cpus
}

/// The names of this process's threads and the CPUs each may run on.
fn threads_and_cpus() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        let status = std::fs::read_to_string(task.path().join("status")).unwrap_or_default();
        let cpus = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("").trim();
        out.push((comm.trim().to_owned(), cpus.to_owned()));
    }
    out
}

/// A two-socket machine as sysfs shows it: node 0 with the even CPUs 0 and 2 and the mock's
/// device 0, node 1 with the odd CPUs 1 and 3 and device 1 (a 2-core machine has CPUs 0 and 1
/// of them, one per node, so that pinning really happens).
fn two_socket_sysfs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (node, cpus, device) in [(0, "0,2", "0000:10:00.0"), (1, "1,3", "0000:11:00.0")] {
        let n = dir.path().join(format!("devices/system/node/node{node}"));
        std::fs::create_dir_all(&n).unwrap();
        std::fs::write(n.join("cpulist"), format!("{cpus}\n")).unwrap();
        let d = dir.path().join("bus/pci/devices").join(device);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("numa_node"), format!("{node}\n")).unwrap();
    }
    dir
}

#[test]
fn each_device_has_its_own_workers_placed_on_its_node() {
    let gpu = MockGpu::new(2);
    let sysfs = two_socket_sysfs();
    let bounce = Bounce::with_sysfs(Arc::clone(&gpu), &settings(4, 64 << 20), sysfs.path().to_owned());
    assert_eq!(bounce.placement(0), (Some(0), vec![0, 2]));
    assert_eq!(bounce.placement(1), (Some(1), vec![1, 3]));
    let data = pattern(1 << 20, 21);
    let (_dir, file) = file_with(&data);
    gpu.set_device(1).unwrap();
    let dev1 = gpu.malloc(1 << 20).unwrap();
    gpu.set_device(0).unwrap();
    let dev0 = gpu.malloc(1 << 20).unwrap();
    // 64 KiB chunks: a request big enough to want helpers; each device gets a pool of its own,
    // its workers on its node's CPUs.
    for (device, dev) in [(0, dev0), (1, dev1)] {
        assert_eq!(transfer_on(&bounce, device, Direction::Read, &file, dev, 1 << 20, 0), 1 << 20);
        assert!(device_bytes(&gpu, dev, 1 << 20) == data);
    }
    assert_eq!(gpu.current_device(), Ok(0), "the caller's device is left as it was");
    bounce.wait_warm();
    // A worker places itself when it starts, which may be after the read it was asked to help
    // with has ended (the caller's thread reads too): looked at until then, 10 s at most.
    let placed = |threads: &[(String, String)]| {
        [(0, 0), (1, 1)].iter().all(|&(device, parity)| {
            let prefix = format!("hipfile-d{device}-");
            let mut workers = threads.iter().filter(|(name, _)| name.starts_with(&prefix)).peekable();
            workers.peek().is_some()
                && workers.all(|(_, cpus)| {
                    let allowed = cpu_list(cpus);
                    !allowed.is_empty() && allowed.iter().all(|c| c % 2 == parity)
                })
        })
    };
    let since = std::time::Instant::now();
    let mut threads = threads_and_cpus();
    while !placed(&threads) && since.elapsed().as_secs() < 10 {
        std::thread::sleep(std::time::Duration::from_millis(5));
        threads = threads_and_cpus();
    }
    assert!(placed(&threads), "each device's workers on its node's CPUs: {threads:?}");
}

#[test]
fn without_a_topology_nothing_is_placed() {
    let gpu = MockGpu::new(2);
    let none = tempfile::tempdir().unwrap();
    let bounce = Bounce::with_sysfs(Arc::clone(&gpu), &settings(4, 64 << 20), none.path().to_owned());
    assert_eq!(bounce.placement(1), (None, vec![]));
    // The mock's PCI addresses are made up: the real sysfs does not know them either.
    let bounce = Bounce::new(Arc::clone(&gpu), &settings(4, 64 << 20));
    assert_eq!(bounce.placement(1), (None, vec![]));
}

#[test]
fn many_requests_together_each_get_their_own_result() {
    // Reads and writes of several sizes, one past the end of the file, one from a file opened
    // write-only (EBADF): each request's bytes or error, as if it had run alone.
    let gpu = MockGpu::new(1);
    let bounce = Bounce::new(Arc::clone(&gpu), &settings(4, 64 << 20));
    let data = pattern(4 << 20, 31);
    let (_dir, file) = file_with(&data);
    let handle = FileHandle::open(file.as_raw_fd()).unwrap();
    let dev = gpu.malloc(8 << 20).unwrap();
    gpu.write_device(dev + (4 << 20), &pattern(1 << 20, 32)).unwrap();
    // SAFETY: every span asked for below lies inside `dev`, alive for the test.
    let span = |at: usize, len: usize| unsafe { DeviceSpan::new(dev + at, len) };
    let reads = [(0usize, 3 * CHUNK + 5), (1 << 20, CHUNK), ((4 << 20) - 1000, 4096), (2 << 20, 1 << 20)];
    let mut reqs: Vec<IoRequest<'_>> =
        reads.iter().map(|&(at, len)| IoRequest::new(Direction::Read, &handle, span(at, len), 0, at as u64)).collect();
    let write_at = (3 << 20) + 123;
    reqs.push(IoRequest::new(Direction::Write, &handle, span(4 << 20, 1 << 20), 0, write_at as u64));
    let write_only =
        std::fs::OpenOptions::new().write(true).open(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
    let write_only = FileHandle::open(write_only.as_raw_fd()).unwrap();
    reqs[3] = IoRequest::new(Direction::Read, &write_only, span(2 << 20, 1 << 20), 0, 2 << 20);
    let refs: Vec<&IoRequest<'_>> = reqs.iter().collect();
    let results = bounce.transfer_many(&refs);
    assert_eq!(results[..3], [Ok(3 * CHUNK + 5), Ok(CHUNK), Ok(1000)]);
    assert_eq!(results[3], Err(Error::Os(libc::EBADF)));
    assert_eq!(results[4], Ok(1 << 20));
    for &(at, len) in &reads[..2] {
        assert!(device_bytes(&gpu, dev + at, len) == data[at..at + len]);
    }
    let on_disk = std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap();
    assert!(on_disk[write_at..write_at + (1 << 20)] == pattern(1 << 20, 32)[..], "the write landed");
}

/// A thread with a context of its own current (a CUDA program's `cuCtxCreate`, emulated by the
/// mock: the library's streams refuse its work) reads and writes through the primary context,
/// and has its own context back after each call (semantics §4).
#[test]
fn a_thread_on_a_context_of_its_own_is_served_and_gets_it_back() {
    let (data, _dir, _file, gpu, driver, h) = registered(3 * 1024 * 1024 + 777, 1, 1);
    let dev = gpu.malloc(data.len()).unwrap();
    gpu.enter_own_context();
    // SAFETY: mock device memory.
    let n = unsafe { driver.transfer(Direction::Read, h, dev, data.len(), 0, 0) }.unwrap();
    assert_eq!(n, data.len());
    assert!(gpu.has_own_context(), "the thread's context given back");
    assert!(device_bytes(&gpu, dev, data.len()) == data);
    // SAFETY: mock device memory.
    let n = unsafe { driver.transfer(Direction::Write, h, dev, 1 << 20, 4096, 0) }.unwrap();
    assert_eq!(n, 1 << 20);
    assert!(gpu.has_own_context());
    // The emulation refuses the library's streams from that context, so the scope is what
    // served the calls above.
    let stream = gpu.stream_create().unwrap();
    assert_eq!(gpu.launch_host_func(stream, Box::new(|| ())), Err(hipfile_core::HipError::INVALID_HANDLE));
}
