use super::*;
use crate::error::Error;
use crate::stats::clock::ns_per_tick;

const READ: Direction = Direction::Read;
const WRITE: Direction = Direction::Write;

fn stats_at(level: u8) -> Arc<Stats> {
    let s = Stats::private();
    s.set_level(level);
    s
}

fn count(s: &Stats, dir: Direction, path: Path, device: i32, size: usize, result: Result<usize>) {
    let t = s.start().unwrap_or(0);
    s.io(t, dir, path, device, size, !size.is_multiple_of(4096), &result);
}

#[test]
fn size_classes_are_powers_of_two_kib() {
    let cases = [(0, 0), (1023, 0), (1024, 1), (2047, 1), (2048, 2), (4096, 3), (8191, 3), (1 << 20, 11)];
    for (bytes, class) in cases {
        assert_eq!(size_class(bytes), class, "{bytes}");
    }
    assert_eq!(size_class(usize::MAX), SIZE_CLASSES - 1);
    assert_eq!(size_class(0x7fff_f000), 21);
}

#[test]
fn level_0_counts_nothing() {
    let s = stats_at(0);
    assert_eq!(s.start(), None);
    count(&s, READ, Path::Bounce, 0, 4096, Ok(4096));
    s.add(Counter::HandleRegisterOk, 1);
    let snap = s.snapshot();
    assert_eq!(snap.totals(READ, None, None), Totals::default());
    assert_eq!(snap.get(Counter::HandleRegisterOk), 0);
    assert_eq!(snap.level, 0);
}

#[test]
fn level_1_counts_per_direction_and_path() {
    let s = stats_at(1);
    count(&s, READ, Path::Bounce, 0, 4096, Ok(4096));
    count(&s, READ, Path::P2p, 0, 8192, Ok(100));
    count(&s, READ, Path::Bounce, 0, 4096, Err(Error::Os(libc::EIO)));
    count(&s, WRITE, Path::Host, -1, 10, Ok(10));
    let snap = s.snapshot();
    let r = snap.totals(READ, None, None);
    assert_eq!((r.ok, r.err, r.bytes, r.unaligned), (2, 1, 4196, 0));
    assert_eq!(snap.totals(READ, Some(Path::P2p), None).bytes, 100);
    let w = snap.totals(WRITE, Some(Path::Host), None);
    assert_eq!((w.ok, w.bytes, w.unaligned), (1, 10, 1));
    // Neither size classes nor GPUs at level 1.
    assert_eq!(snap.size_histogram(READ), [0; SIZE_CLASSES]);
    assert!(snap.gpus_used().is_empty());
    assert_eq!(snap.level, 1);
}

#[test]
fn level_2_adds_size_classes_and_level_3_gpus() {
    let s = stats_at(2);
    count(&s, READ, Path::Bounce, 1, 4096, Ok(4096));
    count(&s, READ, Path::Bounce, 1, 1 << 20, Ok(1 << 20));
    let snap = s.snapshot();
    let h = snap.size_histogram(READ);
    assert_eq!((h[3], h[11], h.iter().sum::<u64>()), (1, 1, 2));
    assert!(snap.gpus_used().is_empty());

    let s = stats_at(3);
    count(&s, READ, Path::P2p, 1, 4096, Ok(4096));
    count(&s, WRITE, Path::Bounce, 3, 4096, Ok(4096));
    count(&s, WRITE, Path::Bounce, 99, 4096, Ok(4096)); // past HIPFILE_MAX_GPUS: no GPU row
    s.registered_bytes(3, 1 << 20);
    let snap = s.snapshot();
    assert_eq!(snap.gpus_used(), vec![1, 3]);
    assert_eq!(snap.totals(READ, Some(Path::P2p), Some(1)).ok, 1);
    assert_eq!(snap.totals(WRITE, None, Some(3)).bytes, 4096);
    assert_eq!(snap.totals(WRITE, None, None).ok, 2);
    assert_eq!(snap.registered_bytes(3), 1 << 20);
    s.registered_bytes(3, -(1 << 20));
    assert_eq!(s.snapshot().registered_bytes(3), 0);
}

#[test]
fn times_are_microseconds() {
    let s = stats_at(1);
    let t = s.start().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    s.io(t, READ, Path::Bounce, 0, 1, false, &Ok(1));
    let r = s.snapshot().totals(READ, None, None);
    assert!((20_000..2_000_000).contains(&r.micros), "{r:?}");
    assert_eq!(r.latency_avg_us(), r.micros);
    assert_eq!(r.ops_per_second(), 1_000_000 / r.micros);
    let t = s.start().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    s.add(Counter::BatchSubmitTime, s.since(t));
    assert!((5_000..2_000_000).contains(&s.snapshot().micros(Counter::BatchSubmitTime)));
}

