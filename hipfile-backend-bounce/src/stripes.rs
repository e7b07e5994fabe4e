//! Reads through stripes: the threads of a read fill large pinned staging buffers together, and
//! one copy moves each to the device.
//!
//! A read is cut into stripes (up to the configured chunk, 4 MiB by default; a request alone on its
//! device into eighths of it, at least 1 MiB, so that copies start early), and a stripe whose bytes
//! the page cache holds into pieces, one per thread (at least 64 KiB): the threads take pieces in
//! order, each reading its piece into the stripe's staging buffer, and the thread that ends a
//! stripe's last piece queues the stripe's copy on the read's stream. So a copy is as large as a
//! stripe while every thread reads. Reads went through lanes before (a thread with its own two
//! buffers copying what it alone read, as writes still do): each copy costs microseconds beyond its
//! bytes, and one caller's calls ran the copies in lockstep with the reads. Measured on the H200
//! against lanes in one binary (`docs/bench/history.md`, "Reads through stripes"): one caller's 4 MiB
//! calls 1.5x, 64 MiB calls 1.1x, four callers of 16 MiB 1.15x, whole files and batches the same. A
//! part the page cache holds none of is one piece, read with `O_DIRECT` (the disk wants large
//! requests).
//!
//! Small requests share stripes ([`pack`]): the chunks of a read's requests go into one slot
//! after another up to a stripe, each at a position from which `O_DIRECT` can read it, and parts
//! that meet on the device in one allocation go in one copy ([`copies`]). Measured on the H200
//! against a stripe per chunk (`docs/bench/history.md`, "Small reads share stripes"): a batch of
//! 128 random 256 KiB reads 1.8x, of 128 random 1 MiB 1.0-1.12x, Python's futures 1.12x.
//!
//! Staging: [`SlotPool`], per device, made on first use (or ahead, by the warmer) up to its
//! memory limit and kept. A slot is handed out again only once the copy queued from it has run
//! (its event), which is the only thing that keeps a queued copy's host memory intact: the
//! `unsafe` of the read path is here.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};

use hipfile_core::sync::lock;
use hipfile_core::{DeviceCopy, Event, GpuRuntime, HipError, Result, Stream};

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

/// The stripe for `total` bytes alone on a device: an eighth of them (so that the first copy
/// starts after an eighth has been read, and the last one is short), at least
/// [`MIN_ALONE_STRIPE`], at most `chunk`. (Measured on the H200 with reads' tails demoted: one
/// caller's 16 MiB calls 37.2 / 37.1 GB/s against 30.3 with quarters; docs/bench/history.md, "The
/// eighth rule, and two trials that did not help".)
pub(crate) fn alone_stripe(chunk: usize, total: usize) -> usize {
    (total / 8).next_multiple_of(64 << 10).max(MIN_ALONE_STRIPE).min(chunk)
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
#[derive(Debug)]
pub(crate) enum Setup {
    /// Into the slot whose byte 0 is at address `at`, in `pieces`, handed out in order.
    Read { at: usize, pieces: Vec<Piece> },
    /// No slot (its requests have failed): nothing is read.
    Failed,
}

/// What [`Stripe::setup`] says before a stripe is set up.
static NOT_SET_UP: Setup = Setup::Failed;

/// `len` bytes from `from` into part `part` of a stripe, read by one thread: with `O_DIRECT`
/// where the file allows and `direct` (then the piece is the whole part), else buffered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) part: usize,
    pub(crate) from: usize,
    pub(crate) len: usize,
    pub(crate) direct: bool,
}

/// A part of one request in a stripe: `len` bytes from `skip` into request `req`, staged
/// `pos` bytes into the stripe's slot.
pub(crate) struct Part {
    pub(crate) req: usize,
    pub(crate) skip: usize,
    pub(crate) len: usize,
    pub(crate) pos: usize,
    /// Bytes from the part's start that hold the file's data (less after end of file or an
    /// error): once the stripe has ended, what reached the device, unless the request failed.
    valid: AtomicUsize,
}

impl Part {
    pub(crate) fn new(req: usize, skip: usize, len: usize, pos: usize) -> Self {
        Part { req, skip, len, pos, valid: AtomicUsize::new(len) }
    }

    /// A piece at `from` read only `n` bytes (end of file, or 0 for an error): the part holds
    /// the file's data up to there at most.
    pub(crate) fn short(&self, from: usize, n: usize) {
        self.valid.fetch_min(from + n, Ordering::AcqRel);
    }

