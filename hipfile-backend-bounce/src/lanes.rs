//! Lanes: what one thread needs to move a stream of chunks from one device to a file (writes;
//! reads go through [`crate::stripes`]). A lane owns a stream of that device and two pinned
//! staging buffers, so the copy of one chunk overlaps the file write of the other. Lanes are
//! created on first use, kept for the life of the backend, and bounded per device by the
//! staging memory limit: pinning memory is slow (it would dominate a call that did it), so it
//! is done once. The pinned buffers themselves ([`Staging`], [`Stage`]) serve the stripes'
//! slots too.
//!
//! Buffer layout rule: a chunk at file offset `o` is staged at `base + o % PAGE`, so file
//! offsets and buffer addresses agree modulo the page size and direct I/O on aligned file
//! ranges gets aligned memory. Each buffer therefore has `chunk + PAGE` usable bytes.
//!
//! Staging memory is anonymous memory on transparent huge pages where the kernel gives them,
//! pinned with the runtime's host registration (else the runtime's pinned allocation). Direct
//! reads are why: a block device takes a bounded number of physically contiguous segments per
//! request, and 4 KiB pages split a 4 MiB read into several requests where 2 MiB pages keep it
//! whole. On the virtio disks measured (`docs/bench/history.md`), cold `O_DIRECT` reads into huge
//! pages ran 1.4-2.3x faster than into 4 KiB pages.

use std::sync::Arc;

use hipfile_core::{DeviceCopy, DeviceSpan, GpuRuntime, HipError, Stream};

use crate::bounded::Bounded;
use crate::fileio::PAGE;
use crate::uring::{LaneRing, UringState};

/// The size of a transparent huge page on x86-64 and (with 4 KiB base pages) aarch64.
const HUGE_PAGE: usize = 2 << 20;

/// How a staging buffer was pinned, which says how to free it.
#[derive(Debug)]
enum Pinned {
    /// Mapped here (`len` bytes from `base`) and registered with the runtime.
    Mapped { len: usize },
    /// Allocated by the runtime; this is its pointer.
    Allocated(*mut u8),
}

/// One pinned staging buffer: `usable` bytes from a page-aligned `base`, owned by the stage
/// until [`LanePool::release`] frees it.
#[derive(Debug)]
pub(crate) struct Stage {
    pinned: Pinned,
    base: *mut u8,
    usable: usize,
}

impl Stage {
    /// The window a chunk of `len` bytes at file offset `offset` is staged in (the layout
    /// rule): it starts `offset % PAGE` bytes in.
    pub(crate) fn window(&mut self, offset: u64, len: usize) -> &mut [u8] {
        let at = (offset % PAGE) as usize;
        // SAFETY: the stage owns `usable` initialised bytes from `base` (zero-filled when made)
        // and hands out one window at a time (`&mut self`).
        let bytes = unsafe { std::slice::from_raw_parts_mut(self.base, self.usable) };
        &mut bytes[at..at + len]
    }

    /// The usable bytes, as an address and a length: what an io_uring registers, and where a
    /// stripe's pieces go ([`crate::stripes`], whose threads fill disjoint parts of it at once).
    pub(crate) fn extent(&self) -> (usize, usize) {
        (self.base as usize, self.usable)
    }
}

// SAFETY: a stage is plain pinned memory; whoever holds it decides who touches which bytes
// (a lane one thread at a time, a stripe disjoint pieces), raw pointers only stop the
// automatic impl.
unsafe impl Send for Stage {}

/// Makes and frees pinned staging buffers of one device (on its NUMA node where known).
pub(crate) struct Staging<G: GpuRuntime + ?Sized> {
    pub(crate) gpu: Arc<G>,
    node: Option<u32>,
}

impl<G: GpuRuntime + ?Sized> Staging<G> {
    pub(crate) fn new(gpu: Arc<G>, node: Option<u32>) -> Self {
        Staging { gpu, node }
    }

