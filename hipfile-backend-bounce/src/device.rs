//! What the bounce path keeps per device: staging and workers, placed near it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use hipfile_core::pool::WorkerPool;
use hipfile_core::{BounceSettings, GpuRuntime};

use crate::fileio::PAGE;
use crate::lanes::LanePool;
use crate::slots::SlotPool;
use crate::topology::{self, Placement};
use crate::uring::UringState;

/// Most threads a request uses by default (what the H200 machine's measurements favour).
pub(crate) const DEFAULT_MAX_THREADS: usize = 16;

/// What the backend keeps for one device: its staging (slots for reads, lanes for writes) and
/// its workers, placed near it.
pub(crate) struct Device<G: GpuRuntime + ?Sized + 'static> {
    pub(crate) slots: SlotPool<G>,
    pub(crate) lanes: LanePool<G>,
    pub(crate) workers: WorkerPool,
    /// Threads one request for this device uses at most (the caller's included).
    pub(crate) threads: usize,
    /// Staging has been (or is being) set up ahead of use.
    pub(crate) warming: AtomicBool,
    /// Requests for this device in flight.
    pub(crate) in_flight: AtomicUsize,
}

impl<G: GpuRuntime + ?Sized + 'static> Device<G> {
    /// Device `id`'s state, placed as `placement` says: at most `threads` threads (fewer where
    /// its node has fewer CPUs), staging within the settings' memory limit.
    pub(crate) fn new(
        gpu: &Arc<G>,
        id: i32,
        placement: Placement,
        threads: usize,
        settings: &BounceSettings,
        uring: &Arc<UringState>,
    ) -> Device<G> {
        let Placement { node, cpus } = placement;
        let near =
            if cpus.is_empty() { std::thread::available_parallelism().map_or(1, usize::from) } else { cpus.len() };
        let threads = if cpus.is_empty() { threads } else { threads.min(near) };
        let setup_gpu = Arc::clone(gpu);
        let setup = Arc::new(move || {
            topology::pin_thread(&cpus);
            let _ = setup_gpu.set_device(id);
        });
        let s = settings;
        // Reads' slots get what keeps every thread reading and a few copies queued, at most
        // three quarters of the staging budget; writes' lanes the rest (with the defaults, 24
        // slots of 4 MiB, and 19 lanes). The threads reading at once are a request's, or as many
        // callers as the device has CPUs (up to the default's threads): a request given fewer
        // threads (HIPFILE_BOUNCE_THREADS=1, parallel I/O off) leaves many callers no fewer slots.
        let most_slots = threads.max(near.min(DEFAULT_MAX_THREADS)) + 8;
        let for_slots = (most_slots * (s.chunk + 2 * PAGE as usize)).min(s.memory_limit - s.memory_limit / 4);
        let for_lanes = s.memory_limit - for_slots;
        Device {
            slots: SlotPool::new(Arc::clone(gpu), id, node, s.chunk, for_slots, most_slots),
            lanes: LanePool::new(Arc::clone(gpu), id, node, Arc::clone(uring), s.chunk, for_lanes),
            workers: WorkerPool::new(threads.saturating_sub(1), format!("hipfile-d{id}"), setup),
            threads,
            warming: AtomicBool::new(false),
            in_flight: AtomicUsize::new(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hipfile_backend_mock::MockGpu;

    fn slots(threads: usize, cpus: usize) -> (usize, usize) {
        let gpu = MockGpu::new(1);
        let placement = Placement { node: None, cpus: (0..cpus).collect() };
        let settings = BounceSettings { threads, chunk: 1 << 20, ..BounceSettings::default() };
        let dev = Device::new(&gpu, 0, placement, threads, &settings, &Arc::new(UringState::new(false)));
        (dev.threads, dev.slots.most())
    }

    /// A device's slots serve as many readers as it has CPUs (up to the default's threads),
    /// however few threads one request may use, and every thread a request may use.
    #[test]
    fn slots_serve_as_many_callers_as_cpus() {
        assert_eq!(slots(16, 16), (16, 24));
        assert_eq!(slots(1, 16), (1, 24), "one thread a request: 16 callers still read at once");
        assert_eq!(slots(4, 64), (4, 24), "callers beyond the default's threads wait");
        assert_eq!(slots(16, 4), (4, 12), "threads placed on the device's 4 CPUs");
    }
}