    /// Bytes from the start that hold the file's data, once every piece is done.
    pub(crate) fn valid(&self) -> usize {
        self.valid.load(Ordering::Acquire)
    }
}

/// The parts of `chunks` (`(request, skip, len, file offset)`, in order), packed into stripes
/// of up to `stripe` bytes: a part goes after the one before it in the same slot where it fits,
/// at the first position that keeps the slot's layout rule for it (its byte at an address
/// congruent to its file offset modulo a page, [`crate::lanes`], so that it can be read with
/// `O_DIRECT`). So a batch of small requests fills slots as a large one does, and requests whose
/// device memory meets (and whose file offsets keep their staging contiguous) go in one copy.
pub(crate) fn pack(chunks: impl Iterator<Item = (usize, usize, usize, u64)>, stripe: usize) -> Vec<Stripe> {
    let page = PAGE as usize;
    let mut list = Vec::new();
    let mut parts: Vec<Part> = Vec::new();
    let mut end = 0; // the first byte of the slot after the parts so far
    for (req, skip, len, offset) in chunks.filter(|c| c.2 > 0) {
        let align = (offset % PAGE) as usize;
        let mut pos = end + (align + page - end % page) % page;
        if !parts.is_empty() && pos + len > stripe + page {
            list.push(Stripe::new(std::mem::take(&mut parts)));
            pos = align;
        }
        parts.push(Part::new(req, skip, len, pos));
        end = pos + len;
    }
    if !parts.is_empty() {
        list.push(Stripe::new(parts));
    }
    list
}

/// What one slot stages and its copies move: one or more parts of requests.
pub(crate) struct Stripe {
    pub(crate) parts: Vec<Part>,
    /// The parts' bytes.
    pub(crate) len: usize,
    /// Set by the first thread to reach the stripe ([`Stripe::try_set_up`]).
    setup: OnceLock<Setup>,
    /// Someone is setting the stripe up.
    setting_up: AtomicBool,
    slot: Mutex<Option<Slot>>,
    /// The next piece to hand out.
    next: AtomicUsize,
    /// Bytes handed out and read (or given up).
    filled: AtomicUsize,
}

impl Stripe {
    pub(crate) fn new(parts: Vec<Part>) -> Self {
        Stripe {
            len: parts.iter().map(|p| p.len).sum(),
            parts,
            setup: OnceLock::new(),
            setting_up: AtomicBool::new(false),
            slot: Mutex::new(None),
            next: AtomicUsize::new(0),
            filled: AtomicUsize::new(0),
        }
    }

    /// How it is read (set by the first taker; `Failed` before).
    pub(crate) fn setup(&self) -> &Setup {
        self.setup.get().unwrap_or(&NOT_SET_UP)
    }

    /// How it is read, setting it up with `setup` if no thread has begun to; `None` while
    /// another thread is setting it up.
    fn try_set_up(&self, setup: impl Fn(&Stripe) -> Setup) -> Option<&Setup> {
        if let Some(how) = self.setup.get() {
            return Some(how);
        }
        if self.setting_up.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(self.setup.get_or_init(|| setup(self)))
    }

    /// The pieces of the stripe: each part whole where `direct(part)`, else in pieces of
    /// `piece` bytes.
    pub(crate) fn pieces(&self, piece: usize, direct: impl Fn(&Part) -> bool) -> Vec<Piece> {
        let mut pieces = Vec::new();
        for (k, part) in self.parts.iter().enumerate() {
            let direct = direct(part);
            let step = if direct { part.len } else { piece.max(1) };
            pieces.extend((0..part.len).step_by(step).map(|from| Piece {
                part: k,
                from,
                len: step.min(part.len - from),
                direct,
            }));
        }
        pieces
    }

    /// Sets the stripe up for reading `pieces` into `slot`, its parts at their positions.
    pub(crate) fn hold(&self, slot: Slot, pieces: Vec<Piece>) -> Setup {
        let (at, usable) = slot.stage.extent();
        debug_assert!(self.parts.last().is_none_or(|p| p.pos + p.len <= usable));
        *lock(&self.slot) = Some(slot);
        Setup::Read { at, pieces }
    }

