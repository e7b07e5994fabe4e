//! The driver: use count, registries, and the I/O path (semantics §2-§6): a request is looked
//! up, planned against its buffer, and handed to the dispatcher (`dispatch.rs`). A
//! `Driver` is an ordinary value: tests make and drop their own; the C ABI keeps one per
//! process.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::backend::{Backend, BackendKind, Direction};
use crate::config::Config;
use crate::dispatch::{Deferred, Dispatcher, InFlight};
use crate::error::{HipError, OpError, Result};
use crate::file::FileHandle;
use crate::gpu::{GpuRuntime, MemoryType};
use crate::params::{Setting, StringParam};
use crate::stats::{Counter, Stats};
use crate::sync::{lock, read, write};

mod batch;
mod params;
mod query;
mod stream;
mod vector;

pub use vector::MAX_VECTORS;

pub use crate::platform::{BufferInfo, HandleId, Platform};

type EnvLookup = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// hipFile's driver over a platform `P`.
pub struct Driver<P: Platform> {
    platform: P,
    /// The platform's runtime, taken once.
    gpu: Arc<dyn GpuRuntime>,
    env: EnvLookup,
    state: RwLock<State<P::Backend>>,
    next_handle: AtomicU64,
    handle_salt: u64,
    batches: crate::batch::Batches,
    streams: crate::stream::Streams,
    /// Parameters set while closed, applied at the next open (semantics §13).
    staged: std::sync::Mutex<Vec<Setting>>,
    /// What the driver did (semantics §14); kept across opens.
    stats: Arc<Stats>,
    /// Where the logging parameters take effect (none: they are kept and read back only).
    log: Option<Box<dyn crate::log::LogParameters>>,
}

struct State<B> {
    use_count: i64,
    open: Option<Open<B>>,
}

/// What exists while the use count is above zero.
struct Open<B> {
    /// Declared (so dropped) before the backends: a file may hold a backend's registration of
    /// it, which must end before the backend closes.
    files: HashMap<HandleId, Arc<FileHandle>>,
    config: Config,
    dispatcher: Arc<Dispatcher<B>>,
    fds: HashMap<RawFd, HandleId>,
    buffers: HashMap<usize, BufferInfo>,
    /// The fork generation the backends were built in ([`crate::fork`]).
    generation: u64,
}

impl<B: Backend> Open<B> {
    /// Ends what exists while the driver is open (semantics §2): waits for
    /// I/O still using the backends, then drops registrations (closing their descriptors) and
    /// the backends (threads, rings, staging memory). In a forked child, the parent's backends
    /// are left alone: their threads are not in this process, and their rings are shared with
    /// it.
    fn retire(self) {
        let Open { files, dispatcher, fds, buffers, generation, config: _ } = self;
        drop((fds, buffers));
        if generation != crate::fork::generation() {
            drop(files);
            std::mem::forget(dispatcher);
            return;
        }
        let mut pause = std::time::Duration::from_micros(50);
        while Arc::strong_count(&dispatcher) > 1 {
            std::thread::sleep(pause);
            pause = (pause * 2).min(std::time::Duration::from_millis(5));
        }
        // What each backend did since the open, for a program that can't ask for it the way
        // `hipfile bench --profile` does (semantics §8).
        if crate::log::enabled(crate::log::Level::DEBUG) {
            for (name, counters) in dispatcher.counters() {
                let counters: Vec<String> = counters.iter().map(|(key, n)| format!("{key}={n}")).collect();
                tracing::debug!(target: "hipfile", "{name} since the open: {}", counters.join(" "));
            }
        }
        drop(files);
        drop(dispatcher);
    }
}

/// The driver's lock, held across a `fork` (see [`Driver::hold_for_fork`]).
pub struct ForkHold<'d, B> {
    _held: RwLockWriteGuard<'d, State<B>>,
    _sections: RwLockWriteGuard<'static, ()>,
}

impl<P: Platform> Driver<P> {
    /// A closed driver that reads the process environment when it opens.
    pub fn new(platform: P) -> Self {
        Self::with_env(platform, |name| std::env::var(name).ok())
    }

