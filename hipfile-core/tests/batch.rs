//! Batches (semantics §11), end to end on the mock GPU: what upstream's batch tests check, and
//! cancel and destroy with entries in flight.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{contents, driver, file_with, pattern};
use hipfile_backend_mock::{MockGpu, MockPlatform};
use hipfile_core::{BatchEntry, BatchId, Direction, Driver, Error, HandleId, OpError};

const OP: usize = 4096;

fn entry(direction: Direction, handle: HandleId, base: usize, i: usize, size: usize) -> BatchEntry {
    BatchEntry {
        direction,
        handle,
        buffer_base: base,
        buffer_offset: (i * OP) as i64,
        file_offset: (i * OP) as i64,
        size,
        cookie: 1000 + i,
    }
}

/// Cookies of `events` sorted, and every event's bytes.
fn reaped(events: &[hipfile_core::BatchEvent]) -> (Vec<usize>, Vec<i64>) {
    let mut cookies: Vec<usize> = events.iter().map(|e| e.cookie).collect();
    cookies.sort();
    (cookies, events.iter().map(|e| e.ret()).collect())
}

/// Device memory `[dev, dev + len)` does not change over `wait`: no entry ran after `what`.
fn assert_untouched(gpu: &hipfile_backend_mock::MockGpu, dev: usize, len: usize, wait: Duration, what: &str) {
    let mut before = vec![0u8; len];
    gpu.read_device(dev, &mut before).unwrap();
    std::thread::sleep(wait);
    let mut after = vec![0u8; len];
    gpu.read_device(dev, &mut after).unwrap();
    assert!(before == after, "an entry ran after {what} returned");
}

#[test]
fn reads_and_writes_run_and_report_each_entry_once() {
    let (gpu, d) = driver(&[]);
    let data = pattern(64 * OP, 3);
    let (_dir, f) = file_with(&data);
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(64 * OP).unwrap();
    d.buf_register(dev, 64 * OP, 0).unwrap();
    let b = d.batch_setup(64).unwrap();
    let reads: Vec<_> = (0..64).map(|i| entry(Direction::Read, h, dev, i, OP)).collect();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap();
    let events = d.batch_status(b, 64, 64, None).unwrap();
    assert_eq!(reaped(&events), ((1000..1064).collect(), vec![OP as i64; 64]));
    let mut back = vec![0u8; 64 * OP];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back == data);
    // Writes, from an unregistered pointer into the buffer, the other way round.
    let inner = dev + OP;
    let writes: Vec<_> =
        (0..8).map(|i| BatchEntry { buffer_base: inner, ..entry(Direction::Write, h, inner, i, OP) }).collect();
    gpu.write_device(inner, &pattern(8 * OP, 9)).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &writes) }.unwrap();
    let events = d.batch_status(b, 8, 8, Some(Duration::from_secs(10))).unwrap();
    assert_eq!(reaped(&events).1, vec![OP as i64; 8]);
    assert!(contents(&f)[..8 * OP] == pattern(8 * OP, 9)[..]);
    assert_eq!(d.batch_status(b, 0, 8, None).unwrap(), vec![], "nothing outstanding: no events");
    d.batch_destroy(b);
}

#[test]
fn a_small_event_buffer_gets_the_rest_later_and_capacity_frees_as_events_are_reaped() {
    let (_gpu, d, _dir, h, dev) = registered(4, &[]);
    let b = d.batch_setup(4).unwrap();
    let reads: Vec<_> = (0..4).map(|i| entry(Direction::Read, h, dev, i, OP)).collect();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.batch_submit(b, &reads[..1]) }, Err(Error::Op(OpError::BatchFull)));
    let mut all = Vec::new();
    while all.len() < 4 {
        let events = d.batch_status(b, 1, 2, None).unwrap();
        assert!((1..=2).contains(&events.len()));
        all.extend(events);
    }
    assert_eq!(reaped(&all).0, (1000..1004).collect::<Vec<_>>());
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap(); // room again: every event was reaped
    assert_eq!(d.batch_status(b, 4, 4, None).unwrap().len(), 4);
}

