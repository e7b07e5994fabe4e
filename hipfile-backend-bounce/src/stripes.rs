//! Reads through stripes: the threads of a read fill large pinned staging buffers together, and
//! one copy moves each to the device.
//!
//! A read is cut into stripes (up to the configured chunk, 4 MiB by default; a request alone
//! on its device into at least four, so that copies start early), and a stripe whose bytes the
//! page cache holds into pieces, one per thread (at least 64 KiB): the threads take pieces in
//! order, each reading its piece into the stripe's staging buffer, and the thread that ends a
//! stripe's last piece queues the stripe's copy on the read's stream. So a copy is as large as
//! a stripe while every thread reads. Reads went through lanes before (a thread with its own two
//! buffers copying what it alone read, as writes still do): each copy costs microseconds beyond
//! its bytes, and one caller's calls ran the copies in lockstep with the reads. Measured on the
//! H200 against lanes in one binary (`docs/performance.md`, "Reads through stripes"): one
//! caller's 4 MiB calls 1.5x, 64 MiB calls 1.1x, four callers of 16 MiB 1.15x, whole files and
//! batches the same. A stripe the page cache holds none of is one piece, read with `O_DIRECT`
//! (the disk wants large requests).
//!
//! Staging: [`SlotPool`], per device, made on first use (or ahead, by the warmer) up to its
//! memory limit and kept. A slot is handed out again only once the copy queued from it has run
//! (its event), which is the only thing that keeps a queued copy's host memory intact: the
//! `unsafe` of the read path is here.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use hipfile_core::sync::lock;
use hipfile_core::{DeviceCopy, Error, Event, GpuRuntime, HipError, Result, Stream};

use crate::bounded::Bounded;
use crate::fileio::PAGE;
use crate::lanes::{Stage, Staging};

/// Smallest piece a thread reads of a cached stripe (smaller pieces cost more in system calls
/// than they save in waiting).
pub(crate) const MIN_PIECE: usize = 64 << 10;

/// Most stripes being set up at once for one read.
pub(crate) const SET_UPS: usize = 3;

/// Smallest stripe a request alone on its device is cut into.
pub(crate) const MIN_ALONE_STRIPE: usize = 1 << 20;

/// The stripe for `total` bytes alone on a device: a quarter of them (so that the first copy
/// starts after a quarter has been read), at least [`MIN_ALONE_STRIPE`], at most `chunk`.
pub(crate) fn alone_stripe(chunk: usize, total: usize) -> usize {
    (total / 4).next_multiple_of(64 << 10).max(MIN_ALONE_STRIPE).min(chunk)
}

/// The piece each of `threads` threads reads of a cached stripe of `stripe` bytes.
pub(crate) fn piece_for(stripe: usize, threads: usize) -> usize {
    (stripe / threads.max(1)).next_multiple_of(PAGE as usize).max(MIN_PIECE).min(stripe)
}

/// A stripe's staging buffer, and the event of the last copy queued from it.
pub(crate) struct Slot {
    stage: Stage,
    event: Event,
    /// A copy queued from the stage may still read it (until `event` completes).
    queued: bool,
}

/// The slots of one device and the streams its reads copy on, made on first use up to their
/// limits and kept for the backend's life.
pub(crate) struct SlotPool<G: GpuRuntime + ?Sized> {
    staging: Staging<G>,
    device: i32,
    /// The largest stripe a slot holds.
    stripe: usize,
    slots: Bounded<Slot>,
    /// As many as reads in flight on the device at once, up to a limit (a read waits for one
    /// beyond it).
    streams: Bounded<Stream>,
}

/// Waits (looking, not sleeping: a copy takes microseconds) until `event` has completed.
fn wait_event<G: GpuRuntime + ?Sized>(gpu: &G, event: Event) -> std::result::Result<(), HipError> {
    while !gpu.event_query(event)? {
        std::thread::yield_now();
    }
    Ok(())
}

