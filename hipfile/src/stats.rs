//! Statistics (semantics §14): the counters (`hipfile-core` counts), and their publication to
//! other processes, the way upstream shares them: the counters live in a memory file
//! (`memfd_create`, sealed against shrinking and growing), and a library thread listens on an
//! abstract Unix socket named after the process, handing each reader a descriptor of that file
//! over `SCM_RIGHTS`. [`Remote`] is the reader (what `hipfile stats` shows).
//!
//! - Only a reader of the same user, or root, gets it (`SO_PEERCRED`); others get a refusal.
//! - What a reader gets is a read-only descriptor (the file reopened `O_RDONLY`), and the file
//!   is sealed with `F_SEAL_FUTURE_WRITE` once the library's own writable mapping exists: no
//!   descriptor of it, however reopened (`/proc/<pid>/fd/N` with `O_RDWR`), can write it, map
//!   it writable, punch holes in it, resize it or add seals.
//! - The server runs while the driver is open: the last close stops the thread and closes the
//!   socket; the counters stay (they add up across opens), behind one descriptor.
//! - The thread never waits on a reader: sockets are non-blocking, and a reader that connects
//!   and goes silent costs one accepted and closed connection.
//! - Nothing is left in the file system: abstract sockets and memory files vanish with the
//!   process.

use std::io::{Error, ErrorKind, IoSlice, IoSliceMut, Result};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// The counters at one moment: a driver's own ([`Driver::stats`](crate::Driver::stats)), or
/// another process's ([`Remote::snapshot`]).
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use hipfile::stats::Path;
/// use hipfile::{Direction, Driver, DriverGuard, SystemPlatform};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let path = std::env::temp_dir().join(format!("hipfile-doc-stats-{}", std::process::id()));
/// # std::fs::write(&path, vec![1u8; 4096])?;
/// let (platform, _) = SystemPlatform::discover_or_mock();
/// let guard = DriverGuard::open(Arc::new(Driver::new(platform)))?; // counts at level 1
/// let file = std::fs::File::open(&path)?;
/// let handle = guard.register_file(&file)?;
/// let buffer = guard.register_memory(&guard.device_alloc(4096)?)?;
/// handle.read(&buffer, 4096, 0, 0)?;
/// let snap = guard.driver().stats().snapshot();
/// let read = snap.totals(Direction::Read, None, None);
/// assert_eq!((read.ok, read.bytes), (1, 4096));
/// println!("p2p: {:?}", snap.totals(Direction::Read, Some(Path::P2p), None));
/// # std::fs::remove_file(path)?;
/// # Ok(()) }
/// ```
pub use hipfile_core::stats::Snapshot;
pub use hipfile_core::stats::{Counter, MAX_GPUS, Path, SIZE_CLASSES, Stats, Totals, size_class};
use hipfile_core::stats::{Published, Publisher};
use rustix::event::{EventfdFlags, PollFd, PollFlags};
use rustix::fs::{MemfdFlags, Mode, OFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage,
    SendFlags, SocketAddrUnix, SocketFlags, SocketType,
};

/// The payload sent with the descriptor, and the one sent instead to a reader refused.
const GRANTED: &[u8; 8] = b"HFRSOK01";
const REFUSED: &[u8; 8] = b"HFRSDENY";

/// Statistics another process of the same user can read while this one runs: a sealed memory
/// file, handed out over an abstract socket named after the process. Where memory files or
/// their seals are missing (kernels before 5.1), the counters stay private.
pub fn published() -> Arc<Stats> {
    Stats::published_by(Box::new(MemoryFile))
}

/// The abstract socket address of process `pid`'s statistics.
fn address(pid: u32) -> Result<SocketAddrUnix> {
    Ok(SocketAddrUnix::new_abstract_name(format!("hipfile-rs-stats.{pid}").as_bytes())?)
}

/// Makes the sealed memory files of [`published`].
struct MemoryFile;

impl Publisher for MemoryFile {
    fn create(&self, len: usize) -> Result<Box<dyn Published>> {
        let memfd = rustix::fs::memfd_create("hipfile-stats", MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
        rustix::fs::ftruncate(&memfd, len as u64)?;
        rustix::fs::fcntl_add_seals(&memfd, SealFlags::SHRINK | SealFlags::GROW)?;
        let path = format!("/proc/self/fd/{}", memfd.as_raw_fd());
        let readonly = rustix::fs::open(path.as_str(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?.into();
        let prot = ProtFlags::READ | ProtFlags::WRITE;
        // SAFETY: a fresh shared mapping of a file we just made, at an address the kernel picks.
        let words = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, prot, MapFlags::SHARED, &memfd, 0) }?;
        let shared = Shared { server: None, readonly, words: NonNull::new(words.cast()).expect("mmap succeeded"), len };
        // Every write but through mappings made before (ours, above) is refused from now on,
        // and so are further seals; the writable descriptor closes on return.
        rustix::fs::fcntl_add_seals(&memfd, SealFlags::FUTURE_WRITE | SealFlags::SEAL)?;
        Ok(Box::new(shared))
    }
}

/// A published region: the mapping, the memory file (read-only), and the server while it runs.
struct Shared {
    /// First, so it stops (its thread uses `readonly`) before the descriptor closes.
    server: Option<Server>,
    readonly: std::fs::File,
    words: NonNull<AtomicU64>,
    len: usize,
}

// SAFETY: the mapping is shared memory only accessed through atomics; the rest is descriptors.
unsafe impl Send for Shared {}

// SAFETY: `words` maps `len` bytes of a memory file made zeroed at that size, page-aligned,
// read-write, unmapped only on drop; sealed against resizing, so it stays backed.
unsafe impl Published for Shared {
    fn words(&self) -> NonNull<AtomicU64> {
        self.words
    }

