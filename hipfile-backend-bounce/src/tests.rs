//! The crate's unit tests (kept apart from lib.rs).

use super::*;
use crate::test_file::TestFile;
use crate::write::alone_chunk;
use std::os::fd::AsRawFd;

#[test]
fn a_request_alone_is_cut_into_two_chunks_per_thread_within_bounds() {
    const MIB: usize = 1 << 20;
    assert_eq!(alone_chunk(4 * MIB, 64 * MIB, 16), 2 * MIB);
    assert_eq!(alone_chunk(4 * MIB, 2048 * MIB, 16), 4 * MIB, "large requests keep the chunk");
    assert_eq!(alone_chunk(4 * MIB, 4 * MIB, 16), 256 << 10, "never below 256 KiB");
    assert_eq!(alone_chunk(4 * MIB, MIB, 16), 256 << 10);
    assert_eq!(alone_chunk(256 << 10, 64 * MIB, 16), 256 << 10, "nor above the configured chunk");
    assert_eq!(alone_chunk(4 * MIB, 40 * MIB, 8), 2560 << 10);
}

#[test]
fn a_request_counts_its_device_busy_before_choosing_its_chunk() {
    use hipfile_backend_mock::MockGpu;
    let gpu = MockGpu::new(2);
    let settings = BounceSettings { threads: 2, chunk: 4 << 20, io_uring: false, ..BounceSettings::default() };
    let bounce = Bounce::new(Arc::clone(&gpu), &settings);
    let file = TestFile::new(&vec![7u8; 32 << 20]);
    let handle = &file.handle;
    gpu.set_device(1).unwrap();
    let dev = gpu.malloc(32 << 20).unwrap();
    gpu.set_device(0).unwrap();
    // SAFETY: the allocation above.
    let memory = unsafe { DeviceSpan::new(dev, 32 << 20) };
    let req = IoRequest::new(Direction::Read, handle, memory, 1, 0);
    let chunks = || bounce.inner.profile.chunks.load(Ordering::Relaxed);
    assert_eq!(bounce.transfer(&req), Ok(32 << 20));
    assert_eq!(chunks(), 8, "alone: 4 MiB chunks");
    // Device 0 busy with another request: device 1's request shares the budget.
    let dev0 = bounce.inner.device(0).unwrap();
    let _elsewhere = Busy::new(&dev0.in_flight, &bounce.inner.busy);
    assert_eq!(bounce.transfer(&req), Ok(32 << 20));
    assert_eq!(chunks(), 8 + 16, "two devices busy: 2 MiB chunks");
}

#[test]
fn a_read_through_stripes_copies_once_per_stripe() {
    use hipfile_backend_mock::MockGpu;
    let gpu = MockGpu::new(1);
    let settings = BounceSettings { threads: 4, chunk: 4 << 20, io_uring: false, ..BounceSettings::default() };
    let bounce = Bounce::new(Arc::clone(&gpu), &settings);
    let data: Vec<u8> = (0..8usize << 20).map(|i| (i % 251) as u8).collect();
    let file = TestFile::new(&data);
    let handle = &file.handle;
    let dev = gpu.malloc(8 << 20).unwrap();
    // SAFETY: the allocation above.
    let memory = unsafe { DeviceSpan::new(dev, 8 << 20) };
    let req = IoRequest::new(Direction::Read, handle, memory, 0, 0);
    bounce.wait_warm();
    let copies = gpu.faults().copy_count();
    assert_eq!(bounce.transfer(&req), Ok(8 << 20));
    // Alone, 8 MiB is cut into eight stripes of 1 MiB, each read in pieces of 256 KiB (a
    // quarter, one per thread) and copied once.
    assert_eq!(gpu.faults().copy_count() - copies, 8);
    assert_eq!(bounce.inner.profile.chunks.load(Ordering::Relaxed), 8);
    let mut back = vec![0u8; 8 << 20];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back == data);
    // An empty request (the driver answers those itself; the backend too, at once).
    // SAFETY: the allocation above.
    let empty = IoRequest::new(Direction::Read, handle, unsafe { DeviceSpan::new(dev, 0) }, 0, 0);
    assert_eq!(bounce.transfer_many(&[&empty, &req]), vec![Ok(0), Ok(8 << 20)]);
}

/// The last `threads x cache` bytes of a read are demoted out of the readers' caches, and
/// nothing else; the bytes are the file's. Both ways: `cldemote` (where the processor has
/// none, the instruction does nothing: the test runs the same path) and streaming stores.
#[test]
fn a_reads_tail_is_demoted() {
    a_reads_tail_is_demoted_by(hipfile_core::Demote::Auto);
    if cfg!(target_arch = "x86_64") {
        a_reads_tail_is_demoted_by(hipfile_core::Demote::Stream);
    }
}

