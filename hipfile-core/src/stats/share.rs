//! Statistics another process can read while this one runs (semantics §14), the way upstream
//! shares them: the counters live in a memory file (`memfd_create`, sealed against shrinking
//! and growing), and a library thread listens on an abstract Unix socket named after the
//! process, handing each reader a descriptor of that file over `SCM_RIGHTS`.
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

use std::ffi::CString;
use std::io::{Error, ErrorKind, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::fs::FileExt;
use std::time::Duration;

use super::{HEADER_WORDS, MAGIC, REGION_WORDS, SLOT_WORDS, SLOTS, Snapshot, VERSION, header};

/// The payload sent with the descriptor, and the one sent instead to a reader refused.
const GRANTED: &[u8; 8] = b"HFRSOK01";
const REFUSED: &[u8; 8] = b"HFRSDENY";

fn cvt(ret: libc::c_int) -> Result<libc::c_int> {
    if ret < 0 { Err(Error::last_os_error()) } else { Ok(ret) }
}

fn owned(fd: libc::c_int) -> Result<OwnedFd> {
    // SAFETY: `fd` was just returned by the kernel and is owned by nobody else.
    cvt(fd).map(|fd| unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The abstract socket address of process `pid`'s statistics.
fn address(pid: u32) -> (libc::sockaddr_un, libc::socklen_t) {
    // SAFETY: sockaddr_un is plain data; all zeros is valid.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let name = format!("hipfile-rs-stats.{pid}");
    // sun_path[0] stays 0: the abstract namespace.
    for (dst, src) in addr.sun_path[1..].iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    let len = std::mem::offset_of!(libc::sockaddr_un, sun_path) + 1 + name.len();
    (addr, len as libc::socklen_t)
}

/// The publishing side: the memory file (read-only), and the server while it runs.
pub(super) struct Shared {
    /// First, so it stops (its thread uses `readonly`) before the descriptor closes.
    server: Option<Server>,
    readonly: std::fs::File,
}

/// The memory file of a [`Shared`] before it is sealed: the one writable descriptor, which
/// the library maps ([`Unsealed::seal`] then drops it).
pub(super) struct Unsealed {
    memfd: OwnedFd,
    readonly: std::fs::File,
}

impl Unsealed {
    /// A memory file of `len` bytes, sealed against resizing.
    pub(super) fn create(len: usize) -> Result<Unsealed> {
        // SAFETY: a constant C string; the flags are valid.
        let fd = unsafe { libc::memfd_create(c"hipfile-stats".as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING) };
        let memfd = owned(fd)?;
        // SAFETY: plain calls on a descriptor we own.
        cvt(unsafe { libc::ftruncate(memfd.as_raw_fd(), len as libc::off_t) })?;
        // SAFETY: as above.
        cvt(unsafe { libc::fcntl(memfd.as_raw_fd(), libc::F_ADD_SEALS, libc::F_SEAL_SHRINK | libc::F_SEAL_GROW) })?;
        let path = CString::new(format!("/proc/self/fd/{}", memfd.as_raw_fd())).expect("no NUL");
        // SAFETY: a valid C string; a new descriptor of the same file, read-only.
        let readonly = owned(unsafe { libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?.into();
        Ok(Unsealed { memfd, readonly })
    }

    /// The writable descriptor, to map.
    pub(super) fn fd(&self) -> RawFd {
        self.memfd.as_raw_fd()
    }

    /// Seals the file against every write but through mappings made before (the library's own,
    /// made first), and against further seals; closes the writable descriptor. Fails on kernels
    /// without `F_SEAL_FUTURE_WRITE` (before 5.1): the counters are then not published.
    pub(super) fn seal(self) -> Result<Shared> {
        let seals = libc::F_SEAL_FUTURE_WRITE | libc::F_SEAL_SEAL;
        // SAFETY: a plain call on a descriptor we own.
        cvt(unsafe { libc::fcntl(self.memfd.as_raw_fd(), libc::F_ADD_SEALS, seals) })?;
        Ok(Shared { server: None, readonly: self.readonly })
    }
}

impl Shared {
    /// The counters, read from the file ([`snapshot`]).
    pub(super) fn snapshot(&self) -> Result<Snapshot> {
        snapshot(&self.readonly)
    }

    /// Starts the server, unless it runs. Failing (no socket, the name taken, no thread) only
    /// means other processes cannot read this one's statistics: it is logged at debug level.
    pub(super) fn serve(&mut self) {
        if self.server.is_some() {
            return;
        }
        match Server::start(self.readonly.as_raw_fd()) {
            Ok(server) => self.server = Some(server),
            Err(e) => tracing::debug!("statistics are not published to other processes: {e}"),
        }
    }

    /// Stops the server (the thread ends, the socket closes); the counters stay readable here.
    pub(super) fn stop(&mut self) {
        self.server = None;
    }

    /// In a forked child: the server thread was the parent's and does not exist here; close
    /// the descriptors without waiting for it.
    pub(super) fn forget_after_fork(mut self) {
        if let Some(mut server) = self.server.take() {
            std::mem::forget(server.thread.take());
        }
    }
}

/// The listening socket and the thread that answers it.
struct Server {
    stop: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
    _listener: OwnedFd,
}

impl Server {
    fn start(readonly: RawFd) -> Result<Server> {
        // SAFETY: plain socket creation.
        let listener = owned(unsafe {
            libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK, 0)
        })?;
        let (addr, len) = address(std::process::id());
        // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
        cvt(unsafe { libc::bind(listener.as_raw_fd(), (&raw const addr).cast(), len) })?;
        // SAFETY: a bound socket we own.
        cvt(unsafe { libc::listen(listener.as_raw_fd(), 16) })?;
        // SAFETY: plain eventfd creation.
        let stop = owned(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        let (l, s) = (listener.as_raw_fd(), stop.as_raw_fd());
        // The thread uses the descriptors until `Drop` has joined it; they close after.
        let thread = std::thread::Builder::new().name("hipfile-stats".into()).spawn(move || serve(l, s, readonly))?;
        Ok(Server { stop, thread: Some(thread), _listener: listener })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to our eventfd.
            unsafe { libc::write(self.stop.as_raw_fd(), (&raw const one).cast(), 8) };
            let _ = thread.join();
        }
    }
}

/// The server thread: hands `readonly` to each reader allowed, until `stop` is signalled.
fn serve(listener: RawFd, stop: RawFd, readonly: RawFd) {
    // SAFETY: no preconditions.
    let me = unsafe { libc::geteuid() };
    loop {
        let mut fds = [
            libc::pollfd { fd: listener, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: stop, events: libc::POLLIN, revents: 0 },
        ];
        // SAFETY: `fds` is a valid array of two pollfds.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if Error::last_os_error().kind() == ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents & libc::POLLIN == 0 {
            continue;
        }
        // SAFETY: accepts on our listening socket; no address wanted.
        let conn = unsafe {
            libc::accept4(
                listener,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            )
        };
        let Ok(conn) = owned(conn) else { continue };
        let allowed = peer(conn.as_raw_fd()).is_ok_and(|c| c.uid == me || c.uid == 0);
        let _ = if allowed {
            send(conn.as_raw_fd(), GRANTED, Some(readonly))
        } else {
            send(conn.as_raw_fd(), REFUSED, None)
        };
    }
}

/// The credentials of a socket's peer.
fn peer(sock: RawFd) -> Result<libc::ucred> {
    let mut cred = libc::ucred { pid: 0, uid: 0, gid: 0 };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: `cred` is a writable ucred of `len` bytes.
    cvt(unsafe { libc::getsockopt(sock, libc::SOL_SOCKET, libc::SO_PEERCRED, (&raw mut cred).cast(), &mut len) })?;
    Ok(cred)
}

/// Space for one descriptor's control message.
#[repr(C, align(8))]
struct Control([u8; 64]);

/// Sends `payload`, with `fd` attached, without waiting.
fn send(sock: RawFd, payload: &[u8; 8], fd: Option<RawFd>) -> Result<()> {
    let mut iov = libc::iovec { iov_base: payload.as_ptr() as *mut libc::c_void, iov_len: payload.len() };
    let mut control = Control([0; 64]);
    // SAFETY: msghdr is plain data; all zeros is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        // SAFETY: CMSG_SPACE is arithmetic.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as _;
        msg.msg_control = control.0.as_mut_ptr().cast();
        // SAFETY: `msg` describes `control`, large enough for one header and one descriptor.
        let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
        // SAFETY: CMSG_LEN is arithmetic.
        let len = unsafe { libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) };
        let header = libc::cmsghdr { cmsg_len: len as _, cmsg_level: libc::SOL_SOCKET, cmsg_type: libc::SCM_RIGHTS };
        // SAFETY: `cmsg` points into `control` (non-null: the buffer holds a header; aligned:
        // `Control` is aligned for it).
        unsafe { cmsg.write(header) };
        // SAFETY: the data of the header just written, inside `control`.
        let data = unsafe { libc::CMSG_DATA(cmsg) };
        // SAFETY: `control` has room for one descriptor after the header.
        unsafe { data.cast::<RawFd>().write_unaligned(fd) };
    }
    // SAFETY: `msg` points at live buffers for the call.
    let n = unsafe { libc::sendmsg(sock, &msg, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL) };
    if n < 0 { Err(Error::last_os_error()) } else { Ok(()) }
}

/// Receives a payload and the descriptor that came with it, if any.
fn receive(sock: RawFd) -> Result<([u8; 8], Option<OwnedFd>)> {
    let mut payload = [0u8; 8];
    let mut iov = libc::iovec { iov_base: payload.as_mut_ptr().cast(), iov_len: payload.len() };
    let mut control = Control([0; 64]);
    // SAFETY: msghdr is plain data; all zeros is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    // SAFETY: `msg` points at live buffers for the call.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(Error::last_os_error());
    }
    if n as usize != payload.len() {
        return Err(Error::new(ErrorKind::InvalidData, "the process answered with no statistics"));
    }
    // SAFETY: `msg` was filled by recvmsg.
    let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    if cmsg.is_null() {
        return Ok((payload, None));
    }
    // SAFETY: a control message recvmsg wrote into `control` (aligned: `Control` is).
    let header = unsafe { cmsg.read() };
    if header.cmsg_level != libc::SOL_SOCKET || header.cmsg_type != libc::SCM_RIGHTS {
        return Ok((payload, None));
    }
    // SAFETY: the data of that message, inside `control`.
    let data = unsafe { libc::CMSG_DATA(cmsg) };
    // SAFETY: an SCM_RIGHTS message carries at least one descriptor, now ours.
    let fd = unsafe { data.cast::<RawFd>().read_unaligned() };
    Ok((payload, Some(owned(fd)?)))
}

