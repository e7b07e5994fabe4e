//! What the bounce path keeps per device: staging and workers, placed near it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use hipfile_core::pool::WorkerPool;
use hipfile_core::{BounceSettings, GpuRuntime};

use crate::fileio::PAGE;
use crate::lanes::LanePool;
use crate::stripes::SlotPool;
use crate::topology::{self, Placement};
use crate::uring::UringState;

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
        let threads = if cpus.is_empty() { threads } else { threads.min(cpus.len()) };
        let setup_gpu = Arc::clone(gpu);
        let setup = Arc::new(move || {
            topology::pin_thread(&cpus);
            let _ = setup_gpu.set_device(id);
        });
        let s = settings;
        // Reads' slots get what keeps every thread reading and a few copies queued, at most
        // three quarters of the staging budget; writes' lanes the rest (with the defaults, 24
        // slots of 4 MiB, and 19 lanes).
        let most_slots = threads + 8;
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
