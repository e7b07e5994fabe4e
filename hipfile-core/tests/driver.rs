//! The driver's rules (semantics §1-§6), end to end on the mock GPU.

mod common;

use std::os::fd::AsRawFd;
use std::sync::Arc;

use common::{contents, driver, file_with, pattern};
use hipfile_core::Direction;
use hipfile_core::{Error, HandleId, HipError, OpError, max_rw_count};

const DRIVER_NOT_INIT: Error = Error::Op(OpError::DriverNotInitialized);

#[test]
fn use_count_lifecycle() {
    let (_gpu, d) = driver(&[]);
    assert_eq!(d.use_count(), 0);
    assert_eq!(d.close(), Err(DRIVER_NOT_INIT));
    d.open().unwrap();
    d.open().unwrap();
    assert_eq!(d.use_count(), 2);
    d.close().unwrap();
    assert_eq!(d.use_count(), 1);
    d.close().unwrap();
    assert_eq!(d.close(), Err(DRIVER_NOT_INIT));
    assert_eq!(d.use_count(), 0);
}

#[test]
fn first_registration_opens_the_driver_once() {
    let (gpu, d) = driver(&[]);
    let (_dir, f) = file_with(b"abc");
    d.handle_register(&f).unwrap();
    assert_eq!(d.use_count(), 1);
    let dev = gpu.malloc(4096).unwrap();
    d.buf_register(dev, 4096, 0).unwrap();
    assert_eq!(d.use_count(), 1, "an open driver is not counted again");
    // A refused buffer registration still opens a closed driver, as upstream.
    let (_gpu, d2) = driver(&[]);
    assert_eq!(d2.buf_register(0, 4096, 0), Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d2.use_count(), 1);
}

#[test]
fn closing_to_zero_drops_every_registration() {
    let (gpu, d) = driver(&[]);
    let (_dir, f) = file_with(&[1; 4096]);
    d.open().unwrap();
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(4096).unwrap();
    d.buf_register(dev, 4096, 7).unwrap();
    assert_eq!(d.buffer(dev).unwrap().flags, 7, "flags are kept");
    d.close().unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 4096, 0, 0) }, Err(DRIVER_NOT_INIT), "I/O while closed");
    assert_eq!(d.buf_deregister(dev), Err(Error::Op(OpError::DriverClosing)));
    d.open().unwrap();
    assert_eq!(
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        unsafe { d.transfer(Direction::Read, h, dev, 4096, 0, 0) },
        Err(Error::Op(OpError::HandleNotRegistered)),
        "stale handle"
    );
    assert_eq!(d.buf_deregister(dev), Err(Error::Op(OpError::MemoryNotRegistered)));
    // The fd can be registered again: its old registration is gone.
    d.handle_register(&f).unwrap();
}

#[test]
fn handles() {
    let (_gpu, d) = driver(&[]);
    let (_dir, f) = file_with(b"x");
    let h = d.handle_register(&f).unwrap();
    assert_eq!(d.handle_register(&f), Err(Error::Op(OpError::HandleAlreadyRegistered)));
    for garbage in [HandleId(0), HandleId(1), HandleId(0xdead_beef), HandleId(u64::MAX), HandleId(h.0 + 1)] {
        assert_eq!(d.handle_deregister(garbage), Err(Error::Op(OpError::HandleNotRegistered)));
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { d.transfer(Direction::Read, garbage, 0, 0, 0, 0) },
            Err(Error::Op(OpError::HandleNotRegistered))
        );
    }
    d.handle_deregister(h).unwrap();
    assert_eq!(d.handle_deregister(h), Err(Error::Op(OpError::HandleNotRegistered)));
    let h2 = d.handle_register(&f).unwrap();
    assert_ne!(h, h2, "keys are never reused");
    // Handles of another driver are not valid here.
    let (_gpu, other) = driver(&[]);
    assert_eq!(other.handle_deregister(h2), Err(Error::Op(OpError::HandleNotRegistered)));
    let (r, _w) = std::io::pipe().unwrap();
    assert_eq!(d.handle_register(&r), Err(Error::Op(OpError::InvalidFileType)));
    // SAFETY: a negative number names no descriptor; the call refuses it.
    assert_eq!(unsafe { d.handle_register_raw(-5) }, Err(Error::Op(OpError::InvalidValue)));
}