impl AsRawFd for Remote {
    /// The read-only descriptor of the observed process's counters.
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// The counters of the memory file `file`, read with `pread` (reading a shared mapping would
/// give the file memory for every page looked at; reading holes does not).
pub(super) fn snapshot(file: &std::fs::File) -> Result<Snapshot> {
    let mut words = vec![0u64; REGION_WORDS];
    let read = |words: &mut [u64], at: usize| -> Result<()> {
        // SAFETY: viewing initialised u64s as bytes is always valid.
        let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 8) };
        file.read_exact_at(bytes, (at * 8) as u64)
    };
    read(&mut words[..HEADER_WORDS], 0)?;
    let used = words[header::SLOTS_USED];
    for slot in (0..SLOTS).filter(|s| used & (1 << s) != 0) {
        let at = HEADER_WORDS + slot * SLOT_WORDS;
        read(&mut words[at..at + SLOT_WORDS], at)?;
    }
    Ok(Snapshot::read(&|i| words.get(i).copied().unwrap_or(0)))
}

/// Another process's statistics, read while it runs (what `hipfile stats` shows).
pub struct Remote {
    pid: u32,
    file: std::fs::File,
    pidfd: Option<OwnedFd>,
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
        // SAFETY: pidfd_open takes a pid and flags; the result is a new descriptor or -1.
        let pidfd = match owned(unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) } as libc::c_int) {
            Ok(fd) => Some(fd),
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return Err(Error::new(ErrorKind::NotFound, format!("no process {pid}")));
            }
            Err(_) => None, // an older kernel: the process's exit goes unnoticed
        };
        // SAFETY: plain socket creation.
        let sock = owned(unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) })?;
        let timeout = libc::timeval { tv_sec: 2, tv_usec: 0 };
        // SAFETY: a valid timeval of the size given.
        cvt(unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&raw const timeout).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        })?;
        let (addr, len) = address(pid);
        // SAFETY: `addr` is a valid sockaddr_un of `len` bytes.
        if unsafe { libc::connect(sock.as_raw_fd(), (&raw const addr).cast(), len) } < 0 {
            return Err(not_found());
        }
        // The name is free for anyone to bind: the listener must be the process asked for.
        if peer(sock.as_raw_fd())?.pid as u32 != pid {
            return Err(Error::new(ErrorKind::InvalidData, format!("another process answers for process {pid}")));
        }
        let (payload, fd) = receive(sock.as_raw_fd())?;
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
        if word(header::MAGIC) != MAGIC || word(header::VERSION) != VERSION || size < (REGION_WORDS * 8) as u64 {
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
            // SAFETY: signal 0 only checks that the process exists.
            return unsafe { libc::kill(self.pid as libc::pid_t, 0) } != 0;
        };
        let ms = timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32);
        let mut fd = libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut fd, 1, ms) > 0 }
    }
}