#[test]
fn invalid_submissions_run_nothing() {
    let (gpu, d, _dir, h, dev) = registered(4, &[]);
    d.buf_register(dev, 4 * OP, 0).unwrap();
    let b = d.batch_setup(4).unwrap();
    let good = entry(Direction::Read, h, dev, 0, OP);
    let past_the_buffer = entry(Direction::Read, h, dev, 3, 2 * OP);
    let bad_handle = BatchEntry { handle: HandleId(12345), ..good };
    let negative = BatchEntry { file_offset: -1, ..good };
    let host = BatchEntry { buffer_base: &good as *const _ as usize, ..good };
    for (bad, why) in [
        (past_the_buffer, Error::Op(OpError::InvalidValue)),
        (bad_handle, Error::Op(OpError::HandleNotRegistered)),
        (negative, Error::Os(libc::EINVAL)),
        (host, Error::Op(OpError::HipMemoryTypeInvalid)),
    ] {
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        assert_eq!(unsafe { d.batch_submit(b, &[good, bad]) }, Err(why));
    }
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.batch_submit(b, &[]) }, Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d.batch_status(b, 0, 4, None).unwrap(), vec![], "the good entries never ran");
    let mut back = vec![1u8; OP];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back.iter().all(|&x| x == 0), "nothing was read");
    // Status arguments, unknown and destroyed batches, capacities.
    assert_eq!(d.batch_status(b, 0, 0, None), Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d.batch_status(b, 2, 1, None), Err(Error::Op(OpError::InvalidValue)));
    d.batch_destroy(b);
    d.batch_destroy(b); // twice: ignored
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    assert_eq!(unsafe { d.batch_submit(b, &[good]) }, Err(Error::Op(OpError::InvalidValue)));
    assert_eq!(d.batch_cancel(b), Err(Error::Op(OpError::InvalidValue)));
    for bad in [0, 129] {
        assert_eq!(d.batch_setup(bad), Err(Error::Op(OpError::InvalidValue)));
    }
}

#[test]
fn setup_needs_no_open_driver_and_zero_sizes_complete_with_zero() {
    let (gpu, d) = driver(&[]);
    let b = d.batch_setup(1).unwrap();
    assert_eq!(d.use_count(), 0);
    let (_dir, f) = file_with(&pattern(OP, 1));
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(OP).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &[entry(Direction::Read, h, dev, 0, 0)]) }.unwrap();
    assert_eq!(reaped(&d.batch_status(b, 1, 1, None).unwrap()).1, vec![0]);
    // Past the end of the file: a short read, as hipFileRead.
    let tail = BatchEntry { file_offset: (OP / 2) as i64, ..entry(Direction::Read, h, dev, 0, OP) };
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &[tail]) }.unwrap();
    assert_eq!(reaped(&d.batch_status(b, 1, 1, None).unwrap()).1, vec![(OP / 2) as i64]);
}

#[test]
fn a_failing_entry_is_an_event_with_its_error() {
    let (gpu, d, _dir, h, dev) = registered(4, &[("HIPFILE_BACKEND", "bounce")]);
    gpu.faults().eio_at((2 * OP) as u64);
    let b = d.batch_setup(4).unwrap();
    let reads: Vec<_> = (0..4).map(|i| entry(Direction::Read, h, dev, i, OP)).collect();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap();
    let mut events = d.batch_status(b, 4, 4, None).unwrap();
    events.sort_by_key(|e| e.cookie);
    assert_eq!(events[2].result, Err(Error::Os(libc::EIO)));
    assert_eq!(events[2].ret(), -i64::from(libc::EIO));
    assert!(events.iter().enumerate().all(|(i, e)| i == 2 || e.result == Ok(OP)));
}

/// A driver configured by `vars`, a file of `n` ops registered with it, and `n` ops of device
/// memory: the GPU, the driver, the file's directory, its handle and the memory.
fn registered(
    n: usize,
    vars: &[(&str, &str)],
) -> (Arc<MockGpu>, Driver<MockPlatform>, tempfile::TempDir, HandleId, usize) {
    let (gpu, d) = driver(vars);
    let (dir, f) = file_with(&pattern(n * OP, 1));
    let h = d.handle_register(&f).unwrap();
    let dev = gpu.malloc(n * OP).unwrap();
    (gpu, d, dir, h, dev)
}

