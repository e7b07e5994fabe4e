//! The worker threads that run the parts of large requests beside the caller's thread.
//! Started on first use; they end when the backend is dropped.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// A fixed number of threads taking jobs from one queue.
pub(crate) struct WorkerPool {
    size: usize,
    queue: OnceLock<Sender<Job>>,
}

impl WorkerPool {
    pub(crate) fn new(size: usize) -> Self {
        WorkerPool { size, queue: OnceLock::new() }
    }

    /// Runs `job` on a worker (on the calling thread if the pool has no threads).
    pub(crate) fn submit(&self, job: Job) {
        if self.size == 0 {
            return job();
        }
        let queue = self.queue.get_or_init(|| self.start());
        if let Err(mpsc::SendError(job)) = queue.send(job) {
            job(); // no worker could be started: run it here
        }
    }

    fn start(&self) -> Sender<Job> {
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..self.size {
            let rx = Arc::clone(&rx);
            // A failed spawn leaves fewer workers; if none starts, the receiver is dropped with
            // `rx` below and `submit` runs jobs on the caller's thread.
            let _ = std::thread::Builder::new().name(format!("hipfile-bounce-{i}")).spawn(move || work(&rx));
        }
        tx
    }
}

fn work(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return, // the pool was dropped
        };
        // A panicking job must not take the worker down; its caller sees the part missing.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    }
}