    fn serve(&mut self) {
        if self.server.is_some() {
            return;
        }
        match Server::start(self.readonly.as_raw_fd()) {
            Ok(server) => self.server = Some(server),
            Err(e) => tracing::debug!("statistics are not published to other processes: {e}"),
        }
    }

    fn stop(&mut self) {
        self.server = None;
    }

    fn snapshot(&self) -> Option<Result<Snapshot>> {
        Some(snapshot(&self.readonly))
    }

    fn forget_after_fork(mut self: Box<Self>) {
        if let Some(mut server) = self.server.take() {
            std::mem::forget(server.thread.take());
        }
        self.len = 0; // the parent's mapping stays: another thread may still hold it
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.server = None; // first: it may be handing the memory out
        if self.len > 0 {
            // SAFETY: the mapping made in `create`; the statistics that counted into it are
            // being dropped.
            let _ = unsafe { rustix::mm::munmap(self.words.as_ptr().cast(), self.len) };
        }
    }
}

/// The listening socket and the thread that answers it. The thread borrows the descriptors
/// this owns: dropping it joins the thread first, and in a forked child (where the thread does
/// not exist) closes them all the same.
struct Server {
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
    _listener: OwnedFd,
}

impl Server {
    /// Starts answering readers with `readonly`, which must stay open while this runs.
    fn start(readonly: RawFd) -> Result<Server> {
        let flags = SocketFlags::CLOEXEC | SocketFlags::NONBLOCK;
        let listener = rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, flags, None)?;
        rustix::net::bind(&listener, &address(std::process::id())?)?;
        rustix::net::listen(&listener, 16)?;
        let stop = rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        let (l, s) = (listener.as_raw_fd(), stop.as_raw_fd());
        // The three descriptors stay open until the thread has been joined: `Drop` joins it
        // before closing `stop` and the listener, and `Shared` drops its server before its
        // read-only file.
        let thread = std::thread::Builder::new().name("hipfile-stats".into()).spawn(move || {
            // SAFETY: open for the thread's life (above).
            let listener = unsafe { BorrowedFd::borrow_raw(l) };
            // SAFETY: as above.
            let stop = unsafe { BorrowedFd::borrow_raw(s) };
            // SAFETY: as above.
            let readonly = unsafe { BorrowedFd::borrow_raw(readonly) };
            serve(listener, stop, readonly)
        })?;
        Ok(Server { stop, thread: Some(thread), _listener: listener })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let _ = rustix::io::write(&self.stop, &1u64.to_ne_bytes());
            let _ = thread.join();
        }
    }
}

/// The server thread: hands `readonly` to each reader allowed, until `stop` is signalled.
fn serve(listener: BorrowedFd<'_>, stop: BorrowedFd<'_>, readonly: BorrowedFd<'_>) {
    let me = rustix::process::geteuid();
    loop {
        let mut fds = [PollFd::new(&listener, PollFlags::IN), PollFd::new(&stop, PollFlags::IN)];
        match rustix::event::poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return,
        }
        if !fds[1].revents().is_empty() {
            return;
        }
        if !fds[0].revents().contains(PollFlags::IN) {
            continue;
        }
        let Ok(conn) = rustix::net::accept_with(listener, SocketFlags::CLOEXEC | SocketFlags::NONBLOCK) else {
            continue;
        };
        let allowed = rustix::net::sockopt::socket_peercred(&conn).is_ok_and(|c| c.uid == me || c.uid.is_root());
        let _ = if allowed { send(&conn, GRANTED, Some(readonly)) } else { send(&conn, REFUSED, None) };
    }
}

/// Sends `payload`, with `fd` attached, without waiting.
fn send(sock: &OwnedFd, payload: &[u8; 8], fd: Option<BorrowedFd<'_>>) -> Result<()> {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = fd.as_slice();
    if !fds.is_empty() {
        control.push(SendAncillaryMessage::ScmRights(fds));
    }
    let flags = SendFlags::DONTWAIT | SendFlags::NOSIGNAL;
    rustix::net::sendmsg(sock, &[IoSlice::new(payload)], &mut control, flags)?;
    Ok(())
}