    /// A closed driver that reads its `HIPFILE_*` settings through `env` when it opens.
    pub fn with_env(platform: P, env: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Self {
        // High bits that differ between drivers, so small integers and another driver's
        // handles are never valid keys here.
        let salt = std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u8);
        Driver {
            gpu: platform.gpu(),
            platform,
            env: Box::new(env),
            state: RwLock::new(State { use_count: 0, open: None }),
            next_handle: AtomicU64::new(1),
            handle_salt: (salt | 1 << 63) & !0xffff_ffff,
            batches: crate::batch::Batches::new((salt.rotate_left(17) | 1 << 63) & !0xffff_ffff),
            streams: crate::stream::Streams::new(),
            staged: std::sync::Mutex::new(Vec::new()),
            stats: Stats::private(),
            log: None,
        }
    }

    /// The same driver applying its logging parameters through `log` at each open (the C
    /// library's driver: the process's diagnostics are its to steer).
    pub fn with_log_parameters(mut self, log: impl crate::log::LogParameters + 'static) -> Self {
        self.log = Some(Box::new(log));
        self
    }

    /// The same driver counting into `stats` ([`Stats::published_by`] for statistics other
    /// processes can read).
    pub fn with_stats(mut self, stats: Arc<Stats>) -> Self {
        self.stats = stats;
        self
    }

    /// The driver's statistics (semantics §14).
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    /// The platform the driver runs on.
    pub fn platform(&self) -> &P {
        &self.platform
    }

    /// The platform's GPU runtime.
    pub fn gpu(&self) -> &Arc<dyn GpuRuntime> {
        &self.gpu
    }

    pub(crate) fn batches(&self) -> &crate::batch::Batches {
        &self.batches
    }

    pub(crate) fn streams(&self) -> &crate::stream::Streams {
        &self.streams
    }

