//! Served copies ([`GpuRuntime::serve`](hipfile_core::GpuRuntime::serve)): small copies from
//! pinned host memory to a device with no runtime call each. A kernel stays running while
//! they come, one block for each slot of a queue in pinned host memory; a caller writes its
//! copy into a free slot, and the slot's block copies the bytes (the GPU reading the host
//! memory itself) and writes the request's number back as its acknowledgement. A copy call
//! costs the runtime 2-3 µs whatever its size, one call at a time from many threads; a served
//! copy costs the time the GPU takes to see the request and move the bytes
//! (docs/performance.md, "Small reads and many callers").
//!
//! The kernel ends itself: once no slot has had a request for [`IDLE_NS`], and in any case
//! after [`LIFE_NS`], so that a device-wide wait (`cudaDeviceSynchronize`,
//! `torch.cuda.synchronize`) never waits longer than that for it. Before it ends it writes its
//! generation into [`Shared::closed`]; a caller that finds the kernel it counts on closed
//! launches the next generation (on the server's stream, so it starts once the last has
//! ended), which serves whatever request is still unacknowledged. A request is served once:
//! a block takes a request only while its kernel is not closing, and a new generation starts
//! from the acknowledgements the last one wrote.
//!
//! Where a launch fails, the server stops for good: its callers wait until every kernel has
//! ended, and a request still unacknowledged then was never copied (the caller copies it the
//! usual way). Where the kernel fails, its callers get the error.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hipfile_core::HipError;
use hipfile_core::sync::lock;

/// Slots in a queue: requests served at once on one device (a caller finding none free copies
/// the usual way).
pub(crate) const SLOTS: usize = 32;
/// Without a request for this long, the kernel ends.
pub(crate) const IDLE_NS: u64 = 20_000;
/// However busy, the kernel ends after this long (the next request launches it again).
pub(crate) const LIFE_NS: u64 = 200_000;

/// One slot of the queue, as the kernel reads it (offsets 0, 8, 16, 24; the acknowledgement at
/// 64, on a cache line of its own).
#[repr(C, align(128))]
#[derive(Default)]
pub(crate) struct Slot {
    /// The request's number (one more than the last); written last.
    req: AtomicU64,
    src: AtomicU64,
    dst: AtomicU64,
    len: AtomicU64,
    _room: [u64; 4],
    /// The number of the last request copied.
    ack: AtomicU64,
    _rest: [u64; 7],
}

/// What the host and the kernel share, in pinned host memory: the slots, then the generation
/// of the last kernel that has closed (0 before the first).
#[repr(C)]
#[derive(Default)]
pub(crate) struct Shared {
    pub(crate) slots: [Slot; SLOTS],
    pub(crate) closed: AtomicU64,
}

/// What a server needs of its device.
pub(crate) trait Launcher: Send + Sync {
    /// Queues the kernel, generation `generation`, to start once the last one has ended.
    fn launch(&self, generation: u64) -> Result<(), HipError>;
    /// Whether every kernel queued has ended; a kernel's failure.
    fn ended(&self) -> Result<bool, HipError>;
}

/// A device's queue of served copies.
pub(crate) struct Server<L> {
    shared: &'static Shared,
    launcher: L,
    /// The generation launched last (0: none).
    live: AtomicU64,
    /// The free slots, a bit each.
    free: AtomicU64,
    launching: Mutex<()>,
    /// A launch has failed: nothing is served any more.
    stopped: AtomicBool,
}

/// Looks at an acknowledgement between checks on the kernel.
const LOOKS: u32 = 64;
/// Looks after which a caller lets other threads run while it waits, and asks whether the
/// kernel has failed (about a millisecond).
const LONG_WAIT: u32 = 1 << 16;

impl<L: Launcher> Server<L> {
    /// A server over `shared` (zeroed, in pinned memory the device reads and writes).
    pub(crate) fn new(shared: &'static Shared, launcher: L) -> Self {
        Server {
            shared,
            launcher,
            live: AtomicU64::new(0),
            free: AtomicU64::new(u64::MAX >> (64 - SLOTS)),
            launching: Mutex::new(()),
            stopped: AtomicBool::new(false),
        }
    }