/// Receives a payload and the descriptor that came with it, if any.
fn receive(sock: &OwnedFd) -> Result<([u8; 8], Option<OwnedFd>)> {
    let mut payload = [0u8; 8];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let got = rustix::net::recvmsg(sock, &mut [IoSliceMut::new(&mut payload)], &mut control, RecvFlags::CMSG_CLOEXEC)?;
    if got.bytes != payload.len() {
        return Err(Error::new(ErrorKind::InvalidData, "the process answered with no statistics"));
    }
    let mut received = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            // Only the first is ours to keep; any others close as they drop.
            received = received.or(fds.into_iter().next());
        }
    }
    Ok((payload, received))
}

/// The counters of the memory file `file`, read with `pread` (reading a shared mapping would
/// give the file memory for every page looked at; reading holes does not).
fn snapshot(file: &std::fs::File) -> Result<Snapshot> {
    Snapshot::read_region(|bytes, at| file.read_exact_at(bytes, at))
}

/// Another process's statistics, read while it runs (what `hipfile stats` shows).
pub struct Remote {
    pid: u32,
    file: std::fs::File,
    pidfd: Option<OwnedFd>,
}

impl AsRawFd for Remote {
    /// The read-only descriptor of the observed process's counters.
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl Remote {
    /// Connects to process `pid`'s statistics.
    ///
    /// Errors: `NotFound` when there is no such process or it publishes no statistics (not a
    /// hipfile-rs process, statistics off, or its driver never opened); `PermissionDenied`
    /// when it refuses this user; `InvalidData` when what it answered is not ours.
    pub fn connect(pid: u32) -> Result<Remote> {
        let not_found = || {
            Error::new(
                ErrorKind::NotFound,
                format!(
                    "process {pid} publishes no hipfile statistics (not a hipfile-rs process, statistics off, or \
                     its driver never opened)"
                ),
            )
        };
        let no_process = || Error::new(ErrorKind::NotFound, format!("no process {pid}"));
        let process = rustix::process::Pid::from_raw(pid as i32).ok_or_else(no_process)?;
        let pidfd = match rustix::process::pidfd_open(process, rustix::process::PidfdFlags::empty()) {
            Ok(fd) => Some(fd),
            Err(rustix::io::Errno::SRCH) => return Err(no_process()),
            Err(_) => None, // an older kernel: the process's exit goes unnoticed
        };
        let sock = rustix::net::socket_with(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
        rustix::net::sockopt::set_socket_timeout(
            &sock,
            rustix::net::sockopt::Timeout::Recv,
            Some(Duration::from_secs(2)),
        )?;
        if rustix::net::connect(&sock, &address(pid)?).is_err() {
            return Err(not_found());
        }
        // The name is free for anyone to bind: the listener must be the process asked for.
        if rustix::net::sockopt::socket_peercred(&sock)?.pid != process {
            return Err(Error::new(ErrorKind::InvalidData, format!("another process answers for process {pid}")));
        }
        let (payload, fd) = receive(&sock)?;
        let fd = match (&payload, fd) {
            (p, Some(fd)) if p == GRANTED => fd,
            (p, _) if p == REFUSED => {
                return Err(Error::new(
                    ErrorKind::PermissionDenied,
                    format!("process {pid} shows its statistics only to its own user and root"),
                ));
            }
            _ => return Err(Error::new(ErrorKind::InvalidData, "the process answered with no statistics")),
        };
        let remote = Remote { pid, file: std::fs::File::from(fd), pidfd };
        let mut head = [0u8; 16];
        remote.file.read_exact_at(&mut head, 0)?;
        let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        let size = remote.file.metadata()?.len();
        if !Snapshot::is_region([word(0), word(1)]) || size < hipfile_core::stats::REGION_BYTES as u64 {
            return Err(Error::new(ErrorKind::InvalidData, "statistics of another layout or version"));
        }
        Ok(remote)
    }

    /// The observed process.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The counters now (read, not mapped: nothing of the observed process changes).
    pub fn snapshot(&self) -> Result<Snapshot> {
        snapshot(&self.file)
    }

    /// Waits up to `timeout` (`None`: forever) for the process to exit; whether it has.
    pub fn wait_exit(&self, timeout: Option<Duration>) -> bool {
        let Some(pidfd) = &self.pidfd else {
            let pid = rustix::process::Pid::from_raw(self.pid as i32);
            return pid.is_none_or(|p| rustix::process::test_kill_process(p).is_err());
        };
        let forever = rustix::event::Timespec { tv_sec: i64::MAX, tv_nsec: 0 };
        let timeout = timeout.map(|t| rustix::event::Timespec::try_from(t).unwrap_or(forever));
        let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
        rustix::event::poll(&mut fds, timeout.as_ref()).is_ok_and(|n| n > 0)
    }
}
