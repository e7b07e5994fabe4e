//! Statistics read by another process (semantics §14): granted to the same user, refused to
//! another, read-only, never blocking the observed process, and a forked child's its own.
//! One test: a process publishes under one name.

use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::time::Duration;

use hipfile::Direction;
use hipfile::stats::{Counter, Path, Remote};

fn wait_child(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waits for a child this test forked.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "{status:#x}");
    libc::WEXITSTATUS(status)
}

/// Runs `body` in a forked child; its exit status (0 when it returned true).
fn in_child(body: impl FnOnce() -> bool) -> i32 {
    // SAFETY: the child runs `body` and leaves with _exit.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(false);
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(if ok { 0 } else { 1 }) };
    }
    wait_child(pid)
}

#[test]
fn another_process_reads_live_and_cannot_interfere() {
    let me = std::process::id();
    // Nothing published before a level above 0.
    let stats = hipfile::stats::published();
    assert_eq!(Remote::connect(me).err().map(|e| e.kind()), Some(ErrorKind::NotFound));
    stats.set_level(3);
    let t = stats.start().unwrap();
    stats.io(t, Direction::Read, Path::Bounce, 0, 4096, false, &Ok(4096));
    stats.add(Counter::HandleRegisterOk, 1);

    // Read as this user, live: a count made after connecting shows in the next snapshot.
    let remote = Remote::connect(me).unwrap();
    let snap = remote.snapshot().unwrap();
    assert_eq!((snap.pid, snap.level), (me, 3));
    assert_eq!(snap.totals(Direction::Read, None, None).bytes, 4096);
    assert_eq!(snap.get(Counter::HandleRegisterOk), 1);
    stats.io(t, Direction::Read, Path::Bounce, 0, 4096, false, &Ok(4096));
    assert_eq!(remote.snapshot().unwrap().totals(Direction::Read, None, Some(0)).ok, 2);
    assert!(!remote.wait_exit(Some(Duration::ZERO)));

    // What a reader gets is read-only: no writable mapping, no write, no resize, no seal.
    let fd = remote.as_raw_fd();
    // SAFETY: asks for a shared writable mapping of the descriptor; expected to fail.
    let p =
        unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    assert_eq!(p, libc::MAP_FAILED);
    // SAFETY: writes one byte from a live buffer; expected to fail.
    assert_eq!(unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) }, -1);
    // SAFETY: a plain call on a descriptor we hold; expected to fail.
    assert_eq!(unsafe { libc::ftruncate(fd, 0) }, -1);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, libc::F_SEAL_WRITE) }, -1);
    // Nor through a descriptor reopened read-write (`/proc/self/fd/N`, which a reader of the
    // same user may open): the file is sealed against every write but the library's own mapping.
    let before = remote.snapshot().unwrap();
    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).unwrap();
    // SAFETY: a valid C string; the descriptor (if any) is closed below.
    let rw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR) };
    if rw >= 0 {
        let junk = [0xffu8; 4096];
        for at in [0, 4096, 8192] {
            // SAFETY: writes from a live buffer; expected to fail.
            let n = unsafe { libc::pwrite(rw, junk.as_ptr().cast(), junk.len(), at) };
            assert_eq!(n, -1, "a reader wrote the counters at {at}");
        }
        // SAFETY: asks for a writable shared mapping; expected to fail.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, rw, 0)
        };
        assert_eq!(p, libc::MAP_FAILED);
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        // SAFETY: a plain call on a descriptor we hold; expected to fail.
        assert_eq!(unsafe { libc::fallocate(rw, punch, 0, 1 << 20) }, -1, "a reader punched a hole");
        // SAFETY: closes the descriptor opened above.
        unsafe { libc::close(rw) };
    }
    let after = remote.snapshot().unwrap();
    // The counters themselves (times are converted from clock ticks at a rate measured anew at
    // each snapshot, so their microseconds may differ by one).
    let counted = |s: &hipfile_core::stats::Snapshot| {
        let t = s.totals(Direction::Read, None, None);
        (t.ok, t.err, t.bytes, t.unaligned)
    };
    assert_eq!(counted(&after), counted(&before));
    assert_eq!((after.pid, after.level), (me, 3));
    assert_eq!(stats.snapshot().totals(Direction::Read, None, None).ok, 2);
    // A read-only mapping works.
    // SAFETY: a read-only shared mapping of a file of at least a page, unmapped below.
    let p = unsafe { libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ, libc::MAP_SHARED, fd, 0) };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, 4096) };

    // Readers that connect and say nothing, or send junk, hold nothing up.
    let silent: Vec<_> = (0..40).map(|_| socket_to(me)).collect();
    for _ in 0..40 {
        let s = socket_to(me);
        // SAFETY: writes from a live buffer to a socket we own (it may fail: the server closes).
        unsafe { libc::send(s.as_raw_fd(), b"junk".as_ptr().cast(), 4, libc::MSG_NOSIGNAL) };
    }
    drop(silent);
    assert_eq!(Remote::connect(me).unwrap().snapshot().unwrap().totals(Direction::Read, None, None).ok, 2);

    // Another user is refused (root can switch users; otherwise there is no other user to be).
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let status = in_child(|| {
            // SAFETY: drops this child's group to `nogroup`.
            let group = unsafe { libc::setresgid(65534, 65534, 65534) };
            // SAFETY: drops this child's user to `nobody`.
            let user = unsafe { libc::setresuid(65534, 65534, 65534) };
            if group != 0 || user != 0 {
                return false;
            }
            Remote::connect(me).err().is_some_and(|e| e.kind() == ErrorKind::PermissionDenied)
        });
        assert_eq!(status, 0, "another user was not refused");
    } else {
        eprintln!("not root: the other-user case needs to switch users, skipped");
    }

    // A forked child counts into statistics of its own, published under its own pid.
    let status = in_child(|| {
        let t = stats.start().unwrap();
        for _ in 0..5 {
            stats.io(t, Direction::Write, Path::P2p, 0, 8192, false, &Ok(8192));
        }
        let own = stats.snapshot();
        let child = std::process::id();
        let remote = Remote::connect(child);
        own.totals(Direction::Read, None, None).ok == 0
            && own.totals(Direction::Write, None, None).ok == 5
            && remote.is_ok_and(|r| {
                r.snapshot().is_ok_and(|s| s.pid == child && s.totals(Direction::Write, None, None).ok == 5)
            })
    });
    assert_eq!(status, 0, "the forked child's statistics");
    let snap = stats.snapshot();
    assert_eq!((snap.totals(Direction::Read, None, None).ok, snap.totals(Direction::Write, None, None).ok), (2, 0));

    // A process that is gone: the reader notices.
    // SAFETY: the child exits at once.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: ends the child.
        unsafe { libc::_exit(0) };
    }
    wait_child(pid);
    assert_eq!(Remote::connect(pid as u32).err().map(|e| e.kind()), Some(ErrorKind::NotFound));
    // Unpublished (the driver's last close): no server thread, no socket; counting goes on, and
    // the next level above 0 publishes again.
    stats.unpublish();
    assert_eq!(Remote::connect(me).err().map(|e| e.kind()), Some(ErrorKind::NotFound), "still listening");
    assert!(!threads().contains(&"hipfile-stats".to_owned()), "{:?}", threads());
    stats.io(t, Direction::Read, Path::Bounce, 0, 4096, false, &Ok(4096));
    assert_eq!(stats.snapshot().totals(Direction::Read, None, None).ok, 3);
    stats.set_level(1);
    assert_eq!(Remote::connect(me).unwrap().snapshot().unwrap().totals(Direction::Read, None, None).ok, 3);
    drop(remote);
    drop(stats);
    assert_eq!(Remote::connect(me).err().map(|e| e.kind()), Some(ErrorKind::NotFound), "stopped with the stats");
}

/// The names of this process's threads.
fn threads() -> Vec<String> {
    let tasks = std::fs::read_dir("/proc/self/task").unwrap();
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|c| c.trim().to_owned())
        .collect()
}

/// A connection to `pid`'s statistics socket, by hand.
fn socket_to(pid: u32) -> std::os::unix::net::UnixStream {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(format!("hipfile-rs-stats.{pid}")).unwrap();
    std::os::unix::net::UnixStream::connect_addr(&addr).unwrap()
}
