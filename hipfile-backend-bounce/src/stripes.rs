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
//! Staging: `SlotPool` (`slots.rs`), per device. A slot is handed out again only once the copy
//! queued from it has run (its event), which is the only thing that keeps a queued copy's host
//! memory intact: the `unsafe` of the read path is there and here.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};

use hipfile_core::sync::lock;

use crate::fileio::PAGE;
use crate::slots::Slot;

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
        let (at, usable) = slot.extent();
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

#[cfg(test)]
mod tests;
