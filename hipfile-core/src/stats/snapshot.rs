//! The counters read at one moment, summed over threads: this process's or another's.

use crate::backend::Direction;
use crate::stats::clock::ns_per_tick;
use crate::stats::layout::*;

/// One direction's (or path's, or GPU's) totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Requests that succeeded.
    pub ok: u64,
    /// Requests that failed in a backend.
    pub err: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Time the successful requests took, summed (µs).
    pub micros: u64,
    /// Requests not aligned for direct I/O.
    pub unaligned: u64,
}

impl Totals {
    /// Sums saturate: the counters come from shared memory, and whatever they hold must not
    /// overflow here (semantics §14).
    fn add(&mut self, o: &Totals) {
        self.ok = self.ok.saturating_add(o.ok);
        self.err = self.err.saturating_add(o.err);
        self.bytes = self.bytes.saturating_add(o.bytes);
        self.micros = self.micros.saturating_add(o.micros);
        self.unaligned = self.unaligned.saturating_add(o.unaligned);
    }

    /// What was counted after `base` (a count that went down, such as memory registered, is
    /// kept as it is now).
    pub(super) fn since(&self, base: &Totals) -> Totals {
        Totals {
            ok: self.ok.saturating_sub(base.ok),
            err: self.err.saturating_sub(base.err),
            bytes: self.bytes.saturating_sub(base.bytes),
            micros: self.micros.saturating_sub(base.micros),
            unaligned: self.unaligned.saturating_sub(base.unaligned),
        }
    }

    /// Bytes per second of busy time (0 without time).
    pub fn bandwidth(&self) -> u64 {
        per_second(self.bytes, self.micros)
    }

    /// Average time per successful request (µs; 0 without requests).
    pub fn latency_avg_us(&self) -> u64 {
        self.micros.checked_div(self.ok).unwrap_or(0)
    }

    /// Successful requests per second of busy time (0 without time).
    pub fn ops_per_second(&self) -> u64 {
        per_second(self.ok, self.micros)
    }
}

fn per_second(n: u64, micros: u64) -> u64 {
    if micros == 0 { 0 } else { (n as u128 * 1_000_000 / micros as u128) as u64 }
}

/// The counters at one moment, summed over threads.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The observed process.
    pub pid: u32,
    /// The level it counts at.
    pub level: u8,
    /// Per direction, path, GPU row and class row.
    cells: Vec<Totals>,
    events: [u64; EVENTS],
    reg_bytes: [u64; GPU_ROWS],
    last_batch: (u64, u64),
}

impl Snapshot {
    /// Whether a region's first two words (magic number, version) are this layout's.
    pub fn is_region(first_words: [u64; 2]) -> bool {
        first_words == [MAGIC, VERSION]
    }

