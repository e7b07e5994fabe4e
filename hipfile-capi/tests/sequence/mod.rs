//! Random sequences of C API calls, decoded from bytes: the body of the `api_sequence` fuzz
//! target (`hipfile-capi/fuzz`) and of the bounded run in CI (`tests/api_sequences.rs`).
//!
//! Arguments are hostile where the C contract lets them be (garbage and stale handles, pointers
//! into, around and outside device memory, host pointers, extreme sizes and offsets, invalid
//! enums, descriptors that are closed, directories, pipes, `O_PATH`, write-only), and valid
//! where it does not (the out-pointers of registration are null or writable). After every
//! call: the result is one hipFile documents for it, the use count is the model's, a read from
//! the data file holds the file's bytes, and a write to the scratch file is in the file. Device
//! memory outside each call's range keeps its canary.
#![allow(dead_code, unreachable_pub)]

use std::ffi::{CString, c_int, c_uint, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use hipfile_capi::exports::*;
use hipfile_capi::*;

pub const BASE: i32 = 5000;
pub const MIB: usize = 1 << 20;
pub const DATA_LEN: usize = 300 * 1024 + 777;
pub const CANARY: u8 = 0xA5;

type Malloc = unsafe extern "C" fn(*mut *mut c_void, usize) -> c_int;
type Free = unsafe extern "C" fn(*mut c_void) -> c_int;
type Memcpy = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_int) -> c_int;

/// Calls made, and how many of them moved bytes (reads, writes) or registered something: what
/// a run reports, so that a corpus that only ever meets argument errors shows.
pub static CALLS: AtomicU64 = AtomicU64::new(0);
pub static READS: AtomicU64 = AtomicU64::new(0);
pub static WRITES: AtomicU64 = AtomicU64::new(0);
pub static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);

/// The mock HIP runtime's allocation and copy functions (the same instance libhipfile uses:
/// it finds the library's symbols in the process).
pub struct Hip {
    malloc: Malloc,
    free: Free,
    memcpy: Memcpy,
}

impl Hip {
    /// Loads `libhipfile_mockhip.so` into the process, globally, as a HIP program has it.
    pub fn load(mock: &Path) -> Hip {
        let path = CString::new(mock.to_str().unwrap()).unwrap();
        // SAFETY: loading the mock runtime, as a program linked against it would.
        let lib = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        assert!(!lib.is_null(), "cannot load {}", mock.display());
        let sym = |name: &std::ffi::CStr| {
            // SAFETY: a symbol lookup in the library loaded above.
            let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
            assert!(!p.is_null(), "{name:?} missing");
            p
        };
        let (malloc, free, memcpy) = (sym(c"hipMalloc"), sym(c"hipFree"), sym(c"hipMemcpy"));
        Hip {
            // SAFETY: the mock's hipMalloc has this C signature (HIP's).
            malloc: unsafe { std::mem::transmute::<*mut c_void, Malloc>(malloc) },
            // SAFETY: as above, hipFree.
            free: unsafe { std::mem::transmute::<*mut c_void, Free>(free) },
            // SAFETY: as above, hipMemcpy.
            memcpy: unsafe { std::mem::transmute::<*mut c_void, Memcpy>(memcpy) },
        }
    }

    pub fn alloc(&self, len: usize) -> usize {
        let mut p = std::ptr::null_mut();
        // SAFETY: `p` is writable.
        assert_eq!(unsafe { (self.malloc)(&mut p, len) }, 0);
        p as usize
    }

    pub fn put(&self, dev: usize, bytes: &[u8]) {
        // SAFETY: `dev` is device memory of at least `bytes.len()` bytes (the caller's).
        assert_eq!(unsafe { (self.memcpy)(dev as *mut c_void, bytes.as_ptr().cast(), bytes.len(), 1) }, 0);
    }

    pub fn get(&self, dev: usize, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        // SAFETY: as in `put`.
        assert_eq!(unsafe { (self.memcpy)(out.as_mut_ptr().cast(), dev as *const c_void, len, 2) }, 0);
        out
    }

    /// Frees what [`Hip::alloc`] gave.
    pub fn free(&self, dev: usize) {
        // SAFETY: `dev` came from `alloc` and is freed once (the caller's).
        assert_eq!(unsafe { (self.free)(dev as *mut c_void) }, 0);
    }
}

