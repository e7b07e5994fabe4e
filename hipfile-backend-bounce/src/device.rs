//! What the bounce path keeps per device: staging, workers, placement; made on first use.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use hipfile_core::{GpuRuntime, Result};

use hipfile_core::pool::WorkerPool;
use hipfile_core::sync::{read, write};

use crate::Inner;
use crate::fileio::PAGE;
use crate::lanes::LanePool;
use crate::stripes::SlotPool;
use crate::topology::{self, Placement};

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

impl<G: GpuRuntime + ?Sized + 'static> Inner<G> {
    pub(crate) fn placement(&self, device: i32) -> Placement {
        let bus_id = self.gpu.pci_bus_id(device).ok();
        self.topology.placement(&self.sysfs, bus_id.as_deref())
    }

    /// The state of `device`, made on first use.
    pub(crate) fn device(&self, id: i32) -> Result<Arc<Device<G>>> {
        if let Some(device) = read(&self.devices).get(&id) {
            return Ok(Arc::clone(device));
        }
        if !(0..self.gpu.device_count()?).contains(&id) {
            return Err(hipfile_core::HipError::INVALID_DEVICE.into());
        }
        let mut devices = write(&self.devices);
        let device = devices.entry(id).or_insert_with(|| {
            let Placement { node, cpus } = self.placement(id);
            let threads = if cpus.is_empty() { self.threads } else { self.threads.min(cpus.len()) };
            let gpu = Arc::clone(&self.gpu);
            let setup = Arc::new(move || {
                topology::pin_thread(&cpus);
                let _ = gpu.set_device(id);
            });
            let s = &self.settings;
            // Reads' slots get what keeps every thread reading and a few copies queued, at most
            // three quarters of the staging budget; writes' lanes the rest (with the defaults,
            // 24 slots of 4 MiB, and 19 lanes).
            let most_slots = threads + 8;
            let for_slots = (most_slots * (s.chunk + 2 * PAGE as usize)).min(s.memory_limit - s.memory_limit / 4);
            let for_lanes = s.memory_limit - for_slots;
            let slots = SlotPool::new(Arc::clone(&self.gpu), id, node, s.chunk, for_slots, most_slots);
            Arc::new(Device {
                slots,
                lanes: LanePool::new(Arc::clone(&self.gpu), id, node, Arc::clone(&self.uring), s.chunk, for_lanes),
                workers: WorkerPool::new(threads.saturating_sub(1), format!("hipfile-d{id}"), setup),
                threads,
                warming: AtomicBool::new(false),
                in_flight: AtomicUsize::new(0),
            })
        });
        Ok(Arc::clone(device))
    }
}