#[test]
fn buffers() {
    let (gpu, d) = driver(&[]);
    let dev = gpu.malloc(8192).unwrap();
    assert_eq!(d.buf_register(dev, 0, 0), Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d.buf_register(dev, 8193, 0), Err(Error::Op(OpError::HipPointerRangeError)));
    assert_eq!(d.buf_register(dev + 4096, 4097, 0), Err(Error::Op(OpError::HipPointerRangeError)));
    let host = [0u8; 64];
    assert_eq!(d.buf_register(host.as_ptr() as usize, 64, 0), Err(Error::Op(OpError::HipMemoryTypeInvalid)));
    let pinned = hipfile_core::GpuRuntime::host_alloc(&*gpu, 4096).unwrap();
    assert_eq!(d.buf_register(pinned as usize, 64, 0), Err(Error::Op(OpError::HipMemoryTypeInvalid)));
    d.buf_register(dev, 8192, 0).unwrap();
    assert_eq!(d.buf_register(dev, 4096, 0), Err(Error::Op(OpError::MemoryAlreadyRegistered)));
    d.buf_register(dev + 4096, 4096, 0).unwrap(); // a different base inside the same allocation
    assert_eq!(d.buf_deregister(dev + 1), Err(Error::Op(OpError::MemoryNotRegistered)));
    d.buf_deregister(dev).unwrap();
    assert_eq!(d.buf_deregister(dev), Err(Error::Op(OpError::MemoryNotRegistered)));
}

#[test]
fn read_and_write_round_trip_on_every_backend_choice() {
    for backend in ["auto", "mock", "p2p", "bounce"] {
        let (gpu, d) = driver(&[("HIPFILE_BACKEND", backend)]);
        let data = pattern(1 << 20, 3);
        let (_dir, f) = file_with(&data);
        let h = d.handle_register(&f).unwrap();
        let dev = gpu.malloc(1 << 20).unwrap();
        d.buf_register(dev, 1 << 20, 0).unwrap();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 1 << 20, 0, 0) }.unwrap(), 1 << 20, "{backend}");
        let mut got = vec![0; 1 << 20];
        gpu.read_device(dev, &mut got).unwrap();
        assert!(got == data, "{backend}");
        // Unaligned: only the bounce path can serve it; p2p alone cannot.
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        let r = unsafe { d.transfer(Direction::Read, h, dev, 1000, 17, 5) };
        if backend == "p2p" {
            assert_eq!(r, Err(Error::Op(OpError::InternalError)), "no backend accepts");
        } else {
            assert_eq!(r.unwrap(), 1000);
            gpu.read_device(dev + 5, &mut got[..1000]).unwrap();
            assert!(got[..1000] == data[17..1017], "{backend}");
        }
        let fresh = pattern(8192, 9);
        gpu.write_device(dev, &fresh).unwrap();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { d.transfer(Direction::Write, h, dev, 8192, 4096, 0) }.unwrap(), 8192, "{backend}");
        assert!(contents(&f)[4096..4096 + 8192] == fresh[..], "{backend}");
    }
}

#[test]
fn unknown_backend_value_fails_the_open_with_a_clear_error() {
    let (gpu, d) = driver(&[("HIPFILE_BACKEND", "cuda")]);
    let e = d.open().unwrap_err();
    assert_eq!(e.to_c_pair().0, OpError::DriverInvalidProps.code());
    assert!(e.to_string().contains("HIPFILE_BACKEND"), "{e}");
    assert_eq!(d.use_count(), 0);
    assert!(d.buf_register(gpu.malloc(64).unwrap(), 64, 0).is_err());
    assert_eq!(d.use_count(), 0);
}

#[test]
fn compat_mode_settings_choose_the_backends() {
    let names = |vars: &[(&str, &str)]| {
        let (_gpu, d) = driver(vars);
        d.open().unwrap();
        d.backend_names()
    };
    assert_eq!(names(&[]), ["mock-p2p", "mock-bounce"]);
    assert_eq!(names(&[("HIPFILE_FORCE_COMPAT_MODE", "true")]), ["mock-bounce"]);
    assert_eq!(names(&[("HIPFILE_ALLOW_COMPAT_MODE", "0")]), ["mock-p2p"]);
    assert_eq!(names(&[("HIPFILE_ALLOW_COMPAT_MODE", "off"), ("HIPFILE_FORCE_COMPAT_MODE", "on")]), ["mock-bounce"]);
}