fn a_reads_tail_is_demoted_by(mode: hipfile_core::Demote) {
    use hipfile_backend_mock::MockGpu;
    let gpu = MockGpu::new(1);
    let settings =
        BounceSettings { threads: 4, chunk: 4 << 20, io_uring: false, demote: mode, ..BounceSettings::default() };
    let can = |_: &std::path::Path, mode| Demoter::with_cache(mode, 1 << 20);
    let bounce = Bounce::with_demote(Arc::clone(&gpu), &settings, PathBuf::from("/sys"), can);
    let data: Vec<u8> = (0..8usize << 20).map(|i| (i % 241) as u8).collect();
    let file = TestFile::new(&data);
    let handle = &file.handle;
    let dev = gpu.malloc(8 << 20).unwrap();
    let demoted = || bounce.inner.profile.demoted_bytes.load(Ordering::Relaxed);
    // SAFETY: the allocation above.
    let read =
        |len: usize, at: u64| IoRequest::new(Direction::Read, handle, unsafe { DeviceSpan::new(dev, len) }, 0, at);
    // Eight stripes of 1 MiB read by 4 threads: what their caches hold (4 x 1 MiB) is the
    // last four stripes.
    assert_eq!(bounce.transfer(&read(8 << 20, 0)), Ok(8 << 20));
    assert_eq!(demoted(), 4 << 20);
    let mut back = vec![0u8; 8 << 20];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back == data);
    // A read shorter than the tail is demoted whole, up to the end of the file.
    assert_eq!(bounce.transfer(&read(2 << 20, (7 << 20) + 5)), Ok((1 << 20) - 5));
    assert_eq!(demoted(), (5 << 20) - 5);
    gpu.read_device(dev, &mut back[..(1 << 20) - 5]).unwrap();
    assert!(back[..(1 << 20) - 5] == data[(7 << 20) + 5..]);
    // `HIPFILE_BOUNCE_DEMOTE=false`: nothing is, though the processor could.
    let off = BounceSettings { demote: hipfile_core::Demote::Off, ..settings };
    let bounce = Bounce::with_demote(Arc::clone(&gpu), &off, PathBuf::from("/sys"), can);
    assert_eq!(bounce.transfer(&read(8 << 20, 0)), Ok(8 << 20));
    assert_eq!(bounce.inner.profile.demoted_bytes.load(Ordering::Relaxed), 0);
}

