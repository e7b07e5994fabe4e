//! Lanes: what one thread needs to move a stream of chunks between a file and one device. A
//! lane owns a stream of that device and two pinned staging buffers, so the file side of one
//! chunk overlaps the copy of the other. Lanes are created on first use, kept for the life of
//! the backend, and bounded per device by the staging memory limit: pinning memory is slow
//! (it would dominate a call that did it), so it is done once.
//!
//! Buffer layout rule: a chunk at file offset `o` is staged at `base + o % PAGE`, so file
//! offsets and buffer addresses agree modulo the page size and direct I/O on aligned file
//! ranges gets aligned memory. Each buffer therefore has `chunk + PAGE` usable bytes.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use hipfile_core::{GpuRuntime, HipError, Stream};

use crate::fileio::PAGE;
use crate::uring::{LaneRing, UringState};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Updates under these locks are single pushes and pops: a poisoned lock is consistent.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One pinned staging buffer.
#[derive(Debug)]
pub(crate) struct Stage {
    /// As the runtime allocated it (for freeing).
    alloc: *mut u8,
    /// Page-aligned start.
    base: *mut u8,
}

impl Stage {
    /// Where file offset `offset` of a chunk starting there is staged (the layout rule).
    pub(crate) fn at(&self, offset: u64) -> *mut u8 {
        // SAFETY: `offset % PAGE < PAGE`, inside the `PAGE` slack of the allocation.
        unsafe { self.base.add((offset % PAGE) as usize) }
    }
}

/// A stream and two staging buffers on one device, and an io_uring with the buffers registered
/// where the kernel allows.
#[derive(Debug)]
pub(crate) struct Lane {
    pub(crate) stream: Stream,
    pub(crate) stages: [Stage; 2],
    pub(crate) ring: Option<LaneRing>,
}

// SAFETY: the staging buffers are owned by the lane, which one thread uses at a time (the pool
// hands it out exclusively); raw pointers only stop the automatic impl.
unsafe impl Send for Lane {}

/// The lanes of one device.
#[derive(Debug)]
struct DeviceLanes {
    free: Vec<Lane>,
    created: usize,
}

/// Lanes per device, created lazily up to a limit.
pub(crate) struct LanePool<G: GpuRuntime + ?Sized> {
    gpu: Arc<G>,
    uring: UringState,
    chunk: usize,
    max_per_device: usize,
    devices: Mutex<HashMap<i32, DeviceLanes>>,
    returned: Condvar,
}

impl<G: GpuRuntime + ?Sized> LanePool<G> {
    /// Lanes of `chunk`-byte buffers, at most `memory_limit` bytes of them per device (and
    /// at least one lane).
    pub(crate) fn new(gpu: Arc<G>, chunk: usize, memory_limit: usize, io_uring: bool) -> Self {
        let per_lane = 2 * (chunk + 2 * PAGE as usize);
        LanePool {
            gpu,
            uring: UringState::new(io_uring),
            chunk,
            max_per_device: (memory_limit / per_lane).max(1),
            devices: Mutex::new(HashMap::new()),
            returned: Condvar::new(),
        }
    }

    pub(crate) fn chunk(&self) -> usize {
        self.chunk
    }

    pub(crate) fn max_per_device(&self) -> usize {
        self.max_per_device
    }

    pub(crate) fn gpu(&self) -> &Arc<G> {
        &self.gpu
    }

    pub(crate) fn uring(&self) -> &UringState {
        &self.uring
    }

    /// A lane of `device` (the calling thread's current device), waiting for one to be
    /// returned when the device has as many as its limit allows.
    pub(crate) fn take(&self, device: i32) -> Result<Lane, HipError> {
        let mut devices = lock(&self.devices);
        loop {
            let lanes = devices.entry(device).or_insert_with(|| DeviceLanes { free: Vec::new(), created: 0 });
            if let Some(lane) = lanes.free.pop() {
                return Ok(lane);
            }
            if lanes.created < self.max_per_device {
                lanes.created += 1;
                drop(devices);
                let lane = self.create();
                if lane.is_err() {
                    lock(&self.devices).get_mut(&device).expect("entry made above").created -= 1;
                    self.returned.notify_one();
                }
                return lane;
            }
            devices = self.returned.wait(devices).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Gives a lane back. Its stream must have no work pending.
    pub(crate) fn put(&self, device: i32, lane: Lane) {
        lock(&self.devices).get_mut(&device).expect("lanes are taken before they are returned").free.push(lane);
        self.returned.notify_one();
    }

    fn create(&self) -> Result<Lane, HipError> {
        let stream = self.gpu.stream_create()?;
        let mut stages = Vec::with_capacity(2);
        for _ in 0..2 {
            match self.stage() {
                Ok(stage) => stages.push(stage),
                Err(e) => {
                    self.release(stream, stages, None);
                    return Err(e);
                }
            }
        }
        let [a, b] = <[Stage; 2]>::try_from(stages).expect("two stages");
        let usable = self.chunk + PAGE as usize;
        let ring = self.uring.ring_for([(a.base as usize, usable), (b.base as usize, usable)]);
        Ok(Lane { stream, stages: [a, b], ring })
    }

    fn stage(&self) -> Result<Stage, HipError> {
        let alloc = self.gpu.host_alloc(self.chunk + 2 * PAGE as usize)?;
        let pad = (alloc as usize).next_multiple_of(PAGE as usize) - alloc as usize;
        // SAFETY: `pad < PAGE`, inside the allocation.
        let base = unsafe { alloc.add(pad) };
        Ok(Stage { alloc, base })
    }

    fn release(&self, stream: Stream, stages: impl IntoIterator<Item = Stage>, ring: Option<LaneRing>) {
        let _ = self.gpu.stream_synchronize(stream);
        let _ = self.gpu.stream_destroy(stream);
        drop(ring); // unregisters the stages before they are freed
        for stage in stages {
            // SAFETY: allocated by `stage` with this runtime; the lane is gone, so nothing
            // uses it any more.
            let _ = unsafe { self.gpu.host_free(stage.alloc) };
        }
    }
}

impl<G: GpuRuntime + ?Sized> Drop for LanePool<G> {
    fn drop(&mut self) {
        let devices = std::mem::take(&mut *lock(&self.devices));
        for (device, lanes) in devices {
            // Streams and pinned memory belong to their device: free them there.
            let _ = self.gpu.set_device(device);
            for lane in lanes.free {
                self.release(lane.stream, lane.stages, lane.ring);
            }
        }
    }
}