impl<G: GpuRuntime + ?Sized> SlotPool<G> {
    /// Slots of `device` for stripes of up to `stripe` bytes, at most `most` of them and at
    /// most `memory_limit` bytes (and at least one), staged on `node` where given; and at most
    /// `most` streams.
    pub(crate) fn new(
        gpu: Arc<G>,
        device: i32,
        node: Option<u32>,
        stripe: usize,
        memory_limit: usize,
        most: usize,
    ) -> Self {
        SlotPool {
            staging: Staging::new(gpu, node),
            device,
            stripe,
            slots: Bounded::new((memory_limit / (stripe + 2 * PAGE as usize)).min(most)),
            streams: Bounded::new(most),
        }
    }

    /// A slot no copy uses any more (the oldest given back: its copy is the likeliest to have
    /// run), waiting for one when the device has as many as its limit allows. The calling
    /// thread's current device must be this pool's.
    pub(crate) fn take(&self) -> std::result::Result<Slot, HipError> {
        let mut slot = self.slots.take(|| self.create())?;
        if slot.queued {
            if let Err(e) = wait_event(&*self.staging.gpu, slot.event) {
                self.put(slot); // still queued: its next taker waits again
                return Err(e);
            }
            slot.queued = false;
        }
        Ok(slot)
    }

    /// Gives a slot back (a copy still queued from it is waited for by its next taker).
    pub(crate) fn put(&self, slot: Slot) {
        self.slots.put(slot);
    }

    /// Creates slots until the device has `target` (or its limit), without waiting for any:
    /// staging set up ahead of the first read. Stops at the first failure, or when `stop` says
    /// so. The calling thread's current device must be this pool's.
    pub(crate) fn prefill(&self, target: usize, stop: &dyn Fn() -> bool) -> std::result::Result<(), HipError> {
        self.slots.prefill(target, stop, || self.create())
    }

    fn create(&self) -> std::result::Result<Slot, HipError> {
        let stage = self.staging.stage(self.stripe)?;
        match self.staging.gpu.event_create() {
            Ok(event) => Ok(Slot { stage, event, queued: false }),
            Err(e) => {
                self.staging.free(stage);
                Err(e)
            }
        }
    }

    /// A stream for one read's copies (they run in order on it), waiting for one when the
    /// device has as many as its limit allows.
    pub(crate) fn stream(&self) -> std::result::Result<Stream, HipError> {
        self.streams.take(|| self.staging.gpu.stream_create())
    }

    /// Gives back a stream whose copies have all run.
    pub(crate) fn put_stream(&self, stream: Stream) {
        self.streams.put(stream);
    }
}

impl<G: GpuRuntime + ?Sized> Drop for SlotPool<G> {
    fn drop(&mut self) {
        let (slots, streams) = (self.slots.drain(), self.streams.drain());
        if slots.is_empty() && streams.is_empty() {
            return;
        }
        // Pinned memory, events and streams belong to their device: free them there, then
        // give the dropping thread its device back.
        let gpu = &*self.staging.gpu;
        let previous = gpu.current_device();
        let _ = gpu.set_device(self.device);
        for slot in slots {
            if slot.queued && wait_event(gpu, slot.event).is_err() {
                continue; // a copy may still read it: leaked rather than freed under it
            }
            let _ = gpu.event_destroy(slot.event);
            self.staging.free(slot.stage);
        }
        for stream in streams {
            let _ = gpu.stream_destroy(stream);
        }
        if let Ok(previous) = previous {
            let _ = gpu.set_device(previous);
        }
    }
}

/// How a stripe is read, decided by the first thread to reach it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Setup {
    /// Into the slot whose stripe's byte 0 is at address `at`, in pieces of `piece` bytes;
    /// `direct`: one piece, with `O_DIRECT` where the file allows.
    Read { at: usize, piece: usize, direct: bool },
    /// No slot (its request has failed with the error): nothing is read.
    Failed,
}

