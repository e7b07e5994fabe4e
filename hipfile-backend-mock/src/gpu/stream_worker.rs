//! A mock stream: a thread that runs the stream's work in order.

use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use hipfile_core::HipError;
use hipfile_core::sync::{lock, wait};

pub(super) type Job = Box<dyn FnOnce() -> Result<(), HipError> + Send>;

/// One stream: a thread that runs queued work in order, and the count of work not yet run.
pub(super) struct StreamWorker {
    queue: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    progress: Arc<(Mutex<StreamProgress>, Condvar)>,
}

#[derive(Default)]
struct StreamProgress {
    pending: u64,
    error: Option<HipError>,
}

impl StreamWorker {
    pub(super) fn start() -> StreamWorker {
        let (tx, rx) = mpsc::channel::<Job>();
        let progress = Arc::new((Mutex::new(StreamProgress::default()), Condvar::new()));
        let p = Arc::clone(&progress);
        let thread = std::thread::Builder::new()
            .name("mockgpu-stream".into())
            .spawn(move || {
                for job in rx {
                    let result = job();
                    let mut s = lock(&p.0);
                    s.pending -= 1;
                    if let Err(e) = result {
                        s.error.get_or_insert(e);
                    }
                    p.1.notify_all();
                }
            })
            .expect("spawning a stream thread");
        StreamWorker { queue: Some(tx), thread: Some(thread), progress }
    }

    pub(super) fn submit(&self, job: Job) -> Result<(), HipError> {
        lock(&self.progress.0).pending += 1;
        let queue = self.queue.as_ref().ok_or(HipError::INVALID_HANDLE)?;
        queue.send(job).map_err(|_| HipError::INVALID_HANDLE)
    }

    /// Whether all its work has run.
    pub(super) fn idle(&self) -> bool {
        lock(&self.progress.0).pending == 0
    }

    pub(super) fn synchronize(&self) -> Result<(), HipError> {
        let (m, cv) = &*self.progress;
        let mut s = lock(m);
        while s.pending > 0 {
            s = wait(cv, s);
        }
        s.error.take().map_or(Ok(()), Err)
    }
}

impl Drop for StreamWorker {
    fn drop(&mut self) {
        self.queue = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