    /// A buffer for chunks of up to `chunk` bytes placed by the layout rule (`chunk + PAGE`
    /// usable bytes): a huge-page mapping registered with the runtime, else the runtime's
    /// pinned allocation. The calling thread's current device must be the buffer's.
    pub(crate) fn stage(&self, chunk: usize) -> Result<Stage, HipError> {
        let usable = chunk + PAGE as usize;
        if let Some(stage) = self.huge_page_stage(usable) {
            return Ok(stage);
        }
        let len = chunk + 2 * PAGE as usize;
        let alloc = self.gpu.host_alloc(len)?;
        // SAFETY: `len` bytes the runtime just allocated; initialised once, so that windows of
        // it are plain byte slices.
        unsafe { alloc.write_bytes(0, len) };
        let pad = (alloc as usize).next_multiple_of(PAGE as usize) - alloc as usize;
        Ok(Stage { pinned: Pinned::Allocated(alloc), base: alloc.wrapping_add(pad), usable })
    }

    /// A buffer of `usable` bytes (whole pages) mapped at a huge-page boundary, advised to
    /// huge pages and registered with the runtime; `None` where mapping or registration fails
    /// (the caller then lets the runtime allocate).
    fn huge_page_stage(&self, usable: usize) -> Option<Stage> {
        let len = usable.next_multiple_of(PAGE as usize);
        let base = map_huge_page_aligned(len)?;
        if let Some(node) = self.node {
            crate::topology::prefer_node(base, len, node);
        }
        // The pages are faulted in here, not by the registration: a runtime registers under a
        // lock that its other calls (the copies of reads in flight) wait for. Measured on the
        // H200 (a 9 GB checkpoint loaded four times in each of three fresh processes, staging
        // pinned in the background meanwhile): the first load 0.94-0.98x of the later ones
        // without this, 1.00-1.06x with it. Kernels before 5.14 refuse the advice; the
        // registration then faults the pages in.
        // SAFETY: advice on the range mapped above, which this function owns.
        unsafe { libc::madvise(base.cast(), len, libc::MADV_POPULATE_WRITE) };
        // SAFETY: `[base, base + len)` is mapped, writable and owned by this stage.
        if unsafe { self.gpu.host_register(base, len) }.is_ok() {
            return Some(Stage { pinned: Pinned::Mapped { len }, base, usable });
        }
        // SAFETY: mapped above and unused.
        unsafe { unmap(base, len) };
        None
    }

    /// Frees a stage made by [`Staging::stage`] that nothing uses any more (no copy queued on
    /// it). The calling thread's current device must be the stage's.
    pub(crate) fn free(&self, stage: Stage) {
        match stage.pinned {
            Pinned::Allocated(alloc) => {
                // SAFETY: made by `stage` with this runtime, unused.
                let _ = unsafe { self.gpu.host_free(alloc) };
            }
            Pinned::Mapped { len } => {
                // SAFETY: registered by `stage` with this runtime, unused.
                let _ = unsafe { self.gpu.host_unregister(stage.base) };
                // SAFETY: mapped by `stage`, unused.
                unsafe { unmap(stage.base, len) };
            }
        }
    }
}

/// A stream and two staging buffers on one device, and an io_uring with the buffers registered
/// where the kernel allows. The lane knows which stages a queued copy may still use, and waits
/// for the stream before handing such a stage out again: the bounce path's only `unsafe`
/// (queuing a copy whose host side outlives the call) is kept here.
#[derive(Debug)]
pub(crate) struct Lane {
    stream: Stream,
    stages: [Stage; 2],
    /// A copy queued on the stream may still use this stage.
    queued: [bool; 2],
    ring: Option<LaneRing>,
}

// SAFETY: the staging buffers are owned by the lane, which one thread uses at a time (the pool
// hands it out exclusively); raw pointers only stop the automatic impl.
unsafe impl Send for Lane {}

impl Lane {
    /// Waits for the copies queued on the lane's stream; then no stage is in use.
    pub(crate) fn synchronize<G: GpuRuntime + ?Sized>(&mut self, gpu: &G) -> Result<(), HipError> {
        gpu.stream_synchronize(self.stream)?;
        self.queued = [false; 2];
        Ok(())
    }

    /// Stage `k`'s window for a chunk of `len` bytes at file offset `offset`, and the lane's
    /// ring for the file I/O on it. Waits for the stream first if a queued copy may still use
    /// the stage.
    pub(crate) fn host_side<G: GpuRuntime + ?Sized>(
        &mut self,
        gpu: &G,
        k: usize,
        offset: u64,
        len: usize,
    ) -> Result<(&mut [u8], Option<&mut LaneRing>), HipError> {
        if self.queued[k] {
            self.synchronize(gpu)?;
        }
        Ok((self.stages[k].window(offset, len), self.ring.as_mut()))
    }