    /// The bytes of `piece`, to read it into.
    ///
    /// # Safety
    /// The setup is `Read` with this `at`, and `piece` is one of its pieces, handed out to the
    /// caller alone (by [`Stripes::take`]); the stripe holds its slot until its last piece is
    /// done.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn piece(&self, at: usize, piece: &Piece) -> &mut [u8] {
        let pos = self.parts[piece.part].pos + piece.from;
        // SAFETY: per the contract, the bytes lie inside the held slot's stage (`pack` keeps
        // every part inside a slot, `hold`) and no other thread touches them until the piece
        // is done.
        unsafe { std::slice::from_raw_parts_mut((at + pos) as *mut u8, piece.len) }
    }

    /// `len` more bytes are done; true for the piece that ends the stripe.
    pub(crate) fn filled(&self, len: usize) -> bool {
        self.filled.fetch_add(len, Ordering::AcqRel) + len == self.len
    }

    /// The stripe's slot, for the thread that ended its last piece.
    pub(crate) fn release(&self) -> Option<Slot> {
        lock(&self.slot).take()
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

    /// The next piece, `(stripe, piece)`: of the first stripe with a piece left, in order
    /// (piece 0 of a `Failed` stripe stands for the whole of it). A stripe reached first is set
    /// up with `setup` by the thread that reached it; the others go on to the stripes after it
    /// (up to [`SET_UPS`] being set up at once, so that setups, a system call and a slot each,
    /// do not hold every thread up one after another), and look again (yielding) when those
    /// are all being set up. `None` when every piece has been handed out.
    pub(crate) fn take(&self, setup: impl Fn(&Stripe) -> Setup) -> Option<(usize, usize)> {
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
                let count = match how {
                    Setup::Read { pieces, .. } => pieces.len(),
                    Setup::Failed => 1,
                };
                let i = stripe.next.fetch_add(1, Ordering::AcqRel);
                if i < count {
                    return Some((s, i));
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

    /// Stripe `s` has ended (its copies queued, or given up).
    pub(crate) fn end(&self) {
        if self.ended.fetch_add(1, Ordering::AcqRel) + 1 == self.list.len() {
            lock(&self.unended).take();
        }
    }
}

/// The copies that move what a stripe's parts hold (`(part, bytes)` for each part with bytes
/// to move, in order; its byte 0 at `at`), each with the parts it moves: parts that meet both
/// in the slot and on the device (in one allocation) go in one copy. `dst(part, bytes)` is
/// where a part's bytes go.
pub(crate) fn copies(
    parts: &[Part],
    valid: impl Iterator<Item = (usize, usize)>,
    at: usize,
    dst: impl Fn(&Part, usize) -> hipfile_core::DeviceSpan,
) -> Vec<(std::ops::Range<usize>, usize, hipfile_core::DeviceSpan)> {
    let mut copies: Vec<(std::ops::Range<usize>, usize, hipfile_core::DeviceSpan)> = Vec::new();
    for (k, n) in valid {
        let (src, span) = (at + parts[k].pos, dst(&parts[k], n));
        if let Some((ks, from, joined)) = copies.last_mut()
            && *from + joined.len() == src
            && let Some(both) = joined.join(&span)
        {
            (ks.end, *joined) = (k + 1, both);
            continue;
        }
        copies.push((k..k + 1, src, span));
    }
    copies
}

/// Queues the copies of a stripe from `slot` (`(source address, destination)` each) on
/// `stream`, and marks the slot queued until they have run.
///
/// # Safety
/// Each source range lies inside the slot's stage; each destination is device memory of the
/// runtime that stays valid until the stream has run the copies.
pub(crate) unsafe fn ship<G: GpuRuntime + ?Sized>(
    gpu: &G,
    slot: &mut Slot,
    copies: impl Iterator<Item = (usize, hipfile_core::DeviceSpan)>,
    stream: Stream,
) -> Result<()> {
    let mut queued = Ok(());
    for (at, dst) in copies {
        // SAFETY: the bytes lie inside the slot's stage (the caller's contract), which nothing
        // touches again before the copies have run: the slot is marked queued below, and
        // handed out (`SlotPool::take`) or freed (`SlotPool`'s drop) only after its event has
        // completed.
        let src = unsafe { std::slice::from_raw_parts(at as *const u8, dst.len()) };
        // SAFETY: as above; `dst` per the caller's contract.
        match unsafe { gpu.copy_to_device_async(dst, src, stream) } {
            Ok(()) => slot.queued = true,
            Err(e) => {
                queued = Err(e.into());
                break;
            }
        }
    }
    if !slot.queued {
        return queued;
    }
    if let Err(e) = gpu.event_record(slot.event, stream) {
        // Without the event nothing would say when the copies have run: wait for them here.
        gpu.stream_synchronize(stream)?;
        slot.queued = false;
        return Err(e.into());
    }
    queued
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
        unsafe { ship(&*gpu, &mut slot, [(base, span)].into_iter(), stream) }.unwrap();
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

    /// Threads taking pieces at once: every byte of every part is handed out exactly once,
    /// each stripe set up once and ended once, by the piece that fills it; the receiver
    /// returns once the last has ended.
    #[test]
    fn pieces_are_handed_out_once_and_every_stripe_ends() {
        let lens = [1usize, 4096, 65536, 100_000, 3 << 20, 7, 1 << 20];
        let mut memory: Vec<Vec<u8>> = lens.iter().map(|&len| vec![0u8; len]).collect();
        let addrs: Vec<usize> = memory.iter_mut().map(|m| m.as_mut_ptr() as usize).collect();
        // One part per stripe (each its own memory), and one stripe of two parts.
        let mut list: Vec<Stripe> =
            lens.iter().enumerate().map(|(i, &len)| Stripe::new(vec![Part::new(i, 0, len, 0)])).collect();
        let mut two = vec![0u8; 8192];
        let two_at = two.as_mut_ptr() as usize;
        list.push(Stripe::new(vec![Part::new(7, 0, 3000, 0), Part::new(8, 0, 5000, 3000)]));
        let (stripes, ended) = Stripes::new(list);
        let set_ups = AtomicUsize::new(0);
        let shipped: Vec<AtomicUsize> = (0..=lens.len()).map(|_| AtomicUsize::new(0)).collect();
        std::thread::scope(|scope| {
            for _ in 0..8 {
                scope.spawn(|| {
                    let setup = |stripe: &Stripe| {
                        set_ups.fetch_add(1, Ordering::Relaxed);
                        let req = stripe.parts[0].req;
                        let at = addrs.get(req).copied().unwrap_or(two_at);
                        let pieces = stripe.pieces(1000 * (1 + req % 3), |part| part.len == 1 << 20);
                        Setup::Read { at, pieces }
                    };
                    while let Some((s, i)) = stripes.take(setup) {
                        let stripe = &stripes.list[s];
                        let Setup::Read { at, pieces } = stripe.setup() else { panic!("set up to read") };
                        // SAFETY: the piece was handed to this thread alone, inside its memory.
                        let piece = unsafe { stripe.piece(*at, &pieces[i]) };
                        piece.iter_mut().for_each(|b| *b += 1);
                        if stripe.filled(piece.len()) {
                            shipped[s].fetch_add(1, Ordering::Relaxed);
                            stripes.end();
                        }
                    }
                });
            }
        });
        assert_eq!(ended.recv(), Err(mpsc::RecvError), "every stripe ended");
        assert_eq!(set_ups.load(Ordering::Relaxed), lens.len() + 1, "each set up once");
        assert!(shipped.iter().all(|n| n.load(Ordering::Relaxed) == 1), "each shipped once");
        assert!(memory.iter().all(|m| m.iter().all(|&b| b == 1)), "each byte handed out once");
        assert!(two[..8000].iter().all(|&b| b == 1) && two[8000..].iter().all(|&b| b == 0), "both parts' bytes, once");
    }

    /// A thread setting a stripe up does not hold the others up: they set up the stripes after
    /// it meanwhile, up to [`SET_UPS`] at once.
    #[test]
    fn stripes_are_set_up_side_by_side() {
        let mut memory = vec![0u8; 8 * 4096];
        let at = memory.as_mut_ptr() as usize;
        let list = (0..8).map(|i| Stripe::new(vec![Part::new(0, i * 4096, 4096, 0)])).collect();
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
                        let skip = stripe.parts[0].skip;
                        while skip == 0 && set.load(Ordering::Acquire) == 0 {
                            if since.elapsed().as_secs() >= 10 {
                                gave_up.store(true, Ordering::Release);
                                break;
                            }
                            std::thread::yield_now();
                        }
                        setting.fetch_sub(1, Ordering::AcqRel);
                        set.fetch_add(1, Ordering::AcqRel);
                        Setup::Read { at: at + skip, pieces: stripe.pieces(4096, |_| false) }
                    };
                    while let Some((s, _)) = stripes.take(setup) {
                        if stripes.list[s].filled(4096) {
                            stripes.end();
                        }
                    }
                });
            }
        });
        assert!(!gave_up.load(Ordering::Relaxed), "the others waited for the first setup");
        assert_eq!(set.load(Ordering::Relaxed), 8);
        assert!((2..=SET_UPS).contains(&most.load(Ordering::Relaxed)), "{most:?} setups at once");
    }

    /// Small chunks share a slot, each where `O_DIRECT` can read it (congruent to its file
    /// offset modulo a page), up to the stripe and a page; a stripe-sized chunk has one alone.
    #[test]
    fn small_chunks_are_packed_into_stripes() {
        const MIB: usize = 1 << 20;
        let page = PAGE as usize;
        let layout = |list: &[Stripe]| -> Vec<Vec<(usize, usize)>> {
            list.iter().map(|s| s.parts.iter().map(|p| (p.req, p.pos)).collect()).collect()
        };
        // Four aligned 1 MiB requests fill a 4 MiB stripe back to back; the fifth starts the next.
        let list = pack((0..5).map(|r| (r, 0, MIB, (7 * r * MIB) as u64)), 4 * MIB);
        assert_eq!(layout(&list), [vec![(0, 0), (1, MIB), (2, 2 * MIB), (3, 3 * MIB)], vec![(4, 0)]]);
        assert_eq!(list[0].len, 4 * MIB);
        // Unaligned offsets: each part lands congruent to its offset, past the one before.
        let list = pack([(0, 0, 100, 10), (1, 0, 100, 4000), (2, 0, 50, 8192)].into_iter(), MIB);
        assert_eq!(layout(&list), [vec![(0, 10), (1, 4000), (2, 2 * page)]]);
        // A part that would pass the stripe and a page goes to a new one, at its own offset.
        let list = pack([(0, 0, MIB, 0), (1, 0, page, 5)].into_iter(), MIB);
        assert_eq!(layout(&list), [vec![(0, 0)], vec![(1, 5)]]);
        let list = pack([(0, 0, MIB - 8, 8), (1, 0, page - 8, 0)].into_iter(), MIB);
        assert_eq!(layout(&list), [vec![(0, 8), (1, MIB)]], "up to the stripe and a page");
        // Empty chunks take no part; nothing makes no stripe.
        assert!(pack([(0, 0, 0, 0)].into_iter(), MIB).is_empty());
        let list = pack((0..40).map(|r| (r, 0, r * 1637 % (64 << 10) + 1, (r * 4099) as u64)), 64 << 10);
        for part in list.iter().flat_map(|s| &s.parts) {
            assert!(part.pos + part.len <= (64 << 10) + page, "inside a slot");
            assert_eq!(part.pos % page, (part.req * 4099) % page, "congruent to its offset");
        }
    }

    /// Parts that meet in the slot and on the device go in one copy; a gap on either side, a
    /// part cut short, or a part with nothing to move, splits them.
    #[test]
    fn parts_that_meet_go_in_one_copy() {
        let parts: Vec<Part> = [(0, 0), (1, 100), (2, 200), (3, 300), (4, 400)]
            .into_iter()
            .map(|(r, pos)| Part::new(r, 0, 100, pos))
            .collect();
        // SAFETY: never copied to or from.
        let within = |addr, len, bound| unsafe { DeviceSpan::within(addr, len, bound) };
        // Requests 0-2 meet in one allocation; 3 is in another; 4 lies after a gap.
        let (one, other) = (within(0x1000, 600, 0x2000), within(0x112c, 200, 0x3000));
        let memory = [one.part(0, 100), one.part(100, 100), one.part(200, 100), other.part(0, 100), one.part(500, 100)];
        let dst = |p: &Part, n: usize| memory[p.req].part(0, n);
        let shape = |copies: Vec<(std::ops::Range<usize>, usize, DeviceSpan)>| {
            copies.into_iter().map(|(ks, at, span)| (ks, at, span.len())).collect::<Vec<_>>()
        };
        let all = copies(&parts, (0..5).map(|k| (k, 100)), 0x9000, dst);
        assert_eq!(shape(all), [(0..3, 0x9000, 300), (3..4, 0x9000 + 300, 100), (4..5, 0x9000 + 400, 100)]);
        // Part 1 cut short (end of file): part 2 cannot follow it; part 0 has nothing.
        let cut = copies(&parts, [(1, 60), (2, 100)].into_iter(), 0x9000, dst);
        assert_eq!(shape(cut), [(1..2, 0x9000 + 100, 60), (2..3, 0x9000 + 200, 100)]);
    }

    #[test]
    fn stripes_and_pieces_within_bounds() {
        const MIB: usize = 1 << 20;
        assert_eq!(alone_stripe(4 * MIB, 16 * MIB), 2 * MIB, "eight stripes");
        assert_eq!(alone_stripe(4 * MIB, 32 * MIB), 4 * MIB);
        assert_eq!(alone_stripe(4 * MIB, 4 * MIB), MIB, "four stripes: at least 1 MiB");
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