#[test]
fn io_argument_rules() {
    let (gpu, d) = driver(&[]);
    let (_dir, f) = file_with(&pattern(16384, 1));
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(8192).unwrap();
    d.buf_register(dev, 4096, 0).unwrap();
    let einval = Error::Os(libc::EINVAL);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 16, -1, 0) }, Err(einval.clone()));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 16, 0, -1) }, Err(einval.clone()));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Write, h, dev, 16, i64::MIN, 0) }, Err(einval));
    // Bounds follow the registered length (4096), not the allocation (8192).
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 4097, 0, 0) }, Err(Error::Op(OpError::InvalidValue)));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 1, 0, 4096) }, Err(Error::Op(OpError::InvalidValue)));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 0, 0, 4096) }, Err(Error::Op(OpError::InvalidValue)));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 2, 0, 4095) }, Err(Error::Op(OpError::InvalidValue)));
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 1, 0, 4095) }.unwrap(), 1);
    // A pointer inside the allocation is an unregistered buffer: bounded by the allocation.
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev + 4096, 4096, 0, 0) }.unwrap(), 4096);
    assert_eq!(
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        unsafe { d.transfer(Direction::Read, h, dev + 4096, 4097, 0, 0) },
        Err(Error::Op(OpError::InvalidValue))
    );
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev + 100, 8092, 0, 0) }.unwrap(), 8092);
    // Not device memory.
    let host = vec![0u8; 4096];
    assert_eq!(
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        unsafe { d.transfer(Direction::Read, h, host.as_ptr() as usize, 16, 0, 0) },
        Err(Error::Op(OpError::HipMemoryTypeInvalid))
    );
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, 0, 16, 0, 0) }, Err(Error::Op(OpError::InvalidValue)));
    // Zero-size I/O.
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 0, 0, 0) }.unwrap(), 0);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Write, h, dev, 0, 1 << 40, 0) }.unwrap(), 0);
}

#[test]
fn short_reads_at_end_of_file() {
    let (gpu, d) = driver(&[]);
    let data = pattern(10_000, 4);
    let (_dir, f) = file_with(&data);
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(16384).unwrap();
    assert_eq!(
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        unsafe { d.transfer(Direction::Read, h, dev, 16384, 0, 0) }.unwrap(),
        10_000,
        "aligned request past EOF"
    );
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 100, 9_999, 0) }.unwrap(), 1, "last byte");
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 100, 10_000, 0) }.unwrap(), 0, "at EOF");
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 4096, 1 << 30, 0) }.unwrap(), 0, "far past EOF");
    let mut got = vec![0; 10_000];
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 10_000, 0, 1) }.unwrap(), 10_000, "unaligned, staged");
    gpu.read_device(dev + 1, &mut got).unwrap();
    assert!(got == data);
}

#[test]
fn writes_extend_the_file() {
    let (gpu, d) = driver(&[]);
    let (_dir, f) = file_with(b"");
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(8192).unwrap();
    let data = pattern(8192, 5);
    gpu.write_device(dev, &data).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Write, h, dev, 4096, 8192, 0) }.unwrap(), 4096);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Write, h, dev, 3, 20_000, 4096) }.unwrap(), 3);
    let c = contents(&f);
    assert_eq!(c.len(), 20_003);
    assert!(c[..8192].iter().all(|&b| b == 0) && c[8192..12288] == data[..4096] && c[20_000..] == data[4096..4099]);
}

#[test]
fn injected_file_faults() {
    let (gpu, d) = driver(&[]);
    let data = pattern(1 << 20, 6);
    let (_dir, f) = file_with(&data);
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(1 << 20).unwrap();
    let mut got = vec![0; 1 << 20];
    for (offset, what) in [(0, "direct"), (1, "staged")] {
        gpu.memset(dev, 0, 1 << 20).unwrap();
        gpu.faults().short_io(777);
        gpu.faults().eintr_storm(50);
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        let n = unsafe { d.transfer(Direction::Read, h, dev, (1 << 20) - 4096, offset, 0) }.unwrap();
        assert_eq!(n, (1 << 20) - 4096, "{what}");
        gpu.read_device(dev, &mut got[..n]).unwrap();
        assert!(got[..n] == data[offset as usize..offset as usize + n], "{what}");
        gpu.faults().clear();
        gpu.faults().eio_at(300_000);
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { d.transfer(Direction::Read, h, dev, 1 << 19, offset, 0) },
            Err(Error::Os(libc::EIO)),
            "{what}"
        );
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { d.transfer(Direction::Write, h, dev, 1 << 19, offset, 0) },
            Err(Error::Os(libc::EIO)),
            "{what}"
        );
        assert_eq!(
            // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
            unsafe { d.transfer(Direction::Read, h, dev, 4096, offset, 0) }.unwrap(),
            4096,
            "{what}: bytes before the bad one"
        );
        gpu.faults().clear();
    }
}

