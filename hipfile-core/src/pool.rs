//! A pool of worker threads: the bounce path's (one per device, its threads set up for that
//! device once: current device, CPUs near it) and the batch threads of a driver. Started on
//! first use; dropping the pool ends and joins them. In a forked child the parent's threads
//! are not there: the first job there starts threads of the child's own.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use crate::sync::lock;

/// A job for a worker.
pub type Job = Box<dyn FnOnce() + Send + 'static>;

/// What each worker runs once, when it starts.
pub type Setup = Arc<dyn Fn() + Send + Sync>;

/// A fixed number of threads, each with a queue of its own: jobs go to them in turn. (One
/// queue shared behind a lock wakes its threads one after another, each the next; measured
/// on the H200 machine, a batch of 128 small reads paid about a millisecond for that.)
pub struct WorkerPool {
    size: usize,
    name: String,
    setup: Setup,
    workers: Mutex<Option<Workers>>,
    next: AtomicUsize,
}

struct Workers {
    queues: Vec<Sender<Job>>,
    threads: Vec<JoinHandle<()>>,
    /// The fork generation the threads run in ([`crate::fork`]).
    fork: u64,
}

impl WorkerPool {
    /// `size` threads named `name-N`, each running `setup` first.
    pub fn new(size: usize, name: String, setup: Setup) -> Self {
        WorkerPool { size, name, setup, workers: Mutex::new(None), next: AtomicUsize::new(0) }
    }

    /// Runs `job` on a worker (on the calling thread if the pool has no threads).
    pub fn submit(&self, job: Job) {
        let unsent = {
            let _section = crate::fork::section(); // a fork never finds `workers` locked
            let mut workers = lock(&self.workers);
            if workers.as_ref().is_some_and(|w| w.fork != crate::fork::generation()) {
                std::mem::forget(workers.take()); // a forked child: not its threads (never join them)
            }
            let workers = workers.get_or_insert_with(|| self.start());
            if workers.queues.is_empty() {
                Some(job) // no threads (none wanted, or none could be started)
            } else {
                let i = self.next.fetch_add(1, Ordering::Relaxed) % workers.queues.len();
                workers.queues[i].send(job).err().map(|mpsc::SendError(job)| job) // that worker is gone
            }
        };
        if let Some(job) = unsent {
            job(); // here, outside the locks
        }
    }

    /// Ends the threads once their queues are empty, joining them (the driver's last close,
    /// semantics §2); the next job starts new ones. Jobs still queued run first.
    pub fn stop(&self) {
        let workers = {
            let _section = crate::fork::section();
            lock(&self.workers).take()
        };
        if let Some(workers) = workers {
            Self::join(workers);
        }
    }

    fn join(workers: Workers) {
        if workers.fork != crate::fork::generation() {
            return std::mem::forget(workers); // a forked child: not its threads to join
        }
        drop(workers.queues); // each worker's `recv` fails once its queue is empty: it returns
        let me = std::thread::current().id();
        for worker in workers.threads.into_iter().filter(|w| w.thread().id() != me) {
            let _ = worker.join();
        }
    }

    fn start(&self) -> Workers {
        let mut workers = Workers { queues: Vec::new(), threads: Vec::new(), fork: crate::fork::generation() };
        for i in 0..self.size {
            let (tx, rx) = mpsc::channel::<Job>();
            let setup = Arc::clone(&self.setup);
            let thread = std::thread::Builder::new().name(format!("{}-{i}", self.name)).spawn(move || {
                setup();
                work(&rx)
            });
            // A failed spawn leaves fewer workers.
            if let Ok(thread) = thread {
                workers.queues.push(tx);
                workers.threads.push(thread);
            }
        }
        workers
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        if let Some(workers) = lock(&self.workers).take() {
            Self::join(workers);
        }
    }
}

fn work(rx: &Receiver<Job>) {
    while let Ok(job) = recv_soon(rx) {
        // A panicking job must not take the worker down; its caller sees the part missing.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}

/// How long a thread that waits for the next job or result looks for it before it sleeps: 1 ms
/// on a machine of 8 CPUs or more, none on smaller ones (where a looking thread would take a
/// CPU from one with work). A millisecond outlasts the copies that end one caller's 72 MB call
/// after its reads, so the readers are still awake for the next call; 2 ms and more cost four
/// callers of 16 MiB (docs/bench/history.md, "Readers awake between one caller's calls").
fn awake() -> std::time::Duration {
    static AWAKE: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
    *AWAKE.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        std::time::Duration::from_micros(if cpus >= 8 { 1000 } else { 0 })
    })
}

/// `rx.recv()`, looking for a message for a while (1 ms on machines of 8 CPUs or more, yielding
/// the CPU between looks) before sleeping on the channel. Calls that follow each other (a loop
/// of reads) find their threads awake: on the H200 machine's virtual CPUs, waking a sleeping
/// thread took a large part of a 16 MiB read's time.
pub fn recv_soon<T>(rx: &Receiver<T>) -> Result<T, mpsc::RecvError> {
    let (since, awake) = (std::time::Instant::now(), awake());
    loop {
        match rx.try_recv() {
            Ok(message) => return Ok(message),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) if since.elapsed() < awake => std::thread::yield_now(),
            Err(mpsc::TryRecvError::Empty) => return rx.recv(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let rx = lock(&pool.workers).as_ref().map(|w| w.threads.len());
        drop(pool); // returns once every worker has ended
        assert_eq!((ran.load(Ordering::Relaxed), rx), (6, Some(3)));
    }
}
