//! The read staging pool of a device: pinned buffers (slots) that stripes are read into and
//! copied from, each with the event of its last copy, so a slot is reused only once its copy
//! is done (docs/architecture.md, "One read"). Kept per device, made on first use (or ahead,
//! by the warmer) up to its memory limit.

use std::sync::Arc;

use hipfile_core::{DeviceCopy, Event, GatherPiece, GpuRuntime, HipError, Result, Stream};

use crate::bounded::Bounded;
use crate::fileio::PAGE;
use crate::gather::Gatherer;
use crate::lanes::{Stage, Staging};

/// A stripe's staging buffer, and the event of the last copy queued from it.
pub(crate) struct Slot {
    stage: Stage,
    event: Event,
    /// A copy queued from the stage may still read it (until `event` completes).
    queued: bool,
}

impl Slot {
    /// Where the stage's usable bytes start, and how many there are.
    pub(crate) fn extent(&self) -> (usize, usize) {
        self.stage.extent()
    }

    /// The stage's window for `len` bytes at file offset `offset` (the layout rule): no copy
    /// reads it, since a slot is handed out only once its copies have run.
    pub(crate) fn window(&mut self, offset: u64, len: usize) -> &mut [u8] {
        self.stage.window(offset, len)
    }

    /// Queues a copy of the first `dst.len()` bytes of the window at `offset` into `dst` on
    /// `stream`, to be waited for with [`Slot::wait`] before the slot is given back.
    ///
    /// # Safety
    /// `dst` is device memory of the runtime that stays valid until the stream has run the copy.
    pub(crate) unsafe fn copy<G: GpuRuntime + ?Sized>(
        &mut self,
        gpu: &G,
        offset: u64,
        dst: hipfile_core::DeviceSpan,
        stream: Stream,
    ) -> Result<()> {
        let src = self.stage.window(offset, dst.len());
        // SAFETY: `dst` per the caller's contract; `src` stays untouched until the copy has run:
        // [`Slot::wait`] waits for it, or marks the slot queued.
        unsafe { gpu.copy_to_device_async(dst, src, stream) }.map_err(Into::into)
    }

    /// Waits for the copies queued from the slot on `stream`. Should the wait fail, the slot is
    /// marked queued behind them, so that its next taker waits for their event.
    pub(crate) fn wait<G: GpuRuntime + ?Sized>(
        &mut self,
        gpu: &G,
        stream: Stream,
    ) -> std::result::Result<(), HipError> {
        gpu.stream_synchronize(stream).inspect_err(|_| self.queued_behind(gpu, stream))
    }

    /// The piece of a gathered copy ([`crate::gather`]) of the first `dst.len()` bytes of the
    /// window at `offset` into `dst`.
    pub(crate) fn piece(&mut self, offset: u64, dst: hipfile_core::DeviceSpan) -> GatherPiece {
        GatherPiece { src: self.stage.window(offset, dst.len()).as_ptr() as usize, dst }
    }

    /// Marks the slot queued behind the work queued on `stream` so far (a copy from it that may
    /// still run there), so that its next taker waits for that.
    pub(crate) fn queued_behind<G: GpuRuntime + ?Sized>(&mut self, gpu: &G, stream: Stream) {
        let _ = gpu.event_record(self.event, stream);
        self.queued = true;
    }
}

/// The slots of one device and the streams its reads copy on, made on first use up to their
/// limits and kept for the backend's life, and the queue of small reads' copies to be gathered.
pub(crate) struct SlotPool<G: GpuRuntime + ?Sized> {
    staging: Staging<G>,
    device: i32,
    /// The largest stripe a slot holds.
    stripe: usize,
    slots: Bounded<Slot>,
    /// As many as reads in flight on the device at once, up to a limit (a read waits for one
    /// beyond it).
    streams: Bounded<Stream>,
    /// Where small reads from several threads queue their copies to be made together.
    pub(crate) gatherer: Gatherer,
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
            gatherer: Gatherer::default(),
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

    /// The most slots the pool holds.
    #[cfg(test)]
    pub(crate) fn most(&self) -> usize {
        self.slots.max()
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
    use hipfile_backend_mock::MockGpu;
    use hipfile_core::DeviceSpan;

    use super::*;

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
}
