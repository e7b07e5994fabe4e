//! The worker threads that run the parts of large requests beside the caller's thread: one pool
//! per device, its threads set up for that device once (current device, CPUs near it). Started
//! on first use; dropping the pool ends and joins them.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;

use hipfile_core::sync::lock;

pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// What each worker runs once, when it starts.
pub(crate) type Setup = Arc<dyn Fn() + Send + Sync>;

/// A fixed number of threads taking jobs from one queue.
pub(crate) struct WorkerPool {
    size: usize,
    name: String,
    setup: Setup,
    queue: OnceLock<(Sender<Job>, Vec<JoinHandle<()>>)>,
}

impl WorkerPool {
    /// `size` threads named `name-N`, each running `setup` first.
    pub(crate) fn new(size: usize, name: String, setup: Setup) -> Self {
        WorkerPool { size, name, setup, queue: OnceLock::new() }
    }

    /// Runs `job` on a worker (on the calling thread if the pool has no threads).
    pub(crate) fn submit(&self, job: Job) {
        if self.size == 0 {
            return job();
        }
        let (queue, _) = self.queue.get_or_init(|| self.start());
        if let Err(mpsc::SendError(job)) = queue.send(job) {
            job(); // no worker could be started: run it here
        }
    }

    fn start(&self) -> (Sender<Job>, Vec<JoinHandle<()>>) {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        // A failed spawn leaves fewer workers; if none starts, the receiver is dropped with
        // `rx` below and `submit` runs jobs on the caller's thread.
        let workers = (0..self.size)
            .filter_map(|i| {
                let (rx, setup) = (Arc::clone(&rx), Arc::clone(&self.setup));
                let thread = std::thread::Builder::new().name(format!("{}-{i}", self.name));
                thread
                    .spawn(move || {
                        setup();
                        work(&rx)
                    })
                    .ok()
            })
            .collect();
        (tx, workers)
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        if let Some((queue, workers)) = self.queue.take() {
            drop(queue); // each worker's `recv` fails once the queue is empty: it returns
            let me = std::thread::current().id();
            for worker in workers.into_iter().filter(|w| w.thread().id() != me) {
                let _ = worker.join();
            }
        }
    }
}

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match lock(rx).recv() {
            Ok(job) => job,
            Err(_) => return, // the pool was dropped
        };
        // A panicking job must not take the worker down; its caller sees the part missing.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn dropping_the_pool_joins_its_threads() {
        let pool = WorkerPool::new(3, "test".into(), Arc::new(|| {}));
        let ran = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        for _ in 0..6 {
            let (ran, tx) = (Arc::clone(&ran), tx.clone());
            pool.submit(Box::new(move || {
                ran.fetch_add(1, Ordering::Relaxed);
                drop(tx);
            }));
        }
        drop(tx);
        for () in rx {}
        let rx = pool.queue.get().map(|(_, w)| w.len());
        drop(pool); // returns once every worker has ended
        assert_eq!((ran.load(Ordering::Relaxed), rx), (6, Some(3)));
    }
}
