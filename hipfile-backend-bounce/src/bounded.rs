//! A pool of things that are slow to make (pinned staging, streams): made on first use up to a
//! limit, kept, and handed out again oldest first; a taker beyond the limit waits for one to
//! come back. Each device's slots, read streams and lanes are one each.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex};

use hipfile_core::sync::{lock, wait};

pub(crate) struct Bounded<T> {
    max: usize,
    state: Mutex<State<T>>,
    returned: Condvar,
}

struct State<T> {
    /// Oldest given back first. (For slots this matters: a slot's copy queued before the
    /// others' is the likeliest to have run. Taking the newest waited for the copy last queued,
    /// so for every copy queued before it: on the H200 the copies and the reads then ran in
    /// turn, at half the speed.)
    free: VecDeque<T>,
    /// Made and not failed, free or out.
    created: usize,
}

impl<T> Bounded<T> {
    /// An empty pool of at most `max` things (and at least one).
    pub(crate) fn new(max: usize) -> Self {
        Bounded {
            max: max.max(1),
            state: Mutex::new(State { free: VecDeque::new(), created: 0 }),
            returned: Condvar::new(),
        }
    }

    /// The most things it holds.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The oldest thing given back; else, while fewer than the limit exist, a new one from
    /// `make`; else waits for one to be given back.
    pub(crate) fn take<E>(&self, make: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let mut state = lock(&self.state);
        loop {
            if let Some(thing) = state.free.pop_front() {
                return Ok(thing);
            }
            if state.created < self.max {
                state.created += 1;
                drop(state);
                return self.made(make());
            }
            state = wait(&self.returned, state);
        }
    }

    /// Gives a thing back.
    pub(crate) fn put(&self, thing: T) {
        lock(&self.state).free.push_back(thing);
        self.returned.notify_one();
    }

    /// Makes things with `make` until `target` exist (or the limit), without waiting for any:
    /// set up ahead of use. Stops at the first failure, or when `stop` says so.
    pub(crate) fn prefill<E>(
        &self,
        target: usize,
        stop: &dyn Fn() -> bool,
        make: impl Fn() -> Result<T, E>,
    ) -> Result<(), E> {
        while !stop() {
            {
                let mut state = lock(&self.state);
                if state.created >= target.min(self.max) {
                    return Ok(());
                }
                state.created += 1;
            }
            let thing = self.made(make())?;
            self.put(thing);
        }
        Ok(())
    }

    /// What is free now, taken out of the pool (to be freed: the pool is going).
    pub(crate) fn drain(&self) -> VecDeque<T> {
        std::mem::take(&mut lock(&self.state).free)
    }

    /// (free, made): how many are in the pool, and how many exist.
    #[cfg(test)]
    pub(crate) fn counts(&self) -> (usize, usize) {
        let state = lock(&self.state);
        (state.free.len(), state.created)
    }

    /// A thing already counted as made: uncounted if making it failed.
    fn made<E>(&self, thing: Result<T, E>) -> Result<T, E> {
        if thing.is_err() {
            lock(&self.state).created -= 1;
            self.returned.notify_one();
        }
        thing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn things_are_made_up_to_the_limit_and_handed_out_again_oldest_first() {
        let pool = Bounded::new(3);
        let mut made = 0;
        let mut make = || -> Result<usize, ()> {
            made += 1;
            Ok(made)
        };
        let held: Vec<usize> = (0..3).map(|_| pool.take(&mut make).unwrap()).collect();
        assert_eq!(held, [1, 2, 3]);
        [2, 3, 1].into_iter().for_each(|n| pool.put(n));
        let again: Vec<usize> = (0..3).map(|_| pool.take(&mut make).unwrap()).collect();
        assert_eq!(again, [2, 3, 1], "in the order they were given back, none made");
        // At the limit, a taker waits until one comes back.
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take(|| -> Result<usize, ()> { panic!("made past the limit") }));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!waiter.is_finished(), "waits for one to come back");
            pool.put(7);
            assert_eq!(waiter.join().unwrap(), Ok(7));
        });
    }

    #[test]
    fn a_failure_to_make_one_is_not_counted() {
        let pool: Bounded<u8> = Bounded::new(1);
        assert_eq!(pool.take(|| Err("no memory")), Err("no memory"));
        assert_eq!(pool.counts(), (0, 0));
        assert_eq!(pool.take(|| Ok::<u8, ()>(5)), Ok(5), "the room is free again");
        assert_eq!(pool.counts(), (0, 1));
        assert_eq!(Bounded::<u8>::new(0).max(), 1, "at least one");
    }

    #[test]
    fn prefill_makes_them_ahead_up_to_the_limit_and_stops_when_told() {
        let pool = Bounded::new(3);
        let held = pool.take(|| Ok::<u8, ()>(0)).unwrap();
        pool.prefill(8, &|| false, || Ok::<u8, ()>(1)).unwrap();
        assert_eq!(pool.counts(), (2, 3), "up to the limit of 3, one of them out");
        let other = Bounded::new(3);
        other.prefill(8, &|| true, || Ok::<u8, ()>(1)).unwrap();
        assert_eq!(other.counts(), (0, 0), "told to stop: nothing made");
        assert_eq!(other.prefill(8, &|| false, || Err::<u8, _>("no")), Err("no"));
        assert_eq!(other.counts(), (0, 0));
        pool.put(held);
        assert_eq!(pool.drain().len(), 3);
        assert_eq!(pool.counts(), (0, 3));
    }
}