/// A batch of small reads shares slots, and the reads whose memory meets on the device
/// share copies: 32 random 64 KiB blocks into one buffer's consecutive 64 KiB, 8 into
/// another allocation's every other 64 KiB, and one cut short by the end of the file.
#[test]
fn a_batch_of_small_reads_shares_stripes_and_copies() {
    use hipfile_backend_mock::MockGpu;
    const BLOCK: usize = 64 << 10;
    let gpu = MockGpu::new(1);
    let settings = BounceSettings { threads: 4, chunk: 1 << 20, io_uring: false, ..BounceSettings::default() };
    let bounce = Bounce::new(Arc::clone(&gpu), &settings);
    let len = 64 * BLOCK + 1000;
    let data: Vec<u8> = (0..len).map(|i| (i * 7 % 253) as u8).collect();
    let file = TestFile::new(&data);
    let handle = &file.handle;
    let (one, other) = (gpu.malloc(33 * BLOCK).unwrap(), gpu.malloc(16 * BLOCK).unwrap());
    // SAFETY: the allocations above, alive until `gpu` goes.
    let one_span = unsafe { DeviceSpan::within(one, 33 * BLOCK, one + 33 * BLOCK) };
    // SAFETY: as above.
    let other_span = unsafe { DeviceSpan::new(other, 16 * BLOCK) };
    let block = |i: usize| (i * 37 + 5) % 64; // a file block for each request
    let mut reqs: Vec<IoRequest<'_>> = (0..32)
        .map(|i| IoRequest::new(Direction::Read, handle, one_span.part(i * BLOCK, BLOCK), 0, (block(i) * BLOCK) as u64))
        .collect();
    reqs.extend((0..8).map(|i| {
        let memory = other_span.part(2 * i * BLOCK, BLOCK);
        IoRequest::new(Direction::Read, handle, memory, 0, (block(40 + i) * BLOCK) as u64)
    }));
    // The last block of the file and its 1000 bytes past the blocks: 1000 bytes moved.
    reqs.push(IoRequest::new(Direction::Read, handle, one_span.part(32 * BLOCK, BLOCK), 0, (64 * BLOCK) as u64));
    bounce.wait_warm();
    let refs: Vec<&IoRequest<'_>> = reqs.iter().collect();
    let mut expected = vec![Ok(BLOCK); 40];
    expected.push(Ok(1000));
    // Warm (buffered pieces), then cold (each part whole with O_DIRECT, where the file
    // system allows it: each lies in its slot congruent to its file offset).
    for cold in [false, true] {
        if cold {
            file.file.sync_all().unwrap();
            // SAFETY: a plain advice call on an open descriptor.
            assert_eq!(unsafe { libc::posix_fadvise(file.file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
        }
        gpu.memset(one, 0, 33 * BLOCK).unwrap();
        gpu.memset(other, 0, 16 * BLOCK).unwrap();
        let (copies, chunks) = (gpu.faults().copy_count(), bounce.inner.profile.chunks.load(Ordering::Relaxed));
        assert_eq!(bounce.transfer_many(&refs), expected, "cold {cold}");
        // 2.6 MiB alone on the device: stripes of 1 MiB (the chunk), 16 blocks each. The
        // first two hold 16 of `one`'s blocks each, a copy apiece; the third 8 blocks of
        // `other` (8 copies) and the short one (1 copy).
        assert_eq!(gpu.faults().copy_count() - copies, 2 + 8 + 1, "cold {cold}");
        let parts = bounce.inner.profile.chunks.load(Ordering::Relaxed) - chunks;
        assert_eq!(parts, 41, "a part per request");
        let mut back = vec![0u8; 33 * BLOCK];
        gpu.read_device(one, &mut back).unwrap();
        for i in 0..32 {
            assert!(back[i * BLOCK..][..BLOCK] == data[block(i) * BLOCK..][..BLOCK], "cold {cold} block {i}");
        }
        assert!(back[32 * BLOCK..][..1000] == data[64 * BLOCK..], "cold {cold}");
        let mut back = vec![0u8; 16 * BLOCK];
        gpu.read_device(other, &mut back).unwrap();
        for i in 0..8 {
            let j = 40 + i;
            assert!(back[2 * i * BLOCK..][..BLOCK] == data[block(j) * BLOCK..][..BLOCK], "cold {cold} block {j}");
        }
    }
    let direct = bounce.inner.reads.direct_chunks.load(Ordering::Relaxed);
    assert!(direct == 0 || direct >= 40, "cold parts read whole with O_DIRECT where it works: {direct}");
}

#[test]
fn busy_devices_share_the_staging_of_one() {
    assert_eq!([1, 2, 3, 4, 8].map(|busy| shared_chunk(4 << 20, busy)), [4 << 20, 2 << 20, 1400832, 1 << 20, 1 << 20]);
    assert_eq!(shared_chunk(4 << 20, 0), 4 << 20);
    assert_eq!(shared_chunk(64 << 10, 2), 64 << 10, "never below a small configured chunk");
    let (a, b, busy) = (AtomicUsize::new(0), AtomicUsize::new(0), AtomicUsize::new(0));
    {
        let (_x, _y) = (Busy::new(&a, &busy), Busy::new(&a, &busy));
        assert_eq!(busy.load(Ordering::Relaxed), 1, "one device, two requests");
        let _z = Busy::new(&b, &busy);
        assert_eq!(busy.load(Ordering::Relaxed), 2);
    }
    assert_eq!((a.load(Ordering::Relaxed), busy.load(Ordering::Relaxed)), (0, 0));
}

#[test]
fn chunks_tile_the_request_at_chunk_multiples_of_the_file_offset() {
    for (file_offset, len) in [(0u64, 10usize), (1, 5), (1, 300), (99, 100), (100, 250), (5, 95), (0, 300)] {
        let file = FileSide::for_tests();
        // SAFETY: the span is only cut into chunks here, never copied to or from.
        let memory = unsafe { DeviceSpan::new(0x1000, len) };
        let req = Request { file, durable: false, device: 0, memory, file_offset, chunk: 100 };
        let mut at = 0;
        for i in 0..req.chunk_count() {
            let (skip, n) = req.chunk_at(i);
            assert_eq!(skip, at, "{file_offset} {len} chunk {i}");
            assert!(n > 0 && n <= 100);
            if i + 1 < req.chunk_count() {
                assert_eq!((file_offset + (skip + n) as u64) % 100, 0, "chunks end at multiples");
            }
            at += n;
        }
        assert_eq!(at, len, "{file_offset} {len}");
    }
}