#[test]
fn no_count_is_lost_across_threads() {
    // More threads than slots, so some share a slot.
    let s = stats_at(3);
    std::thread::scope(|scope| {
        for t in 0..(SLOTS + 36) {
            let s = &s;
            scope.spawn(move || {
                for _ in 0..500 {
                    count(s, READ, Path::Bounce, (t % 4) as i32, 4096, Ok(4096));
                    s.add(Counter::BatchEntries, 1);
                }
            });
        }
    });
    let snap = s.snapshot();
    let n = (SLOTS + 36) as u64 * 500;
    assert_eq!(snap.totals(READ, None, None).ok, n);
    assert_eq!(snap.totals(READ, None, Some(2)).ok, n / 4);
    assert_eq!(snap.size_histogram(READ)[3], n);
    assert_eq!(snap.get(Counter::BatchEntries), n);
}

#[test]
fn totals_derive_rates_without_dividing_by_zero() {
    let t = Totals { ok: 2, err: 0, bytes: 1_000_000, micros: 0, unaligned: 0 };
    assert_eq!((t.bandwidth(), t.ops_per_second(), t.latency_avg_us()), (0, 0, 0));
    let t = Totals { micros: 1_000_000, ..t };
    assert_eq!((t.bandwidth(), t.ops_per_second(), t.latency_avg_us()), (1_000_000, 2, 500_000));
}

#[test]
fn ticks_convert_to_nanoseconds_even_right_after_the_region_is_made() {
    assert_eq!(ns_per_tick(0, 0, 0), 1.0);
    let kind = clock_kind();
    let fresh = ns_per_tick(kind, now(), monotonic_ns()); // less than a millisecond: calibrated
    std::thread::sleep(std::time::Duration::from_millis(5));
    let (t0, m0) = (now(), monotonic_ns());
    std::thread::sleep(std::time::Duration::from_millis(5));
    let measured = ns_per_tick(kind, t0, m0);
    assert!(fresh > 0.0 && (fresh / measured - 1.0).abs() < 0.02, "{fresh} vs {measured}");
}

/// Shared counters are untrusted: whatever bytes a region holds (a reader that wrote them, a
/// torn read), reading and deriving figures from them neither panics nor overflows.
#[test]
fn any_bytes_in_the_region_read_without_overflow() {
    for word in [u64::MAX, u64::MAX / 3, 1 << 63, 0x0123_4567_89ab_cdef] {
        let snap = Snapshot::read(&|i| if i == header::CLOCK { 1 } else { word });
        for dir in [READ, WRITE] {
            let t = snap.totals(dir, None, None);
            assert!(t.ok > 0 && t.bytes > 0);
            let _ = (t.bandwidth(), t.latency_avg_us(), t.ops_per_second());
            let _ = snap.size_histogram(dir);
            for path in Path::ALL {
                let _ = snap.totals(dir, Some(path), Some(0));
            }
        }
        assert_eq!(snap.gpus_used().len(), MAX_GPUS);
        let _ = (snap.get(Counter::BatchEntries), snap.micros(Counter::BatchSubmitTime));
        let _ = (snap.registered_bytes(3), snap.last_batch());
    }
}

#[test]
fn a_reset_counts_from_zero_again_and_keeps_what_is_not_a_count() {
    let s = stats_at(3);
    count(&s, READ, Path::Bounce, 0, 4096, Ok(4096));
    s.add(Counter::HandleRegisterOk, 2);
    s.registered_bytes(0, 1 << 20);
    s.last_batch(10, 0);
    s.reset();
    let snap = s.snapshot();
    assert_eq!(snap.totals(READ, None, None), Totals::default());
    assert_eq!(snap.get(Counter::HandleRegisterOk), 0);
    assert_eq!(snap.size_histogram(READ), [0; SIZE_CLASSES]);
    assert_eq!(snap.registered_bytes(0), 1 << 20, "memory registered now is not a count");
    assert_eq!(snap.last_batch(), (10, 0));
    count(&s, READ, Path::Bounce, 0, 100, Ok(100));
    count(&s, READ, Path::Bounce, 0, 100, Err(Error::Os(libc::EIO)));
    let r = s.snapshot().totals(READ, None, None);
    assert_eq!((r.ok, r.err, r.bytes), (1, 1, 100), "counted after the reset");
}