/// A part of one request that one copy moves: `len` bytes from `skip` into the request.
pub(crate) struct Stripe {
    pub(crate) req: usize,
    pub(crate) skip: usize,
    pub(crate) len: usize,
    /// Set by the first thread to reach the stripe ([`Stripe::try_set_up`]).
    setup: OnceLock<Setup>,
    /// Someone is setting the stripe up.
    setting_up: AtomicBool,
    slot: Mutex<Option<Slot>>,
    /// The next byte to hand out.
    next: AtomicUsize,
    /// Bytes handed out and read (or given up).
    filled: AtomicUsize,
    /// Bytes from the start that hold the file's data (less after end of file or an error).
    valid: AtomicUsize,
    /// Bytes copied to the device.
    pub(crate) moved: AtomicUsize,
}

impl Stripe {
    pub(crate) fn new(req: usize, skip: usize, len: usize) -> Self {
        Stripe {
            req,
            skip,
            len,
            setup: OnceLock::new(),
            setting_up: AtomicBool::new(false),
            slot: Mutex::new(None),
            next: AtomicUsize::new(0),
            filled: AtomicUsize::new(0),
            valid: AtomicUsize::new(len),
            moved: AtomicUsize::new(0),
        }
    }

    /// How it is read (set by the first taker; `Failed` before).
    pub(crate) fn setup(&self) -> Setup {
        self.setup.get().copied().unwrap_or(Setup::Failed)
    }

    /// How it is read, setting it up with `setup` if no thread has begun to; `None` while
    /// another thread is setting it up.
    fn try_set_up(&self, setup: impl Fn(&Stripe) -> Setup) -> Option<Setup> {
        if let Some(&how) = self.setup.get() {
            return Some(how);
        }
        if self.setting_up.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(*self.setup.get_or_init(|| setup(self)))
    }

    /// Sets the stripe up for reading into `slot` in pieces of `piece` bytes, its byte 0 at
    /// `offset % PAGE` into the slot (the layout rule of [`crate::lanes`]).
    pub(crate) fn hold(&self, slot: Slot, offset: u64, piece: usize, direct: bool) -> Setup {
        let (base, usable) = slot.stage.extent();
        let at = base + (offset % PAGE) as usize;
        debug_assert!(at + self.len <= base + usable);
        *lock(&self.slot) = Some(slot);
        Setup::Read { at, piece, direct }
    }

    /// Bytes `[from, from + len)` of the stripe, to read a piece into.
    ///
    /// # Safety
    /// The setup is `Read`, and `[from, from + len)` is a piece handed out to the caller alone
    /// (by [`Stripes::take`]), whose slot the stripe holds until its last piece is done.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn piece(&self, at: usize, from: usize, len: usize) -> &mut [u8] {
        // SAFETY: per the contract, the bytes lie inside the held slot's stage (`hold`) and no
        // other thread touches them until the piece is done.
        unsafe { std::slice::from_raw_parts_mut((at + from) as *mut u8, len) }
    }

    /// A piece at `from` read only `n` bytes (end of file, or 0 for an error): the stripe holds
    /// the file's data up to there at most.
    pub(crate) fn short(&self, from: usize, n: usize) {
        self.valid.fetch_min(from + n, Ordering::AcqRel);
    }

    /// `len` more bytes are done; true for the piece that ends the stripe.
    pub(crate) fn filled(&self, len: usize) -> bool {
        self.filled.fetch_add(len, Ordering::AcqRel) + len == self.len
    }

    /// The stripe's slot and the bytes it holds, for the thread that ended its last piece.
    pub(crate) fn release(&self) -> (Option<Slot>, usize) {
        (lock(&self.slot).take(), self.valid.load(Ordering::Acquire))
    }
}

/// The stripes of a read (one or more requests of one device), taken in order.
pub(crate) struct Stripes {
    pub(crate) list: Vec<Stripe>,
    /// The first stripe that may still have pieces to hand out.
    current: AtomicUsize,
    /// Stripes whose copy has been queued (or given up).
    ended: AtomicUsize,
    /// Dropped when the last stripe has ended: the caller's receiver then returns.
    unended: Mutex<Option<mpsc::Sender<()>>>,
}

