//! The dispatcher between the driver and the backends (semantics §6): it owns the backends of
//! an open driver and what each served, and runs one request: choose the best-scoring
//! backend, let it transfer, and fall back when a p2p backend finds no path to the device
//! (upstream's `BackendWithFallback`). It counts what it did and logs each reason once.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::backend::{Backend, BackendKind, Declined, Direction, IoRequest, is_no_path};
use crate::cache::CachePolicy;
use crate::config::StreamSignal;
use crate::error::{OpError, Result};
use crate::file::FileHandle;
use crate::gpu::DeviceSpan;
use crate::io::plan_io;
use crate::log::log_once_keyed;
use crate::platform::BufferInfo;
use crate::stats::{Counter, Path, Stats};

/// A checked request, ready to run: what [`Deferred::plan`] gives. It holds the file and the
/// backends, so the driver closing waits for it.
pub(crate) struct Planned<B> {
    pub(crate) flight: InFlight<B>,
    pub(crate) direction: Direction,
    pub(crate) target: Target,
    pub(crate) file_offset: u64,
}

/// Where a request's bytes are in memory.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Target {
    /// Device memory the driver checked against its allocation, on `device`; `managed`:
    /// managed memory (served by the bounce path only, semantics §4).
    Device { memory: DeviceSpan, device: i32, managed: bool },
    /// Host memory the caller vouched for (semantics §4); `durable`: writes reach stable
    /// storage before the call returns.
    Host { addr: usize, len: usize, durable: bool },
}

impl<B: Backend> Planned<B> {
    /// The statistics this request counts into.
    pub(crate) fn stats(&self) -> Arc<Stats> {
        Arc::clone(&self.flight.dispatcher.stats)
    }

    /// Which way the bytes go.
    pub(crate) fn direction(&self) -> Direction {
        self.direction
    }

    /// The request a backend sees (device memory only).
    fn request(&self) -> Option<IoRequest<'_>> {
        match self.target {
            Target::Device { memory, device, managed } => Some(
                IoRequest::new(self.direction, &self.flight.file, memory, device, self.file_offset)
                    .with_managed(managed),
            ),
            Target::Host { .. } => None,
        }
    }

    /// Moves the bytes (nothing for an empty request).
    pub(crate) fn run(self) -> Result<usize> {
        self.flight.dispatcher.run(self.direction, &self.flight.file, self.target, self.file_offset)
    }

    /// Whether this request would go to a bounce backend, which can take it together with
    /// others ([`Planned::run_many`]).
    pub(crate) fn goes_to_bounce(&self) -> bool {
        self.request().is_some_and(|req| req.size() > 0 && self.flight.dispatcher.goes_to_bounce(&req))
    }

    /// Moves the bytes of several requests of one driver generation that go to bounce
    /// ([`goes_to_bounce`](Self::goes_to_bounce)) together (see `Dispatcher::dispatch_many`);
    /// one result per request, in order.
    pub(crate) fn run_many(planned: Vec<Self>) -> Vec<Result<usize>> {
        let Some(first) = planned.first() else { return Vec::new() };
        let reqs: Vec<IoRequest<'_>> = planned.iter().filter_map(Planned::request).collect();
        assert_eq!(reqs.len(), planned.len(), "only device memory goes to bounce");
        let refs: Vec<&IoRequest<'_>> = reqs.iter().collect();
        first.flight.dispatcher.dispatch_many(&refs)
    }
}

/// A request whose file, backends and buffer are looked up, and whose sizes and offsets are
/// still to come (`Driver::deferred`).
pub(crate) struct Deferred<B> {
    pub(crate) flight: InFlight<B>,
    pub(crate) direction: Direction,
    pub(crate) buffer_base: usize,
    pub(crate) buffer_len: usize,
    pub(crate) device: i32,
    pub(crate) signal: StreamSignal,
    /// Host memory: whether writes are durable (semantics §4).
    pub(crate) host: Option<bool>,
    /// Managed memory (semantics §4).
    pub(crate) managed: bool,
}

