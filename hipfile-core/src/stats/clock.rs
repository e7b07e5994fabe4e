//! The clock the counters' times are kept in, and its conversion to nanoseconds.

/// The clock: the CPU's time-stamp counter where it runs at one rate on every core and in
/// every sleep state (x86-64 with `constant_tsc` and `nonstop_tsc`: a third of the cost of
/// `CLOCK_MONOTONIC`), else `CLOCK_MONOTONIC` in nanoseconds.
#[inline]
pub(super) fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if tsc_usable() {
        // SAFETY: RDTSC has no preconditions on x86-64.
        return unsafe { core::arch::x86_64::_rdtsc() };
    }
    monotonic_ns()
}

/// 1 when [`now`] reads the time-stamp counter, 0 when it gives nanoseconds.
pub(super) fn clock_kind() -> u64 {
    #[cfg(target_arch = "x86_64")]
    if tsc_usable() {
        return 1;
    }
    0
}

#[cfg(target_arch = "x86_64")]
pub(super) fn tsc_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| {
        use std::io::BufRead;
        let Ok(file) = std::fs::File::open("/proc/cpuinfo") else { return false };
        let flags = std::io::BufReader::new(file).lines().map_while(|l| l.ok()).find(|l| l.starts_with("flags"));
        flags.is_some_and(|f| {
            let words: Vec<&str> = f.split_whitespace().collect();
            words.contains(&"constant_tsc") && words.contains(&"nonstop_tsc")
        })
    })
}

pub(super) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds per tick of a region whose clock of `kind` read `ticks0` when
/// `CLOCK_MONOTONIC` read `mono0` (the region's header): measured against the time since, or
/// over a millisecond once per process when less has passed. The time-stamp counter is the
/// machine's, so another process on it converts the same way.
pub(super) fn ns_per_tick(kind: u64, ticks0: u64, mono0: u64) -> f64 {
    if kind == 0 {
        return 1.0;
    }
    if clock_kind() != kind {
        return 0.0; // cannot happen on one machine; times then read 0
    }
    let rate = |t0: u64, m0: u64| {
        let (t, m) = (now(), monotonic_ns());
        (m > m0 && t > t0).then(|| ((m - m0) as f64 / (t - t0) as f64, m - m0))
    };
    match rate(ticks0, mono0) {
        Some((r, elapsed)) if elapsed >= 1_000_000 => r,
        _ => {
            static CALIBRATED: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
            *CALIBRATED.get_or_init(|| {
                let (t0, m0) = (now(), monotonic_ns());
                while monotonic_ns() - m0 < 1_000_000 {
                    std::hint::spin_loop();
                }
                rate(t0, m0).map_or(0.0, |(r, _)| r)
            })
        }
    }
}