    /// Queues the copy of `src` into stage `k`'s window for a chunk of `src.len()` bytes at
    /// file offset `offset`.
    pub(crate) fn download<G: GpuRuntime + ?Sized>(
        &mut self,
        gpu: &G,
        k: usize,
        offset: u64,
        src: DeviceSpan,
    ) -> Result<(), HipError> {
        if self.queued[k] {
            self.synchronize(gpu)?;
        }
        self.queued[k] = true;
        // SAFETY: as in `upload`.
        unsafe { gpu.copy_from_device_async(self.stages[k].window(offset, src.len()), src, self.stream) }
    }
}

/// The lanes of one device, created on first use (by writes) up to a limit; each device has
/// its own pool, lock and waiters.
pub(crate) struct LanePool<G: GpuRuntime + ?Sized> {
    gpu: Arc<G>,
    device: i32,
    /// Staging memory, placed on the device's NUMA node (see [`crate::topology`]).
    staging: Staging<G>,
    uring: Arc<UringState>,
    chunk: usize,
    lanes: Bounded<Lane>,
}

impl<G: GpuRuntime + ?Sized> LanePool<G> {
    /// Lanes of `device` with `chunk`-byte buffers, at most `memory_limit` bytes of them (and
    /// at least one lane), staged on `node` where given.
    pub(crate) fn new(
        gpu: Arc<G>,
        device: i32,
        node: Option<u32>,
        uring: Arc<UringState>,
        chunk: usize,
        memory_limit: usize,
    ) -> Self {
        let per_lane = 2 * (chunk + 2 * PAGE as usize);
        LanePool {
            staging: Staging::new(Arc::clone(&gpu), node),
            gpu,
            device,
            uring,
            chunk,
            lanes: Bounded::new(memory_limit / per_lane),
        }
    }

    /// The most lanes this device has.
    pub(crate) fn max(&self) -> usize {
        self.lanes.max()
    }

    /// A lane, waiting for one to be returned when the device has as many as its limit allows.
    /// The calling thread's current device must be this pool's.
    pub(crate) fn take(&self) -> Result<Lane, HipError> {
        self.lanes.take(|| self.create())
    }

    /// Gives a lane back (a copy still queued on it is waited for by its next user).
    pub(crate) fn put(&self, lane: Lane) {
        self.lanes.put(lane);
    }

    fn create(&self) -> Result<Lane, HipError> {
        let stream = self.gpu.stream_create()?;
        let mut stages = Vec::with_capacity(2);
        for _ in 0..2 {
            match self.staging.stage(self.chunk) {
                Ok(stage) => stages.push(stage),
                Err(e) => {
                    self.release(stream, stages, None);
                    return Err(e);
                }
            }
        }
        let stages = <[Stage; 2]>::try_from(stages).expect("two stages");
        let ring = self.uring.ring_for(stages.each_ref().map(Stage::extent));
        Ok(Lane { stream, stages, queued: [false; 2], ring })
    }

    fn release(&self, stream: Stream, stages: impl IntoIterator<Item = Stage>, ring: Option<LaneRing>) {
        let _ = self.gpu.stream_synchronize(stream);
        let _ = self.gpu.stream_destroy(stream);
        drop(ring); // unregisters the stages before they are freed
        // The lane is gone (its stream synchronised), so nothing uses its stages any more.
        stages.into_iter().for_each(|stage| self.staging.free(stage));
    }
}