    /// Copies `len` bytes at `src` to `dst` and returns once they are there: `None` where the
    /// copy was not served (no slot free, or the server stopped), nothing having been copied.
    ///
    /// # Safety
    /// `src` must be pinned host memory the device reads, `dst` memory of the server's device;
    /// both valid (and the source untouched) until this returns, all three multiples of 16.
    pub(crate) unsafe fn copy(&self, src: usize, dst: usize, len: usize) -> Option<Result<(), HipError>> {
        if self.stopped.load(Ordering::Relaxed) {
            return None;
        }
        let i = self.claim()?;
        let slot = &self.shared.slots[i];
        // Only the slot's holder writes its request.
        let n = slot.req.load(Ordering::Relaxed).wrapping_add(1);
        slot.src.store(src as u64, Ordering::Relaxed);
        slot.dst.store(dst as u64, Ordering::Relaxed);
        slot.len.store(len as u64, Ordering::Relaxed);
        slot.req.store(n, Ordering::Release);
        let outcome = self.wait(slot, n);
        // A slot whose request failed, or may still be taken, is not used again.
        if matches!(outcome, Some(Ok(()))) {
            self.free.fetch_or(1 << i, Ordering::Release);
        }
        outcome
    }

    /// A free slot, taken.
    fn claim(&self) -> Option<usize> {
        let taken = self.free.fetch_update(Ordering::Acquire, Ordering::Relaxed, |m| (m != 0).then(|| m & (m - 1)));
        taken.ok().map(|m| m.trailing_zeros() as usize)
    }

    /// Waits for `slot`'s acknowledgement of request `n`, launching the kernel where it has
    /// closed.
    fn wait(&self, slot: &Slot, n: u64) -> Option<Result<(), HipError>> {
        let mut looks = 0u32;
        loop {
            if slot.ack.load(Ordering::Acquire) == n {
                return Some(Ok(()));
            }
            if looks.is_multiple_of(LOOKS) {
                if self.serving().is_err() {
                    return self.withdraw(slot, n);
                }
                if looks >= LONG_WAIT {
                    if let Err(e) = self.launcher.ended() {
                        return Some(Err(e));
                    }
                    std::thread::yield_now();
                }
            }
            looks = looks.saturating_add(1);
            std::hint::spin_loop();
        }
    }

    /// Launches the next kernel where the one launched last has closed (or none has run); an
    /// error where the server has stopped.
    fn serving(&self) -> Result<(), HipError> {
        let open = || self.shared.closed.load(Ordering::Acquire) != self.live.load(Ordering::Acquire);
        if self.stopped.load(Ordering::Relaxed) {
            return Err(HipError::NOT_SUPPORTED);
        }
        if open() {
            return Ok(());
        }
        let _one = lock(&self.launching);
        if open() {
            return Ok(());
        }
        let generation = self.live.load(Ordering::Relaxed) + 1;
        if let Err(e) = self.launcher.launch(generation) {
            self.stopped.store(true, Ordering::Relaxed);
            return Err(e);
        }
        self.live.store(generation, Ordering::Release);
        Ok(())
    }

    /// After a launch failed: waits until no kernel runs, then whether request `n` was copied
    /// (`None`: it never will be).
    fn withdraw(&self, slot: &Slot, n: u64) -> Option<Result<(), HipError>> {
        loop {
            match self.launcher.ended() {
                Ok(true) => break,
                Ok(false) => std::thread::yield_now(),
                Err(e) => return Some(Err(e)),
            }
        }
        (slot.ack.load(Ordering::Acquire) == n).then_some(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    use super::*;

    /// The kernel, as threads: each launch a thread that waits for the last to end, then does
    /// what the kernel's blocks do (all slots in turn), with `idle` and `life` its limits.
    struct Emulated {
        shared: &'static Shared,
        runs: Mutex<Vec<JoinHandle<()>>>,
        launches: AtomicUsize,
        /// Launches after which `launch` fails.
        fail_after: usize,
        idle: Duration,
        life: Duration,
    }

    impl Launcher for Arc<Emulated> {
        fn launch(&self, generation: u64) -> Result<(), HipError> {
            if self.launches.fetch_add(1, Ordering::Relaxed) >= self.fail_after {
                return Err(HipError(98));
            }
            let mut runs = lock(&self.runs);
            let last = runs.pop();
            let me = Arc::clone(self);
            runs.push(std::thread::spawn(move || {
                if let Some(last) = last {
                    last.join().unwrap();
                }
                me.run(generation);
            }));
            Ok(())
        }

        fn ended(&self) -> Result<bool, HipError> {
            Ok(lock(&self.runs).iter().all(JoinHandle::is_finished))
        }
    }

    impl Emulated {
        fn run(&self, generation: u64) {
            let started = Instant::now();
            let mut last_work = started;
            let mut seen: Vec<u64> = self.shared.slots.iter().map(|s| s.ack.load(Ordering::Acquire)).collect();
            while last_work.elapsed() < self.idle && started.elapsed() < self.life {
                for (slot, seen) in self.shared.slots.iter().zip(&mut seen) {
                    let req = slot.req.load(Ordering::Acquire);
                    if req == *seen {
                        continue;
                    }
                    let (src, dst, len) = (
                        slot.src.load(Ordering::Relaxed),
                        slot.dst.load(Ordering::Relaxed),
                        slot.len.load(Ordering::Relaxed),
                    );
                    // SAFETY: the request's holder keeps both ranges valid until acknowledged.
                    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, len as usize) };
                    slot.ack.store(req, Ordering::Release);
                    *seen = req;
                    last_work = Instant::now();
                }
                std::hint::spin_loop();
            }
            self.shared.closed.store(generation, Ordering::Release);
        }
    }