/// A batch of `n` reads of `OP` bytes submitted on the bounce backend, each copy delayed by
/// `delay`: the GPU, the driver, the file's directory, the device memory, the batch and the reads.
type Slow = (Arc<MockGpu>, Driver<MockPlatform>, tempfile::TempDir, usize, BatchId, Vec<BatchEntry>);

fn slow_batch(n: usize, delay: Duration) -> Slow {
    let (gpu, d, dir, h, dev) = registered(n, &[("HIPFILE_BACKEND", "bounce")]);
    gpu.faults().delay_copies(delay);
    let b = d.batch_setup(n).unwrap();
    let reads: Vec<_> = (0..n).map(|i| entry(Direction::Read, h, dev, i, OP)).collect();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap();
    (gpu, d, dir, dev, b, reads)
}

#[test]
fn a_timeout_returns_what_finished_and_cancel_stops_the_rest() {
    let (gpu, d, _dir, dev, b, reads) = slow_batch(128, Duration::from_millis(20));
    // Not all: 128 copies of 20 ms each cannot all finish within the 30 ms waited, however
    // fast or slow the machine (no clock is asserted on).
    let some = d.batch_status(b, 128, 128, Some(Duration::from_millis(30))).unwrap();
    assert!(some.len() < 128, "{} events", some.len());
    d.batch_cancel(b).unwrap();
    // After the cancel nothing of the batch runs: device memory stays as it is.
    assert_untouched(&gpu, dev, 128 * OP, Duration::from_millis(100), "the cancel");
    assert_eq!(d.batch_status(b, 0, 128, None).unwrap(), vec![]);
    // The batch is reusable.
    gpu.faults().clear();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads[..2]) }.unwrap();
    assert_eq!(d.batch_status(b, 2, 2, None).unwrap().len(), 2);
}

#[test]
fn destroy_with_entries_in_flight_and_close_with_a_batch_pending() {
    let (gpu, d, _dir, dev, b, reads) = slow_batch(64, Duration::from_millis(5));
    d.batch_destroy(b);
    assert_untouched(&gpu, dev, 64 * OP, Duration::from_millis(50), "the destroy");
    // Closing the driver with entries queued ends the batch as a destroy does (entries not
    // started never run, running ones are waited for: they hold the file), never hangs; the
    // batch is gone afterwards.
    let b = d.batch_setup(64).unwrap();
    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
    unsafe { d.batch_submit(b, &reads) }.unwrap();
    d.close().unwrap();
    assert_eq!(d.use_count(), 0);
    assert_untouched(&gpu, dev, 64 * OP, Duration::from_millis(50), "the close");
    assert_eq!(d.batch_status(b, 1, 64, Some(Duration::from_secs(1))).unwrap_err(), OpError::InvalidValue.into());
    // A batch set up while the driver is closed lives until the next last close.
    let early = d.batch_setup(4).unwrap();
    d.open().unwrap();
    assert!(d.batch_status(early, 0, 4, Some(Duration::ZERO)).unwrap().is_empty());
    d.close().unwrap();
    assert!(d.batch_status(early, 0, 4, Some(Duration::ZERO)).is_err());
}

#[test]
fn the_rust_api_destroys_a_batch_on_drop() {
    let (gpu, d) = driver(&[]);
    let d = Arc::new(d);
    let guard = hipfile_core::DriverGuard::open(Arc::clone(&d)).unwrap();
    let data = pattern(8 * OP, 4);
    let (_dir, f) = file_with(&data);
    let file = guard.register_file(&f).unwrap();
    let dev = gpu.malloc(8 * OP).unwrap();
    let id = {
        let batch = guard.batch(8).unwrap();
        let reads: Vec<_> = (0..8).map(|i| entry(Direction::Read, file.id(), dev, i, OP)).collect();
        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
        unsafe { batch.submit(&reads) }.unwrap();
        assert_eq!(batch.status(8, 8, None).unwrap().len(), 8);
        batch.id()
    };
    assert_eq!(d.batch_cancel(id), Err(Error::Op(OpError::InvalidValue)), "destroyed on drop");
    let mut back = vec![0u8; 8 * OP];
    gpu.read_device(dev, &mut back).unwrap();
    assert!(back == data);
}

