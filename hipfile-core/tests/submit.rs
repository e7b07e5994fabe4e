//! The submitter (`hipfile_core::submit`): requests queued one by one come back through their
//! completions with the bytes of the file, gathered into batches of the driver.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{driver, file_with, pattern};
use hipfile_core::stats::Counter;
use hipfile_core::{BatchEntry, Direction, DriverGuard, HandleId, Submitter};

/// A read of `size` bytes at `file_offset` of `handle` into device memory at `memory`.
fn read(handle: HandleId, memory: usize, file_offset: i64, size: usize) -> BatchEntry {
    BatchEntry {
        direction: Direction::Read,
        handle,
        buffer_base: memory,
        buffer_offset: 0,
        file_offset,
        size,
        cookie: 0,
    }
}

#[test]
fn a_burst_of_requests_goes_in_few_batches_and_each_gets_its_bytes() {
    let (_gpu, d) = driver(&[("HIPFILE_STATS_LEVEL", "1")]);
    let d = Arc::new(d);
    let guard = DriverGuard::open(Arc::clone(&d)).unwrap();
    const N: usize = 64;
    const SIZE: usize = 4096;
    let data = pattern(N * SIZE, 3);
    let (_dir, f) = file_with(&data);
    let file = guard.register_file(&f).unwrap();
    let memory = guard.device_alloc(N * SIZE).unwrap();
    let submitter: &'static Submitter<_, _> = Box::leak(Box::new(Submitter::new(Arc::clone(&d))));
    let before = d.stats().snapshot().get(Counter::BatchSetupOk);
    // Reversed, so each request lands at another place than it reads from.
    let completions: Vec<_> = (0..N)
        .map(|i| {
            let at = ((N - 1 - i) * SIZE) as i64;
            let entry = BatchEntry { buffer_offset: (i * SIZE) as i64, ..read(file.id(), memory.addr(), at, SIZE) };
            // SAFETY: device memory of the mock runtime, alive until the end of the test.
            unsafe { submitter.submit(entry, Box::new(())) }
        })
        .collect();
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    for c in &completions {
        submitter.hurry(c);
        assert_eq!(c.wait(deadline).expect("ended in time").unwrap(), SIZE);
    }
    let batches = d.stats().snapshot().get(Counter::BatchSetupOk) - before;
    assert!((1..N as u64).contains(&batches), "{N} requests in {batches} batches");
    let mut host = vec![0u8; N * SIZE];
    memory.copy_to_host(0, &mut host).unwrap();
    for i in 0..N {
        let from = (N - 1 - i) * SIZE;
        assert_eq!(&host[i * SIZE..(i + 1) * SIZE], &data[from..from + SIZE], "request {i}");
    }
}

#[test]
fn a_failed_request_ends_with_its_error_and_the_others_go_on() {
    let (_gpu, d) = driver(&[]);
    let d = Arc::new(d);
    let guard = DriverGuard::open(Arc::clone(&d)).unwrap();
    let (_dir, f) = file_with(&pattern(8192, 1));
    let file = guard.register_file(&f).unwrap();
    let memory = guard.device_alloc(8192).unwrap();
    let submitter: &'static Submitter<_, _> = Box::leak(Box::new(Submitter::new(Arc::clone(&d))));
    let entry = |offset, size| read(file.id(), memory.addr(), offset, size);
    // SAFETY: device memory of the mock runtime, alive until the end of the test.
    let good = unsafe { submitter.submit(entry(0, 4096), Box::new(())) };
    // SAFETY: as above (the request is refused: it runs past the buffer).
    let bad = unsafe { submitter.submit(entry(0, 1 << 20), Box::new(())) };
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    submitter.hurry(&bad);
    assert!(bad.wait(deadline).expect("ended in time").is_err(), "past the buffer's end");
    assert_eq!(good.wait(deadline).expect("ended in time").unwrap(), 4096);
}

#[test]
fn a_transfer_submitted_whole_ends_together_with_its_first_error() {
    let (_gpu, d) = driver(&[]);
    let d = Arc::new(d);
    let guard = DriverGuard::open(Arc::clone(&d)).unwrap();
    let data = pattern(1 << 20, 5);
    let (_dir, f) = file_with(&data);
    let file = guard.register_file(&f).unwrap();
    let memory = guard.device_alloc(1 << 20).unwrap();
    let submitter: &'static Submitter<_, _> = Box::leak(Box::new(Submitter::new(Arc::clone(&d))));
    let entry = |size, file_offset| read(file.id(), memory.addr(), file_offset, size);
    let deadline = Some(Instant::now() + Duration::from_secs(20));
    // SAFETY: device memory of the mock runtime, alive until the end of the test.
    let whole = unsafe { submitter.submit_all(entry(1 << 20, 0), || Box::new(())) };
    assert_eq!(submitter.wait_all(&whole, deadline).unwrap().unwrap(), 1 << 20);
    assert!(submitter.ended(&whole));
    // Nothing to move: one part, ended at once.
    // SAFETY: as above.
    let none = unsafe { submitter.submit_all(entry(0, 0), || Box::new(())) };
    assert_eq!(none.len(), 1);
    assert!(submitter.ended(&none) && submitter.wait_all(&none, None).unwrap().unwrap() == 0);
    // Together with a part that fails: the error, once both have ended.
    // SAFETY: as above.
    let mut both = unsafe { submitter.submit_all(entry(4096, 0), || Box::new(())) };
    // SAFETY: as above; a negative file offset is refused.
    both.extend(unsafe { submitter.submit_all(entry(4096, -1), || Box::new(())) });
    assert!(submitter.wait_all(&both, deadline).unwrap().is_err());
    assert!(both.iter().all(|p| p.result().is_some()));
}

#[test]
fn a_request_waited_for_alone_runs_on_the_waiting_thread_with_its_result() {
    let (_gpu, d) = driver(&[("HIPFILE_STATS_LEVEL", "1")]);
    let d = Arc::new(d);
    let guard = DriverGuard::open(Arc::clone(&d)).unwrap();
    let data = pattern(64 * 4096, 9);
    let (_dir, f) = file_with(&data);
    let file = guard.register_file(&f).unwrap();
    let memory = guard.device_alloc(4096).unwrap();
    let submitter: &'static Submitter<_, _> = Box::leak(Box::new(Submitter::new(Arc::clone(&d))));
    let entry = |file_offset, size| read(file.id(), memory.addr(), file_offset, size);
    let before = d.stats().snapshot().get(Counter::BatchSetupOk);
    const N: usize = 200;
    let mut host = vec![0u8; 4096];
    for i in 0..N {
        let at = (i % 64) * 4096;
        // SAFETY: device memory of the mock runtime, alive until the end of the test.
        let one = unsafe { submitter.submit(entry(at as i64, 4096), Box::new(())) };
        assert_eq!(submitter.wait_all(&[one], None).unwrap().unwrap(), 4096, "request {i}");
        memory.copy_to_host(0, &mut host).unwrap();
        assert_eq!(host, data[at..at + 4096], "request {i}");
    }
    // Waited for alone, each runs as one call on this thread: the library's thread gets one
    // only where it took the request first (it looks 50 µs after the first of a round arrives).
    let batches = d.stats().snapshot().get(Counter::BatchSetupOk) - before;
    assert!(batches < N as u64 / 2, "{batches} of {N} lone requests went to the library's thread as batches");
    // A lone request that fails ends with its error, on this thread too.
    // SAFETY: as above (refused: it runs past the buffer).
    let bad = unsafe { submitter.submit(entry(0, 1 << 20), Box::new(())) };
    assert!(submitter.wait_all(&[bad], None).unwrap().is_err());
}
