//! cuFile's vector I/O (`cuFileReadv`, `cuFileWritev`; semantics §17): several buffers, device
//! or host memory, registered or not, moved in order to or from consecutive file offsets, each
//! through the one I/O path, and counted apart from single requests.

use super::{Driver, HandleId, Platform};
use crate::backend::Direction;
use crate::error::{OpError, Result};
use crate::stats::{Counter, Stats};

/// The most vectors one call takes (Linux's `IOV_MAX`, as `preadv`).
pub const MAX_VECTORS: usize = 1024;

impl<P: Platform> Driver<P> {
    /// Moves `vectors` (`(address, length)` pairs, in order) to or from the file from
    /// `file_offset` on: the bytes moved. Every call counts, as cuFile counts it: `None` (a
    /// null vector array), `flags` other than 0, more than [`MAX_VECTORS`] vectors or a
    /// negative offset are `InvalidValue`. A read stops at the end of the file (fewer bytes, 0
    /// there); an error after some bytes moved ends the call with those bytes, as `preadv`
    /// does; an error before any is the call's. Host memory is taken whatever
    /// `allow_system_memory` says.
    ///
    /// # Safety
    /// Each vector that is not device memory of the runtime must be valid for its length for
    /// the whole call (writable for a read, readable for a write), as
    /// [`transfer`](Self::transfer) asks of host memory.
    pub unsafe fn transfer_vector(
        &self,
        direction: Direction,
        handle: HandleId,
        vectors: Option<&[(usize, usize)]>,
        file_offset: i64,
        flags: u32,
    ) -> Result<usize> {
        let started = self.stats.start();
        let _primary = crate::gpu::PrimaryContext::enter(&*self.gpu);
        let result = match vectors {
            Some(vectors) if flags == 0 => {
                // SAFETY: the caller's contract.
                Stats::apart(|| unsafe { self.vectors(direction, handle, vectors, file_offset) })
            }
            _ => Err(OpError::InvalidValue.into()),
        };
        let (ok, err, bytes, time) = match direction {
            Direction::Read => (Counter::ReadvOk, Counter::ReadvErr, Counter::ReadvBytes, Counter::ReadvTime),
            Direction::Write => (Counter::WritevOk, Counter::WritevErr, Counter::WritevBytes, Counter::WritevTime),
        };
        if let Some(t) = started {
            self.count(&result, ok, err);
            if let Ok(n) = result {
                self.stats.add(bytes, n as u64);
                self.stats.add(time, self.stats.since(t));
            }
        }
        result
    }

    /// [`transfer_vector`](Self::transfer_vector) without the counting.
    ///
    /// # Safety
    /// As [`transfer_vector`](Self::transfer_vector).
    unsafe fn vectors(
        &self,
        direction: Direction,
        handle: HandleId,
        vectors: &[(usize, usize)],
        offset: i64,
    ) -> Result<usize> {
        if vectors.len() > MAX_VECTORS || offset < 0 {
            return Err(OpError::InvalidValue.into());
        }
        let total = vectors.iter().try_fold(0usize, |sum, &(_, len)| sum.checked_add(len));
        if total.is_none_or(|t| offset.checked_add_unsigned(t as u64).is_none()) {
            return Err(OpError::InvalidValue.into());
        }
        let mut done = 0usize;
        for &(base, len) in vectors.iter().filter(|(_, len)| *len > 0) {
            let mut moved = 0usize;
            while moved < len {
                let at = offset + (done + moved) as i64;
                let step = self
                    .deferred_with(direction, handle, base, true)
                    .and_then(|d| d.plan(len - moved, at, moved as i64)?.run());
                match step {
                    Ok(0) => return Ok(done + moved),
                    Ok(n) => moved += n,
                    Err(_) if done + moved > 0 => return Ok(done + moved),
                    Err(e) => return Err(e),
                }
            }
            done += moved;
        }
        Ok(done)
    }
}