impl Hip {
    /// The mock runtime of a fuzz target, loaded once: `HIPFILE_MOCKHIP`, else the workspace's
    /// debug build (found from the fuzz crate's directory, `hipfile-capi/fuzz`).
    pub fn for_fuzzing() -> &'static Hip {
        static HIP: OnceLock<Hip> = OnceLock::new();
        HIP.get_or_init(|| {
            let default = concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/libhipfile_mockhip.so");
            let path = std::env::var("HIPFILE_MOCKHIP").unwrap_or_else(|_| default.to_owned());
            Hip::load(Path::new(&path))
        })
    }
}

/// The bounded CI run of a fuzz target: `run` on every input of its kept corpus
/// (`fuzz/corpus/<target>`, in name order), then on `HIPFILE_FUZZ_RUNS` (default `runs`)
/// pseudo-random inputs of up to `max_len` bytes, from `seed`. Returns how many inputs ran.
pub fn replay(target: &str, runs: u64, max_len: u64, seed: u64, mut run: impl FnMut(&[u8])) -> u64 {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(target);
    let mut paths: Vec<_> = std::fs::read_dir(&corpus).into_iter().flatten().flatten().map(|e| e.path()).collect();
    paths.sort();
    for path in &paths {
        run(&std::fs::read(path).unwrap());
    }
    let runs = std::env::var("HIPFILE_FUZZ_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(runs);
    let mut state = seed;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..runs {
        let len = next() % max_len;
        let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        run(&data);
    }
    paths.len() as u64 + runs
}

/// Files every sequence uses, made once per process.
pub struct Files {
    pub data: PathBuf,
    pub data_bytes: Vec<u8>,
    pub scratch: PathBuf,
    pub dir: PathBuf,
}

pub fn files() -> &'static Files {
    static FILES: OnceLock<Files> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("hipfile-sequence-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let data_bytes: Vec<u8> =
            (0..DATA_LEN).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[2]).collect();
        let data = dir.join("data");
        std::fs::write(&data, &data_bytes).unwrap();
        let scratch = dir.join("scratch");
        std::fs::write(&scratch, vec![0u8; DATA_LEN]).unwrap();
        Files { data, data_bytes, scratch, dir }
    })
}

/// The decoder: each read takes bytes from the front; an exhausted input reads zeros.
pub struct Input<'a>(pub &'a [u8]);

impl Input<'_> {
    pub fn u8(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| acc << 8 | u64::from(self.u8()))
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.u8() as usize % from.len()]
    }
}

/// A device allocation and its registration in the model.
struct Alloc {
    base: usize,
    len: usize,
    registered: bool,
}

/// An open descriptor and what registering it should give.
struct Fd {
    fd: OwnedFd,
    /// The file behind it, when it is one of ours: 0 data (read-only), 1 scratch (read-write).
    file: Option<usize>,
    handle: Option<hipFileHandle_t>,
}

struct Run<'h> {
    hip: &'h Hip,
    use_count: i64,
    allocs: Vec<Alloc>,
    fds: Vec<Fd>,
    stale: Vec<hipFileHandle_t>,
    scratch: Vec<u8>,
}

pub fn open(path: &Path, flags: c_int) -> OwnedFd {
    let c = CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; the descriptor is owned below.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC) };
    assert!(fd >= 0, "open {}: {}", path.display(), std::io::Error::last_os_error());
    // SAFETY: just opened, owned by nobody else.
    unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) }
}

/// Runs the sequence `data` describes against the process's driver, then releases everything
/// it registered and closes the driver to zero.
pub fn run(hip: &Hip, data: &[u8]) {
    let f = files();
    let (r, w) = std::io::pipe().unwrap();
    let fds = vec![
        Fd { fd: open(&f.data, libc::O_RDONLY), file: Some(0), handle: None },
        Fd { fd: open(&f.scratch, libc::O_RDWR), file: Some(1), handle: None },
        Fd { fd: open(&f.scratch, libc::O_RDWR | libc::O_APPEND), file: Some(1), handle: None },
        Fd { fd: open(&f.scratch, libc::O_WRONLY), file: Some(1), handle: None },
        Fd { fd: open(&f.dir, libc::O_RDONLY | libc::O_DIRECTORY), file: None, handle: None },
        Fd { fd: open(&f.data, libc::O_PATH), file: None, handle: None },
        Fd { fd: r.into(), file: None, handle: None },
        Fd { fd: w.into(), file: None, handle: None },
    ];
    let mut run = Run {
        hip,
        use_count: hipFileUseCount(),
        allocs: Vec::new(),
        fds,
        stale: Vec::new(),
        scratch: std::fs::read(&f.scratch).unwrap(),
    };
    assert_eq!(run.use_count, 0, "a sequence starts with the driver closed");
    for len in [4096, 64 * 1024, 256 * 1024 + 4096] {
        let base = hip.alloc(len);
        hip.put(base, &vec![CANARY; len]);
        run.allocs.push(Alloc { base, len, registered: false });
    }
    let mut input = Input(data);
    for _ in 0..64 {
        if input.0.is_empty() {
            break;
        }
        run.step(&mut input);
        CALLS.fetch_add(1, Ordering::Relaxed);
        assert_eq!(hipFileUseCount(), run.use_count, "use count");
    }
    run.finish();
}