#[test]
fn many_threads_with_batches_and_little_staging_finish() {
    // A staging limit of 1 MiB (a few 64 KiB lanes) shared by 8 threads, each keeping a batch
    // of 32 entries of 16-256 KiB in flight: entries wait for lanes, never deadlock.
    let (gpu, d) = driver(&[
        ("HIPFILE_BACKEND", "bounce"),
        ("HIPFILE_BOUNCE_MEMORY_MIB", "1"),
        ("HIPFILE_BOUNCE_CHUNK_KIB", "64"),
        ("HIPFILE_BOUNCE_THREADS", "4"),
    ]);
    const REGION: usize = 4 << 20;
    let data = pattern(8 * REGION, 7);
    let (_dir, f) = file_with(&data);
    let (_odir, out) = file_with(&vec![0u8; 8 * REGION]);
    let input = d.handle_register(&f).unwrap();
    let output = d.handle_register(&out).unwrap();
    std::thread::scope(|s| {
        for t in 0..8usize {
            let (d, gpu, data) = (&d, &gpu, &data);
            s.spawn(move || {
                let dev = gpu.malloc(REGION).unwrap();
                let b = d.batch_setup(32).unwrap();
                let mut x = t as u64 + 1;
                for round in 0..6 {
                    let direction = if round % 2 == 0 { Direction::Read } else { Direction::Write };
                    let handle = if direction == Direction::Read { input } else { output };
                    let mut entries = Vec::new();
                    let mut at = 0;
                    while entries.len() < 32 && at < REGION {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        let size = (16 << 10) * (1 + (x % 16) as usize).min((REGION - at) / (16 << 10));
                        entries.push(BatchEntry {
                            direction,
                            handle,
                            buffer_base: dev,
                            buffer_offset: at as i64,
                            file_offset: (t * REGION + at) as i64,
                            size,
                            cookie: entries.len(),
                        });
                        at += size;
                    }
                    // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                    unsafe { d.batch_submit(b, &entries) }.unwrap();
                    let events = d.batch_status(b, entries.len(), 32, None).unwrap();
                    assert_eq!(events.len(), entries.len());
                    assert!(events.iter().all(|e| e.result == Ok(entries[e.cookie].size)), "{events:?}");
                    if direction == Direction::Read {
                        let mut back = vec![0u8; at];
                        gpu.read_device(dev, &mut back).unwrap();
                        assert!(back[..] == data[t * REGION..t * REGION + at], "thread {t} round {round}");
                    }
                }
                d.batch_destroy(b);
            });
        }
    });
    // Every write copied device bytes that the read before it had filled from the input.
    let written = contents(&out);
    for t in 0..8 {
        let region = &written[t * REGION..(t + 1) * REGION];
        let n = region.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        assert!(region[..n] == data[t * REGION..t * REGION + n], "thread {t}'s writes");
    }
}

mod model {
    //! Random batch sessions against a model: capacity, event counts, and the bytes of the
    //! file and of device memory once every event is reaped.
    use super::*;
    use proptest::prelude::*;

    const SLOTS: usize = 16;
    const SLOT: usize = 8192;