    fn read_state(&self) -> RwLockReadGuard<'_, State<P::Backend>> {
        // A panic while holding the lock cannot leave the maps half-updated: every update is
        // a single insert or remove. So a poisoned lock is still consistent.
        read(&self.state)
    }

    fn write_state(&self) -> RwLockWriteGuard<'_, State<P::Backend>> {
        write(&self.state)
    }

    /// `hipFileDriverOpen`: increments the use count; the first open reads the configuration
    /// and builds the backends (an invalid configuration fails and leaves the count at 0).
    pub fn open(&self) -> Result<()> {
        let mut state = self.write_state();
        self.start(&mut state)?;
        state.use_count += 1;
        Ok(())
    }

    /// Opens a closed driver with a count of 1, as registrations and stream-ordered calls do
    /// (semantics §2, §12); leaves an open one alone.
    pub fn open_implicitly(&self) -> Result<()> {
        if self.read_state().use_count > 0 {
            return Ok(());
        }
        self.ensure_open(&mut self.write_state()).map(drop)
    }

    /// Opens with a count of 1 if the driver is closed; otherwise leaves the count alone
    /// (the implicit open of the first registration).
    fn ensure_open<'s>(&self, state: &'s mut State<P::Backend>) -> Result<&'s mut Open<P::Backend>> {
        self.start(state)?;
        if state.use_count == 0 {
            state.use_count = 1;
        }
        Ok(state.open.as_mut().expect("started above"))
    }

    /// Reads the configuration and builds the backends, unless already done.
    fn start(&self, state: &mut State<P::Backend>) -> Result<()> {
        if state.open.is_none() {
            let generation = crate::fork::generation();
            let mut config = Config::from_lookup(&self.env)?;
            let mut staged = lock(&self.staged);
            staged.iter().for_each(|s| config.apply(s));
            // The logging parameters set for this open take effect now, so that what the open
            // itself reports (a p2p path unavailable) goes where they say (semantics §13).
            let logging = |p: StringParam| {
                let set = staged.iter().any(|s| matches!(s, Setting::String(q, _) if *q == p));
                Some(config.string_parameter(p)).filter(|v| set && !v.is_empty())
            };
            let (level, file, dir) = (
                logging(StringParam::LoggingLevel),
                logging(StringParam::EnvLogfilePath),
                logging(StringParam::LogDir),
            );
            if let Some(log) = self.log.as_ref().filter(|_| level.is_some() || file.is_some() || dir.is_some()) {
                log.apply(level, file, dir);
            }
            self.stats.set_level(config.stats_level as u8);
            let dispatcher = match self.build_backends(&config) {
                Ok(backends) => Arc::new(Dispatcher::new(
                    backends,
                    Arc::clone(&self.stats),
                    config.cache_policy(),
                    config.bounce.durable_writes,
                )),
                Err(e) => {
                    self.restore_logging(); // the open failed: nothing of it stays
                    return Err(e);
                }
            };
            state.open = Some(Open {
                config,
                dispatcher,
                files: HashMap::new(),
                fds: HashMap::new(),
                buffers: HashMap::new(),
                generation,
            });
            staged.clear(); // applied: the open's values now, the defaults again after close
        }
        Ok(())
    }

    /// The configuration in use while the driver is open; while it is closed, the one the next
    /// open would use (the environment's, then the staged parameters).
    pub(crate) fn current_config(&self) -> Config {
        if let Some(open) = self.read_state().open.as_ref() {
            return open.config.clone();
        }
        let mut config = Config::from_lookup(&self.env).unwrap_or_default();
        lock(&self.staged).iter().for_each(|s| config.apply(s));
        config
    }

    /// Stages a parameter for the next open: `hipFileDriverAlreadyOpen` while open, and
    /// `hipFileInvalidValue` for a value out of range (semantics §13).
    pub(crate) fn stage(&self, setting: Setting) -> Result<()> {
        let state = self.read_state(); // an open cannot start meanwhile
        if state.open.is_some() {
            return Err(OpError::DriverAlreadyOpen.into());
        }
        Config::check(&setting)?;
        let mut staged = lock(&self.staged);
        staged.retain(|s| !s.same_parameter(&setting));
        staged.push(setting);
        Ok(())
    }

    /// The platform's backends under `config`, less the kinds the compat settings switch off.
    fn build_backends(&self, config: &Config) -> Result<Vec<P::Backend>> {
        Ok(self
            .platform
            .backends(config)?
            .into_iter()
            .filter(|b| match b.kind() {
                BackendKind::P2p => config.p2p_enabled(),
                BackendKind::Bounce => config.bounce_enabled(),
            })
            .collect())
    }

    /// In a forked child (semantics §8): backends of its own (fresh threads,
    /// rings and staging), keeping the registrations. The parent's backends are forgotten,
    /// never dropped: their threads do not exist here and their rings are shared with the
    /// parent.
    fn renew_after_fork(&self) -> Result<()> {
        let mut state = self.write_state();
        let Some(open) = state.open.as_mut() else { return Ok(()) };
        let generation = crate::fork::generation();
        if open.generation == generation {
            return Ok(()); // another thread renewed them
        }
        let backends = self.build_backends(&open.config)?;
        let dispatcher = Arc::new(Dispatcher::new(
            backends,
            Arc::clone(&self.stats),
            open.config.cache_policy(),
            open.config.bounce.durable_writes,
        ));
        std::mem::forget(std::mem::replace(&mut open.dispatcher, dispatcher));
        open.generation = generation;
        Ok(())
    }

    /// Holds the driver's lock until the result is dropped: taken just before `fork` (a
    /// `pthread_atfork` prepare handler), so that no other thread holds it, half-way through
    /// an update, when the child is made with one thread.
    pub fn hold_for_fork(&self) -> ForkHold<'_, P::Backend> {
        let held = self.write_state();
        ForkHold { _held: held, _sections: crate::fork::exclude_sections() }
    }

    /// `hipFileDriverClose`: decrements the use count, or fails with
    /// `hipFileDriverNotInitialized` at zero. Reaching zero waits for I/O in flight in other
    /// threads, then drops every registration (closing the descriptors registration opened)
    /// and the backends (their threads, rings and staging memory).
    pub fn close(&self) -> Result<()> {
        let mut state = self.write_state();
        if state.use_count == 0 {
            return Err(OpError::DriverNotInitialized.into());
        }
        state.use_count -= 1;
        if state.use_count == 0
            && let Some(open) = state.open.take()
        {
            for b in open.buffers.values() {
                self.stats.registered_bytes(b.device, -(b.len as i64)); // dropped unregistered
            }
            drop(state); // I/O in flight may need it to finish
            // Batches end with the driver, as upstream's and cuFile's do (semantics §2).
            self.batches.forget_all();
            open.retire();
            // Nothing of the library runs once the last close returns (semantics §2): the idle
            // batch and stream threads end (the next use starts them again), and so does the
            // statistics server; the counters stay, behind one descriptor (§14).
            self.batches.stop_threads();
            self.streams.stop_threads();
            self.stats.unpublish();
            self.restore_logging(); // the logging parameters ended with the open
        }
        Ok(())
    }

    fn restore_logging(&self) {
        if let Some(log) = &self.log {
            log.restore();
        }
    }

    /// `hipFileHandleRegister` for an `OpaqueFD` descriptor the caller holds open; opens the
    /// driver if closed. The handle refers to the file, not the descriptor (semantics §3): the
    /// caller may close it afterwards.
    ///
    /// Errors: `hipFileHandleAlreadyRegistered` for a descriptor already registered, and
    /// those of [`FileHandle::open`].
    ///
    /// Safe code names a descriptor it has (`&File`, `BorrowedFd`), not a number:
    /// ```compile_fail,E0277
    /// # fn f(d: &hipfile_core::Driver<hipfile_backend_mock::MockPlatform>) {
    /// d.handle_register(3); // a raw descriptor: handle_register_raw, unsafe
    /// # }
    /// ```
    pub fn handle_register(&self, fd: impl AsFd) -> Result<HandleId> {
        // SAFETY: a borrowed descriptor is open and the caller's to use for this call.
        unsafe { self.handle_register_raw(fd.as_fd().as_raw_fd()) }
    }

    /// [`handle_register`](Self::handle_register) of a descriptor number, as the C ABI and
    /// Python name them.
    ///
    /// # Safety
    /// `fd` is a descriptor the caller may use (open, and not another component's to manage),
    /// or a number that is not open at all (`EBADF`) or negative (`hipFileInvalidValue`): the
    /// library reads its flags and file and opens the file again through it.
    pub unsafe fn handle_register_raw(&self, fd: RawFd) -> Result<HandleId> {
        let result = self.handle_register_counted(fd);
        self.count(&result, Counter::HandleRegisterOk, Counter::HandleRegisterErr);
        result
    }

    fn handle_register_counted(&self, fd: RawFd) -> Result<HandleId> {
        let mut state = self.write_state();
        let open = self.ensure_open(&mut state)?;
        if open.fds.contains_key(&fd) {
            return Err(OpError::HandleAlreadyRegistered.into());
        }
        let file = FileHandle::open(fd)?;
        let id = HandleId(self.handle_salt | (self.next_handle.fetch_add(1, Ordering::Relaxed) & 0xffff_ffff));
        open.fds.insert(fd, id);
        open.files.insert(id, Arc::new(file));
        Ok(id)
    }

    /// `hipFileHandleDeregister`: forgets the handle and closes what registration opened
    /// (once I/O still running on it has finished). `hipFileHandleNotRegistered` if unknown.
    pub fn handle_deregister(&self, handle: HandleId) -> Result<()> {
        let result = (|| {
            let mut state = self.write_state();
            let open = state.open.as_mut().ok_or(OpError::HandleNotRegistered)?;
            let file = open.files.remove(&handle).ok_or(OpError::HandleNotRegistered)?;
            open.fds.remove(&file.client_fd());
            Ok(())
        })();
        self.count(&result, Counter::HandleDeregisterOk, Counter::HandleDeregisterErr);
        result
    }

    /// Counts a call's success or failure.
    pub(crate) fn count<T>(&self, result: &Result<T>, ok: Counter, err: Counter) {
        self.stats.add(if result.is_ok() { ok } else { err }, 1);
    }

    /// `hipFileBufRegister`: records device memory `[base, base + len)`; opens the driver if
    /// closed (even when the arguments are then refused, as upstream does).
    ///
    /// Errors: `hipFileInvalidValue` (null, zero length, or an address the runtime does not
    /// find), `hipFileHipMemoryTypeInvalid` (not device memory), `hipFileHipPointerRangeError`
    /// (past the allocation), `hipFileMemoryAlreadyRegistered`, `Error::Hip` for other
    /// runtime failures.
    pub fn buf_register(&self, base: usize, len: usize, flags: i32) -> Result<()> {
        let result = self.buf_register_counted(base, len, flags, true);
        self.count(&result, Counter::BufRegisterOk, Counter::BufRegisterErr);
        result
    }

    /// [`buf_register`](Self::buf_register) for device memory only: host memory is
    /// `hipFileHipMemoryTypeInvalid` whatever the configuration allows, so that I/O into the
    /// registration never reaches memory Rust code owns ([`crate::RegisteredBuffer`]).
    pub fn buf_register_device(&self, base: usize, len: usize, flags: i32) -> Result<()> {
        let result = self.buf_register_counted(base, len, flags, false);
        self.count(&result, Counter::BufRegisterOk, Counter::BufRegisterErr);
        result
    }

    fn buf_register_counted(&self, base: usize, len: usize, flags: i32, host_allowed: bool) -> Result<()> {
        let mut state = self.write_state();
        let open = self.ensure_open(&mut state)?;
        if base == 0 || len == 0 {
            return Err(OpError::InvalidValue.into());
        }
        if open.buffers.contains_key(&base) {
            return Err(OpError::MemoryAlreadyRegistered.into());
        }
        let info = match self.gpu.pointer_info(base) {
            Ok(info) => info,
            Err(HipError::NOT_FOUND) => return Err(OpError::InvalidValue.into()),
            Err(e) => return Err(e.into()),
        };
        let host = match info.memory_type {
            MemoryType::Device if info.bytes_after(base) < len => return Err(OpError::HipPointerRangeError.into()),
            MemoryType::Device => false,
            MemoryType::Host | MemoryType::Unregistered if open.config.allow_system_memory && host_allowed => true,
            _ => return Err(OpError::HipMemoryTypeInvalid.into()),
        };
        let device = if host { -1 } else { info.device };
        open.buffers.insert(base, BufferInfo { base, len, flags, device, host });
        self.stats.registered_bytes(device, len as i64);
        if !host {
            open.dispatcher.backends().iter().for_each(|b| b.buffer_registered(base, len, device));
        }
        Ok(())
    }

    /// `hipFileBufDeregister`: `hipFileDriverClosing` while the driver is closed (as cuFile),
    /// `hipFileMemoryNotRegistered` for an address not registered as a base.
    pub fn buf_deregister(&self, base: usize) -> Result<()> {
        let result = (|| {
            let mut state = self.write_state();
            if state.use_count == 0 {
                return Err(OpError::DriverClosing.into());
            }
            let open = state.open.as_mut().ok_or(OpError::DriverClosing)?;
            let info = open.buffers.remove(&base).ok_or(OpError::MemoryNotRegistered)?;
            self.stats.registered_bytes(info.device, -(info.len as i64));
            open.dispatcher.backends().iter().for_each(|b| b.buffer_deregistered(base));
            Ok(())
        })();
        self.count(&result, Counter::BufDeregisterOk, Counter::BufDeregisterErr);
        result
    }

    /// The registration of exactly `base`, if any.
    pub fn buffer(&self, base: usize) -> Option<BufferInfo> {
        self.read_state().open.as_ref()?.buffers.get(&base).copied()
    }

    /// `hipFileRead` (`direction` read: up to `size` bytes at `file_offset` into memory at
    /// `buffer_base + buffer_offset`) and `hipFileWrite` (write: `size` bytes from there to the
    /// file at `file_offset`). Returns the bytes moved: at most `max_rw_count()` per call, and
    /// for a read fewer at end of file.
    ///
    /// # Safety
    /// If `buffer_base` is not device memory of the runtime (host memory, where the
    /// configuration allows it, semantics §4), `[buffer_base + buffer_offset, + size)` must be
    /// valid for the whole call: for writes when reading the file, for reads when writing it.
    /// Device memory is checked against the runtime's allocation (or the registration)
    /// instead. The typed, safe way is [`RegisteredFile::read`](crate::RegisteredFile::read)
    /// and its siblings. Safe code cannot call this one:
    /// ```compile_fail,E0133
    /// use hipfile_core::{Direction, Driver, HandleId, Platform};
    /// fn read_anywhere<P: Platform>(d: &Driver<P>, h: HandleId) {
    ///     let _ = d.transfer(Direction::Read, h, 0xdead_beef, 4096, 0, 0); // the caller vouches for it
    /// }
    /// ```
    pub unsafe fn transfer(
        &self,
        direction: Direction,
        handle: HandleId,
        buffer_base: usize,
        size: usize,
        file_offset: i64,
        buffer_offset: i64,
    ) -> Result<usize> {
        let _primary = crate::gpu::PrimaryContext::enter(&*self.gpu);
        self.deferred(direction, handle, buffer_base)?.plan(size, file_offset, buffer_offset)?.run()
    }

    /// The one I/O path up to moving the bytes, with [`Deferred::plan`]: checks, in upstream's
    /// order, driver open (`DriverNotInitialized`, which the C ABI reports as `-1`/`EINVAL`),
    /// handle, then (in `plan`) offsets and buffer bounds and memory type; the request it gives
    /// runs outside the lock, with the best-scoring backend
    /// ([`Planned::run`](crate::dispatch::Planned::run)). A batch checks all its entries this
    /// way before any runs. This part needs the driver: the file, the backends and the buffer,
    /// looked up now; the sizes and offsets come later (a stream-ordered operation reads them
    /// when its stream reaches it).
    pub(crate) fn deferred(
        &self,
        direction: Direction,
        handle: HandleId,
        buffer_base: usize,
    ) -> Result<Deferred<P::Backend>> {
        self.deferred_with(direction, handle, buffer_base, false)
    }

    /// [`deferred`](Self::deferred), taking host memory whatever the configuration says where
    /// `any_host` (cuFile's vector I/O, whose vectors may be host memory).
    pub(crate) fn deferred_with(
        &self,
        direction: Direction,
        handle: HandleId,
        buffer_base: usize,
        any_host: bool,
    ) -> Result<Deferred<P::Backend>> {
        let (flight, signal, system_memory, durable) = loop {
            let state = self.read_state();
            // `open` exists exactly while the use count is above zero.
            let open = state.open.as_ref().ok_or(OpError::DriverNotInitialized)?;
            if open.generation != crate::fork::generation() {
                drop(state);
                self.renew_after_fork()?;
                continue;
            }
            let file = open.files.get(&handle).ok_or(OpError::HandleNotRegistered)?;
            let registered = open.buffers.get(&buffer_base).copied();
            let flight = InFlight { file: Arc::clone(file), dispatcher: Arc::clone(&open.dispatcher), registered };
            let config = &open.config;
            break (flight, config.stream_signal, config.allow_system_memory || any_host, config.bounce.durable_writes);
        };
        let (buffer_len, device, kind) = match flight.registered {
            Some(b) => (b.len, b.device, if b.host { MemoryType::Host } else { MemoryType::Device }),
            None => self.unregistered_buffer(buffer_base, system_memory)?,
        };
        let host = (kind == MemoryType::Host).then_some(durable);
        let managed = kind == MemoryType::Managed;
        Ok(Deferred { flight, direction, buffer_base, buffer_len, device, signal, host, managed })
    }

    /// Length, device and kind (device, managed or host) of an unregistered buffer (or a
    /// pointer into a registered one): the rest of its device or managed allocation; host
    /// memory, where `system_memory` allows it, as far as the caller says (its bounds are not
    /// the runtime's to know).
    fn unregistered_buffer(&self, addr: usize, system_memory: bool) -> Result<(usize, i32, MemoryType)> {
        if addr == 0 {
            return Err(OpError::InvalidValue.into());
        }
        let info = self.gpu.pointer_info(addr)?;
        match info.memory_type {
            kind @ (MemoryType::Device | MemoryType::Managed) => Ok((info.bytes_after(addr), info.device, kind)),
            MemoryType::Host | MemoryType::Unregistered if system_memory => {
                Ok((usize::MAX - addr, -1, MemoryType::Host))
            }
            _ => Err(OpError::HipMemoryTypeInvalid.into()),
        }
    }
}