/// A fresh anonymous mapping of `len` bytes (a multiple of [`PAGE`]) that starts at a huge-page
/// boundary and is advised to huge pages (where the kernel has them off, ordinary pages still
/// work).
fn map_huge_page_aligned(len: usize) -> Option<*mut u8> {
    let span = len + HUGE_PAGE;
    let prot = libc::PROT_READ | libc::PROT_WRITE;
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let raw = unsafe { libc::mmap(std::ptr::null_mut(), span, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let start = raw.cast::<u8>();
    let skip = start.align_offset(HUGE_PAGE);
    let base = start.wrapping_add(skip);
    // SAFETY: the head before `base`, part of the mapping above that nothing uses.
    unsafe { unmap(start, skip) };
    // SAFETY: the tail after `base + len`, likewise.
    unsafe { unmap(base.wrapping_add(len), span - skip - len) };
    // SAFETY: advice on the range kept, which this function owns.
    unsafe { libc::madvise(base.cast(), len, libc::MADV_HUGEPAGE) };
    Some(base)
}

/// Unmaps `[ptr, ptr + len)`; nothing when `len` is 0.
///
/// # Safety
/// The range must be a page-aligned part of a mapping made here that nothing uses.
unsafe fn unmap(ptr: *mut u8, len: usize) {
    if len > 0 {
        // SAFETY: per the contract above, the range is ours to unmap.
        unsafe { libc::munmap(ptr.cast(), len) };
    }
}

impl<G: GpuRuntime + ?Sized> Drop for LanePool<G> {
    fn drop(&mut self) {
        let free = self.lanes.drain();
        if free.is_empty() {
            return;
        }
        // Streams and pinned memory belong to their device: free them there, then give the
        // dropping thread its device back.
        let previous = self.gpu.current_device();
        let _ = self.gpu.set_device(self.device);
        for lane in free {
            self.release(lane.stream, lane.stages, lane.ring);
        }
        if let Ok(previous) = previous {
            let _ = self.gpu.set_device(previous);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hipfile_backend_mock::MockGpu;

    /// The `VmFlags` line of the mapping that starts at `addr`, from `/proc/self/smaps`.
    fn vm_flags(addr: usize) -> String {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let head = format!("{addr:x}-");
        let mapping = smaps.split_once(&format!("\n{head}")).map(|(_, rest)| rest).expect("the stage is a mapping");
        let flags = mapping.lines().find(|l| l.starts_with("VmFlags:")).unwrap();
        flags.to_owned()
    }

    #[test]
    fn stages_are_huge_page_aligned_mappings_registered_with_the_runtime() {
        let gpu = MockGpu::new(1);
        let pool = LanePool::new(Arc::clone(&gpu), 0, None, Arc::new(UringState::new(false)), 1 << 20, 64 << 20);
        let lane = pool.take().unwrap();
        for stage in &lane.stages {
            let base = stage.base as usize;
            assert_eq!(base % HUGE_PAGE, 0);
            assert!(matches!(stage.pinned, Pinned::Mapped { len } if len == (1 << 20) + PAGE as usize));
            // Advised to huge pages ("hg"); whether the kernel gives them is its choice.
            assert!(vm_flags(base).split_whitespace().any(|f| f == "hg"), "{}", vm_flags(base));
        }
        assert_eq!(gpu.pinned_allocations().get(&0), Some(&2), "both stages registered");
        pool.put(lane);
        drop(pool);
        assert!(gpu.pinned_allocations().is_empty(), "unregistered when the pool goes");
    }

    #[test]
    fn a_runtime_refusing_registration_gets_its_own_pinned_allocation() {
        let gpu = MockGpu::new(1);
        let pool = LanePool::new(Arc::clone(&gpu), 0, None, Arc::new(UringState::new(false)), 64 << 10, 64 << 20);
        gpu.faults().refuse_host_register(HipError::OUT_OF_MEMORY);
        let lane = pool.take().unwrap();
        assert!(lane.stages.iter().all(|s| matches!(s.pinned, Pinned::Allocated(_))));
        pool.put(lane);
    }

    #[test]
    fn a_stage_with_a_queued_copy_is_handed_out_only_after_the_copy() {
        let gpu = MockGpu::new(1);
        let pool = LanePool::new(Arc::clone(&gpu), 0, None, Arc::new(UringState::new(false)), 64 << 10, 64 << 20);
        let mut lane = pool.take().unwrap();
        let dev = gpu.malloc(4096).unwrap();
        // SAFETY: the allocation above, alive until `gpu` goes.
        let span = unsafe { DeviceSpan::new(dev, 4096) };
        gpu.write_device(dev, &[1u8; 4096]).unwrap();
        gpu.faults().delay_copies(std::time::Duration::from_millis(50));
        lane.download(&*gpu, 0, 0, span).unwrap();
        // The other stage is free at once; this one is the caller's only once the copy into it
        // has run.
        lane.host_side(&*gpu, 1, 0, 4096).unwrap().0.fill(3);
        assert!(lane.host_side(&*gpu, 0, 0, 4096).unwrap().0.iter().all(|&b| b == 1));
        gpu.faults().clear();
        pool.put(lane);
    }
}