    #[derive(Clone, Debug)]
    enum Step {
        /// Entries on distinct slots: (slot, write?, bytes).
        Submit(Vec<(usize, bool, usize)>),
        /// Reap with this event buffer size, waiting for all that is outstanding or fewer.
        Reap { max: usize, all: bool },
        /// Cancel with nothing running (after a full reap): the batch stays usable.
        CancelIdle,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            3 => proptest::sample::subsequence((0..SLOTS).collect::<Vec<_>>(), 1..8)
                .prop_flat_map(|slots| {
                    let n = slots.len();
                    (Just(slots), proptest::collection::vec((any::<bool>(), 1..=SLOT), n))
                })
                .prop_map(|(slots, kinds)| Step::Submit(
                    slots.into_iter().zip(kinds).map(|(s, (w, len))| (s, w, len)).collect()
                )),
            2 => (1usize..10, any::<bool>()).prop_map(|(max, all)| Step::Reap { max, all }),
            1 => Just(Step::CancelIdle),
        ]
    }

    /// Applies reaped events to the models: each event's entry is pending, moved all its
    /// bytes, and leaves the pending list.
    fn settle(
        events: &[hipfile_core::BatchEvent],
        pending: &mut Vec<(usize, bool, usize)>,
        file_model: &mut [u8],
        dev_model: &mut [u8],
    ) -> Result<(), TestCaseError> {
        for e in events {
            let i = pending.iter().position(|p| p.0 == e.cookie).expect("an event per entry");
            let (slot, write, len) = pending.remove(i);
            prop_assert_eq!(&e.result, &Ok(len));
            let r = slot * SLOT..slot * SLOT + len;
            if write {
                file_model[r.clone()].copy_from_slice(&dev_model[r]);
            } else {
                dev_model[r.clone()].copy_from_slice(&file_model[r]);
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn batches_match_the_model(capacity in 1usize..12, steps in proptest::collection::vec(step(), 1..24)) {
            let (gpu, d) = driver(&[("HIPFILE_BACKEND", "bounce"), ("HIPFILE_BOUNCE_CHUNK_KIB", "64")]);
            let mut file_model = pattern(SLOTS * SLOT, 5);
            let (_dir, f) = file_with(&file_model);
            let h = d.handle_register(&f).unwrap();
            let dev = gpu.malloc(SLOTS * SLOT).unwrap();
            let mut dev_model = pattern(SLOTS * SLOT, 77);
            gpu.write_device(dev, &dev_model).unwrap();
            let b = d.batch_setup(capacity).unwrap();
            let mut outstanding = 0usize;
            let mut pending: Vec<(usize, bool, usize)> = Vec::new(); // submitted, their effect not yet in the models
            for step in steps {
                match step {
                    Step::Submit(entries) => {
                        // Slots already in flight would race with these: skip such steps.
                        if entries.iter().any(|e| pending.iter().any(|p| p.0 == e.0)) {
                            continue;
                        }
                        let batch: Vec<BatchEntry> = entries.iter().map(|&(slot, write, len)| BatchEntry {
                            direction: if write { Direction::Write } else { Direction::Read },
                            handle: h,
                            buffer_base: dev,
                            buffer_offset: (slot * SLOT) as i64,
                            file_offset: (slot * SLOT) as i64,
                            size: len,
                            cookie: slot,
                        }).collect();
                        // SAFETY: mock device memory, or an address refused before use (no host memory allowed here).
                        let result = unsafe { d.batch_submit(b, &batch) };
                        if outstanding + entries.len() > capacity {
                            prop_assert_eq!(result, Err(Error::Op(OpError::BatchFull)));
                        } else {
                            prop_assert_eq!(result, Ok(()));
                            outstanding += entries.len();
                            pending.extend(entries);
                        }
                    }
                    Step::Reap { max, all } => {
                        let min = if all { outstanding.min(max) } else { 0 };
                        let events = d.batch_status(b, min, max, None).unwrap();
                        prop_assert!(events.len() >= min && events.len() <= max.min(outstanding));
                        settle(&events, &mut pending, &mut file_model, &mut dev_model)?;
                        outstanding -= events.len();
                    }
                    Step::CancelIdle => {
                        // Reap everything first, so no entry is left for the cancel to drop.
                        let events = d.batch_status(b, outstanding, outstanding.max(1), None).unwrap();
                        settle(&events, &mut pending, &mut file_model, &mut dev_model)?;
                        d.batch_cancel(b).unwrap();
                        outstanding = 0;
                        prop_assert!(pending.is_empty());
                    }
                }
            }
            // Reap the rest, then compare the bytes.
            let events = d.batch_status(b, outstanding, outstanding.max(1), None).unwrap();
            prop_assert_eq!(events.len(), outstanding);
            settle(&events, &mut pending, &mut file_model, &mut dev_model)?;
            let mut device = vec![0u8; SLOTS * SLOT];
            gpu.read_device(dev, &mut device).unwrap();
            prop_assert!(device == dev_model, "device memory differs from the model");
            prop_assert!(contents(&f) == file_model, "the file differs from the model");
        }
    }
}