#[test]
fn no_path_falls_back_only_when_allowed() {
    let data = pattern(65536, 7);
    for (errno, allow, expect_ok) in [
        (libc::ENODEV, "true", true),
        (libc::EREMOTEIO, "true", true),
        (libc::ENODEV, "false", false),
        (libc::EIO, "true", false),
    ] {
        let (gpu, d) = driver(&[("HIPFILE_ALLOW_COMPAT_MODE", allow)]);
        let (_dir, f) = file_with(&data);
        let h = d.handle_register(&f).unwrap();
        let dev = gpu.malloc(65536).unwrap();
        gpu.faults().fail_direct_path(errno);
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        let r = unsafe { d.transfer(Direction::Read, h, dev, 65536, 0, 0) };
        if expect_ok {
            assert_eq!(r.unwrap(), 65536);
            let mut got = vec![0; 65536];
            gpu.read_device(dev, &mut got).unwrap();
            assert!(got == data);
            // The counters show who served it, and that the p2p path had no path.
            let counters = d.backend_counters();
            let get = |backend: &str, name: &str| {
                let (_, c) = counters.iter().find(|(b, _)| *b == backend).expect("backend");
                c.iter().find(|(n, _)| *n == name).expect("counter").1
            };
            assert_eq!((get("mock-p2p", "no_path"), get("mock-p2p", "served_requests")), (1, 0));
            assert_eq!((get("mock-bounce", "served_requests"), get("mock-bounce", "served_bytes")), (1, 65536));
        } else {
            assert_eq!(r, Err(Error::Os(errno)), "errno {errno}, compat {allow}");
        }
    }
}

#[test]
fn declined_requests_are_counted_for_the_p2p_path_and_served_by_bounce() {
    let (gpu, d) = driver(&[("HIPFILE_UNSUPPORTED_FILE_SYSTEMS", "true")]);
    let (_dir, f) = file_with(&pattern(65536, 9));
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(65536).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 8192, 0, 0) }, Ok(8192)); // aligned: direct
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, 100, 1, 0) }, Ok(100)); // unaligned: declined, staged
    let counters: std::collections::HashMap<_, _> = d.backend_counters().into_iter().collect();
    assert_eq!(counters["mock-p2p"][..3], [("served_requests", 1), ("served_bytes", 8192), ("declined", 1)]);
    assert_eq!(counters["mock-bounce"][..2], [("served_requests", 1), ("served_bytes", 100)]);
    // The verdict on the file: the p2p path would serve it (aligned requests).
    assert_eq!(d.p2p_verdict(h).unwrap(), vec![("mock-p2p", Ok(()))]);
}

#[test]
fn copy_failure_surfaces_as_a_hip_driver_error() {
    let (gpu, d) = driver(&[]);
    let (_dir, f) = file_with(&pattern(1 << 20, 8));
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(8 << 20).unwrap();
    gpu.faults().fail_copy(1, HipError::LAUNCH_FAILURE);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    let e = unsafe { d.transfer(Direction::Read, h, dev, 1000, 1, 0) }.unwrap_err();
    assert_eq!(e, Error::Hip(HipError::LAUNCH_FAILURE));
    assert_eq!(e.to_c_pair(), (OpError::HipDriverError.code(), 719));
    assert_eq!(hipfile_core::error::ssize_result(&Err(e)).value, -719);
    let before = contents(&f);
    gpu.faults().fail_copy(2, HipError::UNKNOWN);
    // SAFETY: mock device memory.
    let e = unsafe { d.transfer(Direction::Write, h, dev, (hipfile_backend_mock::STAGE_SIZE) + 10, 3, 0) };
    assert_eq!(e, Err(Error::Hip(HipError::UNKNOWN)));
    // The first chunk reached the file; nothing past the failed copy did, and the call
    // reports the failure rather than a byte count.
    assert_eq!(before.len(), 1 << 20);
    assert_eq!(contents(&f).len(), 3 + hipfile_backend_mock::STAGE_SIZE);
}