impl Stripes {
    /// The stripes, and what the caller waits on (a receiver that returns once every stripe
    /// has ended).
    pub(crate) fn new(list: Vec<Stripe>) -> (Stripes, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let unended = Mutex::new((!list.is_empty()).then_some(tx));
        (Stripes { list, current: AtomicUsize::new(0), ended: AtomicUsize::new(0), unended }, rx)
    }

    /// The next piece, `(stripe, from, len)`: of the first stripe with a piece left, in order.
    /// A stripe reached first is set up with `setup` by the thread that reached it; the others
    /// go on to the stripes after it (up to [`SET_UPS`] being set up at once, so that setups,
    /// a system call and a slot each, do not hold every thread up one after another), and look
    /// again (yielding) when those are all being set up. `None` when every piece has been
    /// handed out.
    pub(crate) fn take(&self, setup: impl Fn(&Stripe) -> Setup) -> Option<(usize, usize, usize)> {
        loop {
            let first = self.current.load(Ordering::Acquire);
            let mut busy = 0; // stripes passed that another thread is setting up
            for (s, stripe) in self.list.iter().enumerate().skip(first) {
                let Some(how) = stripe.try_set_up(&setup) else {
                    busy += 1;
                    if busy == SET_UPS {
                        break;
                    }
                    continue;
                };
                let piece = match how {
                    Setup::Read { piece, .. } => piece,
                    Setup::Failed => stripe.len,
                };
                let from = stripe.next.fetch_add(piece, Ordering::AcqRel);
                if from < stripe.len {
                    return Some((s, from, piece.min(stripe.len - from)));
                }
                // Handed out: the front moves past it when it is the front.
                let _ = self.current.compare_exchange(s, s + 1, Ordering::AcqRel, Ordering::Acquire);
            }
            if busy == 0 {
                return None;
            }
            std::thread::yield_now();
        }
    }

    /// Stripe `s` has ended, having copied `moved` bytes.
    pub(crate) fn end(&self, s: usize, moved: usize) {
        self.list[s].moved.store(moved, Ordering::Relaxed);
        if self.ended.fetch_add(1, Ordering::AcqRel) + 1 == self.list.len() {
            lock(&self.unended).take();
        }
    }
}