    fn server(fail_after: usize, idle_us: u64) -> (Server<Arc<Emulated>>, Arc<Emulated>) {
        let shared: &'static Shared = Box::leak(Box::default());
        let emulated = Arc::new(Emulated {
            shared,
            runs: Mutex::default(),
            launches: AtomicUsize::new(0),
            fail_after,
            idle: Duration::from_micros(idle_us),
            life: Duration::from_micros(idle_us * 10),
        });
        (Server::new(shared, Arc::clone(&emulated)), emulated)
    }

    /// Each of `threads` threads copies `calls` buffers of its own, pausing now and then (so
    /// that kernels close and others launch); returns how many were served, checking each.
    fn copies(server: &Server<Arc<Emulated>>, threads: usize, calls: usize) -> usize {
        let served = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..threads {
                let served = &served;
                s.spawn(move || {
                    for c in 0..calls {
                        let src: Vec<u8> = (0..64 + 16 * (c % 7)).map(|i| (i * 31 + c * 7 + t) as u8).collect();
                        let mut dst = vec![0u8; src.len()];
                        // SAFETY: both buffers live, and the source is untouched, until it returns.
                        let outcome =
                            unsafe { server.copy(src.as_ptr() as usize, dst.as_mut_ptr() as usize, src.len()) };
                        match outcome {
                            Some(Ok(())) => {
                                assert_eq!(dst, src, "thread {t} call {c}");
                                served.fetch_add(1, Ordering::Relaxed);
                            }
                            Some(Err(e)) => panic!("thread {t} call {c}: {e:?}"),
                            None => assert!(dst.iter().all(|&b| b == 0), "an unserved copy wrote"),
                        }
                        if c % 50 == t {
                            std::thread::sleep(Duration::from_micros(300));
                        }
                    }
                });
            }
        });
        served.into_inner()
    }

    #[test]
    fn every_copy_served_across_kernels_that_close_and_relaunch() {
        let (server, emulated) = server(usize::MAX, 100);
        assert_eq!(copies(&server, 8, 400), 8 * 400);
        assert!(emulated.launches.load(Ordering::Relaxed) > 1, "kernels closed and launched again");
    }

    #[test]
    fn more_callers_than_slots_copy_or_are_turned_away() {
        let (server, _) = server(usize::MAX, 200);
        let served = copies(&server, SLOTS + 8, 100);
        assert!(served > 0);
    }

    #[test]
    fn a_failed_launch_stops_the_server_and_loses_no_copy() {
        // The third launch fails: every copy is served, or reported unserved with its
        // destination untouched; none hangs; nothing is served afterwards.
        let (server, emulated) = server(2, 50);
        let served = copies(&server, 4, 300);
        assert!(served > 0 && served < 4 * 300, "served {served}");
        assert_eq!(emulated.launches.load(Ordering::Relaxed), 3);
        let (src, mut dst) = ([7u8; 16], [0u8; 16]);
        // SAFETY: as in `copies`.
        assert_eq!(unsafe { server.copy(src.as_ptr() as usize, dst.as_mut_ptr() as usize, 16) }, None);
    }
}
