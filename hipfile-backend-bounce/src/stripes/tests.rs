//! Tests of [`super`] (`stripes.rs`).

use super::*;
use hipfile_core::DeviceSpan;

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