#[test]
fn concurrent_io_on_one_handle() {
    let (gpu, d) = driver(&[]);
    let data = pattern(8 << 20, 9);
    let (_dir, f) = file_with(&data);
    let d = Arc::new(d);
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(8 << 20).unwrap();
    std::thread::scope(|s| {
        for t in 0..8usize {
            let d = Arc::clone(&d);
            s.spawn(move || {
                let off = t << 20;
                let unaligned = (t % 2) as i64;
                let len = (1 << 20) - unaligned as usize;
                // SAFETY: mock device memory.
                let n =
                    unsafe { d.transfer(Direction::Read, h, dev, len, off as i64 + unaligned, off as i64 + unaligned) };
                assert_eq!(n.unwrap(), len);
            });
        }
    });
    let mut got = vec![0; 8 << 20];
    gpu.read_device(dev, &mut got).unwrap();
    for t in 0..8usize {
        let start = (t << 20) + t % 2;
        assert!(got[start..(t + 1) << 20] == data[start..(t + 1) << 20], "thread {t}");
    }
}

#[test]
fn one_call_moves_at_most_the_cap() {
    let (gpu, d) = driver(&[]);
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create_new(dir.path().join("big")).unwrap();
    let len = max_rw_count() + 8192;
    f.set_len(len as u64).unwrap(); // sparse: reads as zeros
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(len).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, len, 0, 0) }.unwrap(), 0x7fff_f000);
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.transfer(Direction::Read, h, dev, len, 0x7fff_f000, 0) }.unwrap(), 8192);
}

/// Host memory follows the page-cache policy (semantics §4, §16): an aligned read of a cold
/// file fills the page cache under `keep`, and goes `O_DIRECT` (filling nothing) under `bypass`.
#[test]
fn host_memory_follows_the_page_cache_policy() {
    const LEN: usize = 1 << 20;
    let data = pattern(LEN, 16);
    let (_dir, f) = file_with(&data);
    let resident = || {
        // SAFETY: a read-only shared mapping of an open file, unmapped below.
        let map = unsafe { libc::mmap(std::ptr::null_mut(), LEN, libc::PROT_READ, libc::MAP_SHARED, f.as_raw_fd(), 0) };
        assert_ne!(map, libc::MAP_FAILED);
        let mut pages = vec![0u8; LEN / 4096];
        // SAFETY: one byte per page of the mapping.
        assert_eq!(unsafe { libc::mincore(map, LEN, pages.as_mut_ptr()) }, 0);
        // SAFETY: mapped above.
        unsafe { libc::munmap(map, LEN) };
        pages.iter().filter(|p| **p & 1 != 0).count()
    };
    // Page-aligned host memory, so that bypass can read it O_DIRECT.
    let layout = std::alloc::Layout::from_size_align(LEN, 4096).unwrap();
    for (policy, kept) in [("keep", true), ("bypass", false), ("auto", true)] {
        f.sync_all().unwrap();
        // SAFETY: a plain advice call on an open descriptor.
        assert_eq!(unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) }, 0);
        assert_eq!(resident(), 0, "eviction works here");
        let (_gpu, d) = driver(&[("HIPFILE_ALLOW_SYSTEM_MEMORY", "true"), ("HIPFILE_PAGE_CACHE", policy)]);
        let h = d.handle_register(&f).unwrap();
        // SAFETY: a fresh allocation of LEN bytes, freed below.
        let buf = unsafe { std::alloc::alloc_zeroed(layout) };
        // SAFETY: the call writes at most LEN bytes at `buf`, which holds LEN.
        let n = unsafe { d.transfer(Direction::Read, h, buf as usize, LEN, 0, 0) };
        // SAFETY: LEN initialized bytes at `buf`.
        let same = unsafe { std::slice::from_raw_parts(buf, LEN) } == &data[..];
        // SAFETY: allocated above with this layout.
        unsafe { std::alloc::dealloc(buf, layout) };
        assert_eq!((n, same), (Ok(LEN), true), "{policy}");
        let cached = resident();
        if kept {
            assert_eq!(cached, LEN / 4096, "{policy}: the read filled the page cache");
        } else {
            assert!(cached <= 8, "{policy}: {cached} pages cached by an O_DIRECT read");
        }
    }
}