impl<B> Deferred<B> {
    /// Checks offsets and bounds against the buffer (semantics §5): the request to run.
    pub(crate) fn plan(&self, size: usize, file_offset: i64, buffer_offset: i64) -> Result<Planned<B>> {
        let plan = plan_io(self.buffer_base, self.buffer_len, size, file_offset, buffer_offset)?;
        let target = match self.host {
            Some(durable) => Target::Host { addr: plan.device_addr, len: plan.size, durable },
            None => {
                let bound = self.buffer_base + self.buffer_len;
                // SAFETY: `plan_io` placed [device_addr, device_addr + size) inside the buffer,
                // which is either registered device memory (checked against its allocation at
                // registration) or the rest of the device allocation the runtime reported when
                // this was looked up; the whole of it lies in one allocation.
                let memory = unsafe { DeviceSpan::within(plan.device_addr, plan.size, bound) };
                Target::Device { memory, device: self.device, managed: self.managed }
            }
        };
        let flight = InFlight {
            file: Arc::clone(&self.flight.file),
            dispatcher: Arc::clone(&self.flight.dispatcher),
            registered: self.flight.registered,
        };
        Ok(Planned { flight, direction: self.direction, target, file_offset: plan.file_offset })
    }

    /// How stream-ordered operations are signalled under the driver's configuration.
    pub(crate) fn signal(&self) -> StreamSignal {
        self.signal
    }
}

/// What one request holds while it runs. Fields drop in declaration order: the file (and its
/// descriptors, once deregistered) before the backends, so when closing the driver has waited
/// for the backends to be let go, nothing of the request is left.
pub(crate) struct InFlight<B> {
    pub(crate) file: Arc<FileHandle>,
    pub(crate) dispatcher: Arc<Dispatcher<B>>,
    pub(crate) registered: Option<BufferInfo>,
}

/// The backends of an open driver, p2p backends first, and what each served.
pub(crate) struct Dispatcher<B> {
    backends: Box<[B]>,
    served: Box<[Served]>,
    /// The driver's statistics (semantics §14).
    pub(crate) stats: Arc<Stats>,
    /// Whether each request goes through the page cache (semantics §16).
    pub(crate) cache: CachePolicy,
    /// Whether writes are durable when they return, for files without a setting of their own
    /// (`HIPFILE_DURABLE_WRITES`, semantics §5).
    durable: bool,
}

impl<B: Backend> Dispatcher<B> {
    pub(crate) fn new(backends: Vec<B>, stats: Arc<Stats>, cache: CachePolicy, durable: bool) -> Self {
        let served = backends.iter().map(|_| Served::default()).collect();
        Dispatcher { backends: backends.into(), served, stats, cache, durable }
    }