/// Queues the copy of a stripe's `len` bytes from `slot` (its byte 0 at `at`) to `dst` on
/// `stream`, and marks the slot queued until the copy has run.
///
/// # Safety
/// `[at, at + len)` lies inside the slot's stage; `dst` is device memory of the runtime that
/// stays valid until the stream has run the copy.
pub(crate) unsafe fn ship<G: GpuRuntime + ?Sized>(
    gpu: &G,
    slot: &mut Slot,
    at: usize,
    len: usize,
    dst: hipfile_core::DeviceSpan,
    stream: Stream,
) -> Result<()> {
    // SAFETY: the bytes lie inside the slot's stage (the caller's contract), which nothing
    // touches again before the copy has run: the slot is marked queued below, and handed out
    // (`SlotPool::take`) or freed (`SlotPool`'s drop) only after its event has completed.
    let src = unsafe { std::slice::from_raw_parts(at as *const u8, len) };
    // SAFETY: as above; `dst` per the caller's contract.
    unsafe { gpu.copy_to_device_async(dst, src, stream) }.map_err(Error::from)?;
    slot.queued = true;
    if let Err(e) = gpu.event_record(slot.event, stream) {
        // Without the event nothing would say when the copy has run: wait for it here.
        gpu.stream_synchronize(stream)?;
        slot.queued = false;
        return Err(e.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use hipfile_backend_mock::MockGpu;
    use hipfile_core::DeviceSpan;

    #[test]
    fn prefill_makes_slots_ahead_without_passing_the_limit_or_waiting() {
        let gpu = MockGpu::new(2);
        gpu.set_device(1).unwrap();
        let pool = SlotPool::new(Arc::clone(&gpu), 1, None, 64 << 10, 64 << 20, 3);
        let held = pool.take().unwrap(); // a read holds one
        pool.prefill(usize::MAX, &|| false).unwrap();
        assert_eq!(pool.slots.counts(), (2, 3), "up to the limit of 3");
        assert_eq!(gpu.pinned_allocations().get(&1), Some(&3));
        pool.prefill(usize::MAX, &|| true).unwrap(); // told to stop: returns at once
        pool.put(held);
        gpu.set_device(0).unwrap();
        drop(pool);
        assert!(gpu.pinned_allocations().is_empty());
        assert_eq!(gpu.current_device(), Ok(0), "freed on device 1, the dropping thread's device kept");
    }

    #[test]
    fn the_memory_limit_bounds_the_slots() {
        let gpu = MockGpu::new(1);
        let per_slot = (64 << 10) + 2 * PAGE as usize;
        let pool = SlotPool::new(Arc::clone(&gpu), 0, None, 64 << 10, 2 * per_slot, 100);
        pool.prefill(usize::MAX, &|| false).unwrap();
        assert_eq!(pool.slots.counts().1, 2);
        let tiny = SlotPool::new(Arc::clone(&gpu), 0, None, 64 << 10, 1, 100);
        tiny.prefill(usize::MAX, &|| false).unwrap();
        assert_eq!(tiny.slots.counts().1, 1, "at least one");
    }

    #[test]
    fn a_slot_is_handed_out_again_only_after_its_copy_has_run() {
        let gpu = MockGpu::new(1);
        let pool = SlotPool::new(Arc::clone(&gpu), 0, None, 64 << 10, 64 << 20, 1);
        let stream = pool.stream().unwrap();
        let dev = gpu.malloc(4096).unwrap();
        // SAFETY: the allocation above, alive until `gpu` goes.
        let span = unsafe { DeviceSpan::new(dev, 4096) };
        let mut slot = pool.take().unwrap();
        let (base, _) = slot.stage.extent();
        // SAFETY: the slot's stage, which this test alone holds.
        unsafe { std::slice::from_raw_parts_mut(base as *mut u8, 4096) }.fill(7);
        gpu.faults().delay_copies(std::time::Duration::from_millis(50));
        // SAFETY: the stage's first 4096 bytes; the device memory outlives the copy.
        unsafe { ship(&*gpu, &mut slot, base, 4096, span, stream) }.unwrap();
        assert!(slot.queued);
        pool.put(slot);
        let slot = pool.take().unwrap(); // the only slot: waits for the copy
        assert!(!slot.queued);
        let mut back = vec![0u8; 4096];
        gpu.read_device(dev, &mut back).unwrap();
        assert!(back.iter().all(|&b| b == 7), "the copy had run when the slot came back");
        gpu.faults().clear();
        pool.put(slot);
        pool.put_stream(stream);
    }

    /// Threads taking pieces at once: every byte of every stripe is handed out exactly once,
    /// each stripe set up once and ended once, by the piece that fills it; the receiver
    /// returns once the last has ended.
    #[test]
    fn pieces_are_handed_out_once_and_every_stripe_ends() {
        let lens = [1usize, 4096, 65536, 100_000, 3 << 20, 7, 1 << 20];
        let mut memory: Vec<Vec<u8>> = lens.iter().map(|&len| vec![0u8; len]).collect();
        let addrs: Vec<usize> = memory.iter_mut().map(|m| m.as_mut_ptr() as usize).collect();
        let list = lens.iter().enumerate().map(|(i, &len)| Stripe::new(i, 0, len)).collect();
        let (stripes, ended) = Stripes::new(list);
        let set_ups = AtomicUsize::new(0);
        let shipped: Vec<AtomicUsize> = lens.iter().map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let setup = |stripe: &Stripe| {
                        set_ups.fetch_add(1, Ordering::Relaxed);
                        Setup::Read { at: addrs[stripe.req], piece: 4096 * (1 + stripe.req % 3), direct: false }
                    };
                    while let Some((s, from, len)) = stripes.take(setup) {
                        let stripe = &stripes.list[s];
                        let Setup::Read { at, .. } = stripe.setup() else { panic!("set up to read") };
                        // SAFETY: the piece was handed to this thread alone, inside `memory[s]`.
                        let piece = unsafe { stripe.piece(at, from, len) };
                        piece.iter_mut().for_each(|b| *b += 1);
                        if stripe.filled(len) {
                            shipped[s].fetch_add(1, Ordering::Relaxed);
                            stripes.end(s, stripe.len);
                        }
                    }
                });
            }
        });
        assert_eq!(ended.recv(), Err(mpsc::RecvError), "every stripe ended");
        assert_eq!(set_ups.load(Ordering::Relaxed), lens.len(), "each set up once");
        assert!(shipped.iter().all(|n| n.load(Ordering::Relaxed) == 1), "each shipped once");
        assert!(memory.iter().all(|m| m.iter().all(|&b| b == 1)), "each byte handed out once");
    }

    /// A thread setting a stripe up does not hold the others up: they set up the stripes after
    /// it meanwhile, up to [`SET_UPS`] at once.
    #[test]
    fn stripes_are_set_up_side_by_side() {
        let mut memory = vec![0u8; 8 * 4096];
        let at = memory.as_mut_ptr() as usize;
        let list = (0..8).map(|i| Stripe::new(0, i * 4096, 4096)).collect();
        let (stripes, _ended) = Stripes::new(list);
        let (setting, set) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let most = AtomicUsize::new(0);
        let gave_up = AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    let setup = |stripe: &Stripe| {
                        let now = setting.fetch_add(1, Ordering::AcqRel) + 1;
                        most.fetch_max(now, Ordering::AcqRel);
                        // The first setup lasts until another stripe's setup has ended (or gives
                        // up after 10 s: a panic here would leave the others looking forever).
                        let since = std::time::Instant::now();
                        while stripe.skip == 0 && set.load(Ordering::Acquire) == 0 {
                            if since.elapsed().as_secs() >= 10 {
                                gave_up.store(true, Ordering::Release);
                                break;
                            }
                            std::thread::yield_now();
                        }
                        setting.fetch_sub(1, Ordering::AcqRel);
                        set.fetch_add(1, Ordering::AcqRel);
                        Setup::Read { at: at + stripe.skip, piece: 4096, direct: false }
                    };
                    while let Some((s, _, len)) = stripes.take(setup) {
                        if stripes.list[s].filled(len) {
                            stripes.end(s, len);
                        }
                    }
                });
            }
        });
        assert!(!gave_up.load(Ordering::Relaxed), "the others waited for the first setup");
        assert_eq!(set.load(Ordering::Relaxed), 8);
        assert!((2..=SET_UPS).contains(&most.load(Ordering::Relaxed)), "{most:?} setups at once");
    }

    #[test]
    fn stripes_and_pieces_within_bounds() {
        const MIB: usize = 1 << 20;
        assert_eq!(alone_stripe(4 * MIB, 16 * MIB), 4 * MIB);
        assert_eq!(alone_stripe(4 * MIB, 4 * MIB), MIB, "four stripes");
        assert_eq!(alone_stripe(4 * MIB, 64 * MIB), 4 * MIB, "at most the chunk");
        assert_eq!(alone_stripe(4 * MIB, 100 << 10), MIB, "at least 1 MiB");
        assert_eq!(alone_stripe(256 << 10, 64 * MIB), 256 << 10, "nor above a small chunk");
        assert_eq!(piece_for(4 * MIB, 16), 256 << 10);
        assert_eq!(piece_for(MIB, 16), 64 << 10);
        assert_eq!(piece_for(MIB, 64), 64 << 10, "at least 64 KiB");
        assert_eq!(piece_for(32 << 10, 16), 32 << 10, "at most the stripe");
        assert_eq!(piece_for(MIB, 3), 352256, "whole pages");
    }
}