impl Run<'_> {
    fn handle(&mut self, input: &mut Input<'_>) -> hipFileHandle_t {
        let registered: Vec<hipFileHandle_t> = self.fds.iter().filter_map(|f| f.handle).collect();
        match input.u8() % 4 {
            0 | 1 if !registered.is_empty() => input.pick(&registered),
            2 if !self.stale.is_empty() => input.pick(&self.stale),
            _ => {
                let garbage = input.u64() as usize;
                input.pick(&[0, 1, usize::MAX, garbage, 0x1000]) as hipFileHandle_t
            }
        }
    }

    /// A pointer for a buffer argument: into, at the edges of, or outside device memory.
    fn pointer(&mut self, input: &mut Input<'_>) -> usize {
        let a = &self.allocs[input.u8() as usize % self.allocs.len()];
        let stack = 0u64;
        match input.u8() % 8 {
            0..=3 => a.base,
            4 => a.base + (input.u64() as usize % a.len),
            5 => a.base + a.len,
            6 => input.pick(&[0, 1, a.base.wrapping_sub(1), &stack as *const u64 as usize]),
            _ => input.u64() as usize,
        }
    }

    fn size(input: &mut Input<'_>) -> usize {
        let any = input.u64() as usize % (2 * MIB);
        input.pick(&[0, 1, 100, 4095, 4096, 65536, MIB, MIB + 4096, usize::MAX, i64::MAX as usize, any])
    }

    fn offset(input: &mut Input<'_>) -> i64 {
        let any = (input.u64() % (2 * MIB as u64)) as i64;
        input.pick(&[0, 1, 4096, -1, i64::MIN, i64::MAX, DATA_LEN as i64, any])
    }

    fn step(&mut self, input: &mut Input<'_>) {
        match input.u8() % 12 {
            0 => {
                assert_eq!(hipFileDriverOpen().err as i32, 0);
                self.use_count += 1;
            }
            1 => {
                let e = hipFileDriverClose().err as i32;
                if self.use_count == 0 {
                    assert_eq!(e, BASE + 1); // hipFileDriverNotInitialized
                } else {
                    assert_eq!(e, 0);
                    self.use_count -= 1;
                    if self.use_count == 0 {
                        self.closed();
                    }
                }
            }
            2 | 3 => self.register(input),
            4 => {
                let h = self.handle(input);
                hipFileHandleDeregister(h); // any value: handles are registry keys
                for f in self.fds.iter_mut().filter(|f| f.handle == Some(h)) {
                    f.handle = None;
                    self.stale.push(h);
                }
            }
            5 => self.buf_register(input),
            6 => {
                let p = self.pointer(input);
                let e = hipFileBufDeregister(p as *const c_void).err as i32;
                let registered = self.allocs.iter_mut().find(|a| a.base == p && a.registered);
                match (self.use_count, registered) {
                    (0, _) => assert_eq!(e, BASE + 6), // hipFileDriverClosing
                    (_, Some(a)) => {
                        assert_eq!(e, 0);
                        a.registered = false;
                    }
                    (_, None) => assert_eq!(e, BASE + 24), // hipFileMemoryNotRegistered
                }
            }
            7..=9 => self.io(input, false),
            10 => self.io(input, true),
            _ => {
                let code = input.u64() as c_int;
                let s = hipFileGetOpErrorString(code as hipFileOpError_t);
                // SAFETY: a static NUL-terminated string, whatever the code.
                assert!(!unsafe { std::ffi::CStr::from_ptr(s) }.to_bytes().is_empty());
                let (mut a, mut b, mut c): (c_uint, c_uint, c_uint) = (0, 0, 0);
                let out = |on: bool, p: &mut c_uint| if on { p as *mut c_uint } else { std::ptr::null_mut() };
                let bits = input.u8();
                // SAFETY: each pointer is null or writable.
                let e = unsafe {
                    hipFileGetVersion(
                        out(bits & 1 != 0, &mut a),
                        out(bits & 2 != 0, &mut b),
                        out(bits & 4 != 0, &mut c),
                    )
                };
                assert_eq!(e.err as i32, 0);
            }
        }
    }

    /// The driver closed to zero: every registration is gone.
    fn closed(&mut self) {
        for f in &mut self.fds {
            if let Some(h) = f.handle.take() {
                self.stale.push(h);
            }
        }
        self.allocs.iter_mut().for_each(|a| a.registered = false);
    }

    fn register(&mut self, input: &mut Input<'_>) {
        // Mostly the files (the first four), so that I/O gets handles to work with.
        let which = match input.u8() {
            b if b % 2 == 0 => b as usize / 2 % 4,
            b => b as usize / 2 % (self.fds.len() + 2),
        };
        let kind = input.pick(&[1, 1, 1, 1, 1, 1, 2, 3, 0, -1, 99]);
        let (null_fh, null_descr) = (input.u8().is_multiple_of(16), input.u8().is_multiple_of(16));
        let fd = match which {
            i if i < self.fds.len() => self.fds[i].fd.as_raw_fd(),
            i if i == self.fds.len() => -1,
            _ => 1_000_000, // not open
        };
        let mut descr: hipFileDescr_t = unsafe_zeroed();
        descr.r#type = kind;
        descr.handle.fd = fd;
        let mut fh: hipFileHandle_t = std::ptr::null_mut();
        let fh_p = if null_fh { std::ptr::null_mut() } else { &mut fh as *mut _ };
        let descr_p = if null_descr { std::ptr::null_mut() } else { &mut descr as *mut _ };
        // SAFETY: each pointer is null or valid.
        let e = unsafe { hipFileHandleRegister(fh_p, descr_p) }.err as i32;
        if null_fh || null_descr {
            return assert_eq!(e, BASE + 22);
        }
        match kind {
            1 => {}
            2 | 3 => return assert_eq!(e, BASE + 8), // hipFileIONotSupported
            _ => return assert_eq!(e, BASE + 22),
        }
        self.use_count = self.use_count.max(1);
        match self.fds.get_mut(which) {
            Some(f) if f.handle.is_some() => assert_eq!(e, BASE + 28), // already registered
            Some(f) if f.file.is_some() => {
                assert_eq!(e, 0, "register fd {fd}");
                f.handle = Some(fh);
                REGISTRATIONS.fetch_add(1, Ordering::Relaxed);
            }
            Some(_) if which == 5 => assert_eq!(e, BASE + 19), // O_PATH: invalid open flag
            Some(_) => assert_eq!(e, BASE + 18),               // directory or pipe: invalid file type
            None => assert_eq!(e, BASE + 22),                  // -1, or a closed descriptor
        }
    }

    fn buf_register(&mut self, input: &mut Input<'_>) {
        let p = self.pointer(input);
        let len = Self::size(input);
        let flags = input.u64() as c_int;
        let e = hipFileBufRegister(p as *const c_void, len, flags).err as i32;
        self.use_count = self.use_count.max(1);
        let inside = self.allocs.iter_mut().find(|a| p >= a.base && p < a.base + a.len);
        match inside {
            _ if p == 0 || len == 0 => assert_eq!(e, BASE + 22),
            Some(a) if a.base == p && a.registered => assert_eq!(e, BASE + 23),
            Some(a) if len > a.base + a.len - p => assert_eq!(e, BASE + 14), // past the allocation
            Some(a) => {
                assert_eq!(e, 0, "register {p:#x}+{len} in {:#x}+{}", a.base, a.len);
                REGISTRATIONS.fetch_add(1, Ordering::Relaxed);
                if a.base == p {
                    a.registered = true;
                } else {
                    // Registered at an interior address: keep the model simple, deregister it.
                    assert_eq!(hipFileBufDeregister(p as *const c_void).err as i32, 0);
                }
            }
            // Host memory or an unknown address.
            None => assert!(e == BASE + 22 || e == BASE + 13, "register {p:#x}: {e}"),
        }
    }

    fn io(&mut self, input: &mut Input<'_>, write: bool) {
        let h = self.handle(input);
        let p = self.pointer(input);
        let (size, foff, boff) = if input.u8().is_multiple_of(2) {
            // Plausible: inside the buffer and near the file.
            let len = self.allocs.iter().find(|a| a.base == p).map_or(4096, |a| a.len);
            let boff = input.pick(&[0, 0, 1, 4096, 513]).min(len - 1);
            let size = 1 + input.u64() as usize % (len - boff);
            let foff = input.pick(&[0, 4096, 1, 777]) + (input.u64() % DATA_LEN as u64) as i64 / 4096 * 4096;
            (size, foff, boff as i64)
        } else {
            (Self::size(input), Self::offset(input), Self::offset(input))
        };
        // The allocation the buffer lies in, and its registration: the range the call may touch.
        let alloc = self.allocs.iter().position(|a| p >= a.base && p < a.base + a.len);
        let n = if write {
            // SAFETY: host memory is not allowed in these runs (the default), so a host pointer
            // is refused before use; device pointers are checked against the mock runtime.
            unsafe { hipFileWrite(h, p as *const c_void, size, foff, boff) }
        } else {
            // SAFETY: as above.
            unsafe { hipFileRead(h, p as *mut c_void, size, foff, boff) }
        };
        let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
        let file = self.fds.iter().find(|f| f.handle == Some(h)).map(|f| (f.file, f.fd.as_raw_fd()));
        if n < 0 {
            assert!(n == -1 || (-n as i32 > BASE && -n as i32 != BASE + 30), "io gave {n}");
            if n == -1 {
                assert!([libc::EINVAL, libc::EBADF, libc::EISDIR].contains(&errno), "io gave errno {errno}");
            }
            if write && let Some((Some(1), _)) = file {
                self.scratch = std::fs::read(&files().scratch).unwrap(); // a failed write may leave part
            }
        } else {
            let n = n as usize;
            let (Some(i), Some((Some(which), _))) = (alloc, file) else {
                panic!("io moved {n} bytes through an unknown handle or buffer")
            };
            let (foff, at) = (foff as usize, p + boff as usize);
            let a = &self.allocs[i];
            assert!(at >= a.base && at + n <= a.base + a.len, "io left its allocation");
            let file_len = if which == 0 { DATA_LEN } else { self.scratch.len() };
            (if write { &WRITES } else { &READS }).fetch_add(1, Ordering::Relaxed);
            if write {
                assert_eq!(n, size, "write of {size} at {foff}");
                let bytes = self.hip.get(at, n);
                if n > 0 {
                    if self.scratch.len() < foff + n {
                        self.scratch.resize(foff + n, 0);
                    }
                    self.scratch[foff..foff + n].copy_from_slice(&bytes);
                }
                let on_disk = std::fs::read(&files().scratch).unwrap();
                if on_disk != self.scratch {
                    let at = on_disk.iter().zip(&self.scratch).position(|(a, b)| a != b);
                    panic!(
                        "the file differs from what was written ({n} bytes at {foff}): first at {at:?}, \
                         lengths {} on disk, {} expected",
                        on_disk.len(),
                        self.scratch.len()
                    );
                }
            } else {
                assert_eq!(n, size.min(file_len.saturating_sub(foff)), "read {size} at {foff}");
                let want = if which == 0 { &files().data_bytes } else { &self.scratch };
                assert!(n == 0 || self.hip.get(at, n) == want[foff..foff + n], "read bytes");
            }
        }
        // Whatever happened, device memory outside the requested range is untouched. (Inside
        // it, a read may change more than the bytes it reports: O_DIRECT fills the whole last
        // block at end of file, and a failed read may have filled part.) So the canary goes
        // back over the requested range, and then the allocation must hold nothing else.
        if let Some(i) = alloc.filter(|_| !write) {
            let a = &self.allocs[i];
            if let Ok(boff) = usize::try_from(boff) {
                let start = p.saturating_add(boff).min(a.base + a.len);
                let end = start.saturating_add(size).min(a.base + a.len);
                self.hip.put(start, &vec![CANARY; end - start]);
            }
            let changed = self.hip.get(a.base, a.len).iter().position(|&b| b != CANARY);
            assert!(
                changed.is_none(),
                "device byte {changed:?} of {:#x}+{} changed: read {size} at {foff} into {p:#x}+{boff} gave {n}",
                a.base,
                a.len
            );
        }
    }

    fn finish(mut self) {
        for f in &mut self.fds {
            if let Some(h) = f.handle.take() {
                hipFileHandleDeregister(h);
            }
        }
        while hipFileUseCount() > 0 {
            assert_eq!(hipFileDriverClose().err as i32, 0);
        }
        for a in &self.allocs {
            // SAFETY: allocated by this run, freed once.
            assert_eq!(unsafe { (self.hip.free)(a.base as *mut c_void) }, 0);
        }
        self.fds.clear(); // closes the descriptors
    }
}

fn unsafe_zeroed() -> hipFileDescr_t {
    // SAFETY: the descriptor is plain C data; all-zero is valid (AMD's example memsets it).
    unsafe { std::mem::zeroed() }
}