    /// The counters of a region read through `read(bytes, offset)`, which fills `bytes` from
    /// the region's byte `offset`: the header, then only the slots in use (reading a shared
    /// memory file's unused pages would give it memory for them). Another process's region is
    /// untrusted: a region of another layout is `InvalidData`, and any values sum safely.
    pub fn read_region(mut read: impl FnMut(&mut [u8], u64) -> std::io::Result<()>) -> std::io::Result<Snapshot> {
        let mut words = vec![0u64; REGION_WORDS];
        let mut fill = |words: &mut [u64], at: usize| -> std::io::Result<()> {
            let mut bytes = vec![0u8; words.len() * 8];
            read(&mut bytes, (at * 8) as u64)?;
            for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
                *w = u64::from_le_bytes(b.try_into().expect("8 bytes"));
            }
            Ok(())
        };
        fill(&mut words[..HEADER_WORDS], 0)?;
        if !Snapshot::is_region([words[header::MAGIC], words[header::VERSION]]) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "statistics of another layout or version",
            ));
        }
        let used = words[header::SLOTS_USED];
        for slot in (0..SLOTS).filter(|s| used & (1 << s) != 0) {
            let at = HEADER_WORDS + slot * SLOT_WORDS;
            fill(&mut words[at..at + SLOT_WORDS], at)?;
        }
        Ok(Snapshot::read(&|i| words.get(i).copied().unwrap_or(0)))
    }

    /// Sums the used slots of a region's words: untrusted (shared) memory, so any values are
    /// read without overflow or out-of-range access.
    pub(super) fn read(w: &dyn Fn(usize) -> u64) -> Snapshot {
        let ns_per_tick = ns_per_tick(w(header::CLOCK), w(header::TICKS0), w(header::MONO0));
        let ns = |ticks: u64| (ticks as f64 * ns_per_tick) as u64;
        let mut cells = vec![Totals::default(); 2 * PATHS * GPU_ROWS * CLASS_ROWS];
        let mut events = [0u64; EVENTS];
        let mut reg_bytes = [0u64; GPU_ROWS];
        let used = w(header::SLOTS_USED);
        for slot in (0..SLOTS).filter(|s| used & (1 << s) != 0) {
            let base = HEADER_WORDS + slot * SLOT_WORDS;
            for (c, t) in cells.iter_mut().enumerate() {
                let at = base + c * CELL;
                let ns = ns(w(at + 3));
                let rows = c / CLASS_ROWS; // (direction, path, gpu)
                t.add(&Totals {
                    ok: w(at),
                    err: w(at + 1),
                    bytes: w(at + 2),
                    micros: ns / 1000,
                    unaligned: if c % CLASS_ROWS == 0 { w(base + UNALIGNED_AT + rows) } else { 0 },
                });
            }
            for (e, v) in events.iter_mut().enumerate() {
                *v = v.saturating_add(w(base + EVENTS_AT + e));
            }
            for (g, v) in reg_bytes.iter_mut().enumerate() {
                *v = v.wrapping_add(w(base + REG_AT + g));
            }
        }
        for e in Counter::TIMES {
            events[e as usize] = ns(events[e as usize]);
        }
        Snapshot {
            pid: w(header::PID) as u32,
            level: w(header::LEVEL) as u8,
            cells,
            events,
            reg_bytes,
            last_batch: (w(header::LAST_BATCH_READ), w(header::LAST_BATCH_WRITE)),
        }
    }

    /// The counts after `base` (an earlier snapshot of the same process): requests, bytes,
    /// times and events. Memory registered now, the level and the last batch's bytes are
    /// this snapshot's.
    pub(super) fn since(&self, base: &Snapshot) -> Snapshot {
        let mut out = self.clone();
        for (c, b) in out.cells.iter_mut().zip(&base.cells) {
            *c = c.since(b);
        }
        for (e, b) in out.events.iter_mut().zip(&base.events) {
            *e = e.saturating_sub(*b);
        }
        out
    }

    /// Totals of one direction, over `path` (all when `None`) and `gpu` (all when `None`;
    /// a GPU's figures exist at level 3).
    pub fn totals(&self, dir: Direction, path: Option<Path>, gpu: Option<usize>) -> Totals {
        let mut t = Totals::default();
        for p in Path::ALL.into_iter().filter(|p| path.is_none_or(|q| q == *p)) {
            for g in (0..GPU_ROWS).filter(|g| gpu.is_none_or(|q| q == *g)) {
                for class in 0..CLASS_ROWS {
                    t.add(&self.cells[cell_at(dir, p, g, class) / CELL]);
                }
            }
        }
        t
    }

    /// Requests per size class (level 2 and up), all paths and GPUs.
    pub fn size_histogram(&self, dir: Direction) -> [u64; SIZE_CLASSES] {
        let mut h = [0u64; SIZE_CLASSES];
        for p in Path::ALL {
            for g in 0..GPU_ROWS {
                for (class, v) in h.iter_mut().enumerate() {
                    let c = &self.cells[cell_at(dir, p, g, class) / CELL];
                    *v = v.saturating_add(c.ok.saturating_add(c.err));
                }
            }
        }
        h
    }

    /// An event counter.
    pub fn get(&self, counter: Counter) -> u64 {
        self.events[counter as usize]
    }

    /// Device memory of `gpu` registered now (bytes).
    pub fn registered_bytes(&self, gpu: usize) -> u64 {
        self.reg_bytes.get(gpu).copied().unwrap_or(0)
    }

    /// The bytes the last batch submitted read and wrote.
    pub fn last_batch(&self) -> (u64, u64) {
        self.last_batch
    }

    /// The GPUs with anything counted (level 3).
    pub fn gpus_used(&self) -> Vec<usize> {
        (0..MAX_GPUS)
            .filter(|&g| {
                self.reg_bytes[g] != 0
                    || [Direction::Read, Direction::Write].into_iter().any(|d| {
                        let t = self.totals(d, None, Some(g));
                        t.ok > 0 || t.err > 0
                    })
            })
            .collect()
    }

    /// The time counted into one of [`Counter::TIMES`], in µs.
    pub fn micros(&self, counter: Counter) -> u64 {
        self.events[counter as usize] / 1000
    }
}