    /// `req` with the page-cache policy (semantics §16) and the file's durability (§5) applied.
    fn decided<'a>(&self, req: &IoRequest<'a>) -> IoRequest<'a> {
        let end = req.file_offset() + req.size() as u64;
        let file = req.file();
        req.with_cache(file.decide_cache(&self.cache, req.direction(), end).cache_use())
            .with_durable(file.durable().unwrap_or(self.durable))
    }

    pub(crate) fn backends(&self) -> &[B] {
        &self.backends
    }

    /// The backend that would serve `req` (the best score; ties keep the first, as upstream),
    /// and the first p2p backend that declined it, with its reason. With none able to
    /// serve it: `hipFileInternalError`, as upstream.
    fn choose(&self, req: &IoRequest<'_>) -> Result<(usize, Option<(usize, Declined)>)> {
        let mut best: Option<(u32, usize)> = None;
        let mut declined: Option<(usize, Declined)> = None;
        for (i, b) in self.backends.iter().enumerate() {
            match b.score(req) {
                Ok(s) if best.is_none_or(|(bs, _)| s > bs) => best = Some((s, i)),
                Ok(_) => {}
                Err(why) if b.kind() == BackendKind::P2p && declined.is_none() => declined = Some((i, why)),
                Err(_) => {}
            }
        }
        let (_, chosen) = best.ok_or(OpError::InternalError)?;
        Ok((chosen, declined))
    }

    /// Whether `req` would go to a bounce backend, which takes several requests
    /// together ([`Backend::transfer_many`]).
    pub(crate) fn goes_to_bounce(&self, req: &IoRequest<'_>) -> bool {
        self.choose(req).is_ok_and(|(chosen, _)| self.backends[chosen].kind() == BackendKind::Bounce)
    }

    /// Runs one checked request: host memory moved by the driver itself (semantics §4), device
    /// memory by the best backend ([`dispatch`](Self::dispatch)); counted either way.
    pub(crate) fn run(&self, direction: Direction, file: &FileHandle, target: Target, offset: u64) -> Result<usize> {
        match target {
            Target::Device { memory, .. } if memory.is_empty() => Ok(0),
            Target::Device { memory, device, managed } => {
                self.dispatch(&IoRequest::new(direction, file, memory, device, offset).with_managed(managed))
            }
            Target::Host { addr, len, durable } => {
                let durable = file.durable().unwrap_or(durable);
                let started = self.stats.start();
                let cache = file.decide_cache(&self.cache, direction, offset + len as u64).cache_use();
                let result = crate::hostio::transfer(direction, file, addr, len, offset, durable, cache);
                if let Some(t) = started {
                    let unaligned = crate::stats::unaligned(file, addr, len, offset);
                    self.stats.io(t, direction, Path::Host, -1, len, unaligned, &result);
                    self.count_durable(direction, durable, &result);
                }
                result
            }
        }
    }

    /// Moves the bytes of `req` with the best backend, falling back when a p2p backend
    /// finds no path to the device.
    pub(crate) fn dispatch(&self, req: &IoRequest<'_>) -> Result<usize> {
        self.dispatch_decided(&self.decided(req))
    }

    /// [`dispatch`](Self::dispatch) of a request the policy has been applied to.
    fn dispatch_decided(&self, req: &IoRequest<'_>) -> Result<usize> {
        let backends = &self.backends;
        let started = self.stats.start();
        let (chosen, declined) = self.choose(req)?;
        let (used, result) = match backends[chosen].transfer(req) {
            Err(e) if backends[chosen].kind() == BackendKind::P2p && is_no_path(&e) => {
                let Some(bounce) = self.bounce_for(req) else { return Err(e) };
                self.served[chosen].no_path.fetch_add(1, Ordering::Relaxed);
                self.stats.add(Counter::BouncedNoPath, 1);
                log_once_keyed(&e.to_string(), || {
                    let (p2p, bounce) = (backends[chosen].name(), backends[bounce].name());
                    format!("{p2p} has no path to the device ({e}); requests it cannot serve go to {bounce}")
                });
                (bounce, backends[bounce].transfer(req))
            }
            result => (chosen, result),
        };
        self.account(used, &result, declined);
        if let Some(t) = started {
            self.count(t, used, req, &result);
        }
        result
    }

    /// Counts one request `used` served (or failed) in the statistics.
    fn count(&self, started: u64, used: usize, req: &IoRequest<'_>, result: &Result<usize>) {
        let path = match self.backends[used].kind() {
            BackendKind::P2p => Path::P2p,
            BackendKind::Bounce => Path::Bounce,
        };
        let unaligned = crate::stats::unaligned(req.file(), req.device_addr(), req.size(), req.file_offset());
        self.stats.io(started, req.direction(), path, req.device(), req.size(), unaligned, result);
        self.count_durable(req.direction(), req.durable(), result);
    }

    /// Counts a durable write that succeeded ([`Counter::DurableWrites`]).
    fn count_durable(&self, direction: Direction, durable: bool, result: &Result<usize>) {
        if let (Direction::Write, true, Ok(n)) = (direction, durable, result) {
            self.stats.add(Counter::DurableWrites, 1);
            self.stats.add(Counter::DurableWriteBytes, *n as u64);
        }
    }

    /// Several requests, each to the backend [`dispatch`](Self::dispatch) would choose: those
    /// a bounce backend serves go to it together, the others one by one. One result per
    /// request, in order.
    pub(crate) fn dispatch_many(&self, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        /// The requests one bounce backend takes together: (index, a p2p backend's decline).
        struct Group {
            backend: usize,
            members: Vec<(usize, Option<(usize, Declined)>)>,
        }
        let decided: Vec<IoRequest<'_>> = reqs.iter().map(|req| self.decided(req)).collect();
        let reqs: Vec<&IoRequest<'_>> = decided.iter().collect();
        let mut results: Vec<Option<Result<usize>>> = reqs.iter().map(|_| None).collect();
        let mut groups: Vec<Group> = Vec::new();
        for (i, req) in reqs.iter().enumerate() {
            match self.choose(req) {
                Ok((chosen, declined)) if self.backends[chosen].kind() == BackendKind::Bounce => {
                    match groups.iter_mut().find(|g| g.backend == chosen) {
                        Some(g) => g.members.push((i, declined)),
                        None => groups.push(Group { backend: chosen, members: vec![(i, declined)] }),
                    }
                }
                _ => results[i] = Some(self.dispatch_decided(req)),
            }
        }
        for Group { backend, members } in groups {
            let group: Vec<&IoRequest<'_>> = members.iter().map(|&(i, _)| reqs[i]).collect();
            let started = self.stats.start();
            let moved = self.backends[backend].transfer_many(&group);
            for ((i, declined), result) in members.into_iter().zip(moved) {
                self.account(backend, &result, declined);
                if let Some(t) = started {
                    self.count(t, backend, reqs[i], &result); // each took the group's time
                }
                results[i] = Some(result);
            }
        }
        results.into_iter().map(|r| r.expect("every request dispatched")).collect()
    }

    /// Counts what backend `used` served, and a p2p backend's decline that bounce took.
    fn account(&self, used: usize, result: &Result<usize>, declined: Option<(usize, Declined)>) {
        let backends = &self.backends;
        if let Ok(n) = result {
            self.served[used].requests.fetch_add(1, Ordering::Relaxed);
            self.served[used].bytes.fetch_add(*n as u64, Ordering::Relaxed);
            if let Some((i, why)) = declined.filter(|_| backends[used].kind() == BackendKind::Bounce) {
                self.served[i].declined.fetch_add(1, Ordering::Relaxed);
                self.stats.add(Counter::BouncedDeclined, 1);
                log_once_keyed(&why.0, || {
                    format!("{} did not serve a request: {why}; {} did", backends[i].name(), backends[used].name())
                });
            }
        }
    }

    /// The first bounce backend that would serve `req`.
    fn bounce_for(&self, req: &IoRequest<'_>) -> Option<usize> {
        (0..self.backends.len())
            .filter(|&i| self.backends[i].kind() == BackendKind::Bounce)
            .find(|&i| self.backends[i].score(req).is_ok())
    }

    /// Each backend's name and counters: what the dispatcher saw it serve (`served_requests`,
    /// `served_bytes`, and for a p2p backend the requests it passed to bounce:
    /// `declined`, `no_path`), then the backend's own ([`Backend::counters`]).
    pub(crate) fn counters(&self) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
        self.backends
            .iter()
            .zip(self.served.iter())
            .map(|(b, served)| {
                let mut counters = served.counters(b.kind());
                counters.extend(b.counters());
                (b.name(), counters)
            })
            .collect()
    }

    /// Whether each p2p backend would serve `file`, or why not.
    pub(crate) fn p2p_verdicts(&self, file: &FileHandle) -> Vec<(&'static str, std::result::Result<(), Declined>)> {
        self.backends
            .iter()
            .filter(|b| b.kind() == BackendKind::P2p)
            .map(|b| (b.name(), b.accepts_file(file)))
            .collect()
    }
}

/// What the dispatcher saw one backend serve.
#[derive(Debug, Default)]
struct Served {
    requests: AtomicU64,
    bytes: AtomicU64,
    /// Requests this (direct) backend declined that bounce served.
    declined: AtomicU64,
    /// Requests this (direct) backend found no path for, retried on bounce.
    no_path: AtomicU64,
}

impl Served {
    fn counters(&self, kind: BackendKind) -> Vec<(&'static str, u64)> {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut counters = vec![("served_requests", get(&self.requests)), ("served_bytes", get(&self.bytes))];
        if kind == BackendKind::P2p {
            counters.extend([("declined", get(&self.declined)), ("no_path", get(&self.no_path))]);
        }
        counters
    }
}
