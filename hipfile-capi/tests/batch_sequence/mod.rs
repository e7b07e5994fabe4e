//! Random sequences of batch and stream-ordered C API calls, decoded from bytes: the body of the
//! `batch_stream` fuzz target (`hipfile-capi/fuzz`) and of the bounded run in CI
//! (`tests/batch_sequences.rs`). It uses `sequence`'s HIP loader, files and decoder (the crate
//! root declares both modules).
//!
//! Each sequence stages a bounce-path chunk size and a batch size (or not), opens the driver,
//! registers the data file (read-only), the scratch file (read-write and write-only) and some
//! device buffers, then makes batch calls (set-up of any capacity, submissions of 0 to more
//! than the room left, whose entries have hostile modes, opcodes, handles, pointers, offsets
//! and sizes; status with hostile counts and timeouts; cancel; destroy; of live, destroyed and
//! garbage batches) and stream-ordered calls (null pointers or not, on the null stream, created
//! streams registered with any flags or not, a destroyed stream and a garbage one; some with
//! their values changed while the stream is held, before the operation runs), with driver
//! closes, reopens and deregistrations in between. At the end it reaps every event, destroys
//! its batches, deregisters its streams and closes the driver to zero.
//!
//! After every call: the code is one hipFile documents for the call and its arguments (never
//! `hipFileInternalError`), the use count is the model's, and device memory outside the ranges
//! of the reads that may have run keeps its canary. Every event and every stream result is
//! checked against what the entry asked: bytes within the request (exactly those of the data
//! file for a read of it), or the expected negative error; the bytes a read put in device
//! memory are the file's, and the bytes a write put in the file are the buffer's, where no
//! other transfer that may have run meanwhile overlaps. When nothing is in flight, the scratch
//! file is compared with the model and the canary is restored.
#![allow(dead_code, unreachable_pub)]

use std::collections::HashMap;
use std::ffi::{c_int, c_uint, c_void};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use hipfile_capi::exports::*;
use hipfile_capi::ffi::{hipFileBatchParams, hipFileIOParamsUnion};
use hipfile_capi::*;

use crate::sequence::{BASE, CANARY, DATA_LEN, Hip, Input, MIB, files, open};

const INVALID: i32 = BASE + 22; // hipFileInvalidValue
const NOT_INITIALIZED: i32 = BASE + 1; // hipFileDriverNotInitialized
const CLOSING: i32 = BASE + 6; // hipFileDriverClosing
const HIP_DRIVER: i32 = BASE + 11; // hipFileHipDriverError
const MEMORY_TYPE: i32 = BASE + 13; // hipFileHipMemoryTypeInvalid
const ALREADY_REGISTERED: i32 = BASE + 23; // hipFileMemoryAlreadyRegistered
const NOT_REGISTERED: i32 = BASE + 24; // hipFileMemoryNotRegistered
const HANDLE_NOT_REGISTERED: i32 = BASE + 27;
const INTERNAL: i32 = BASE + 30; // never expected
const BATCH_FULL: i32 = BASE + 37;
const STATUS_COMPLETE: c_int = 1 << 4;
const STATUS_FAILED: c_int = 1 << 6;
/// `hipErrorInvalidHandle`: what the runtime says of a stream it does not know.
const HIP_INVALID_HANDLE: c_int = 400;
/// The most one call moves (semantics §1).
const MAX_RW: usize = 0x7fff_f000;
/// File offsets past this may meet the file system's size limit (`EFBIG`).
const BIG_FILE: u64 = 1 << 40;
/// The part of the scratch file the model keeps byte for byte (beyond it, only the length).
const SCRATCH_CAP: usize = 4 * MIB;
/// Not yet written by the library.
const UNSET: isize = isize::MIN + 7;
/// A stream id the mock never hands out.
const GARBAGE_STREAM: usize = 0xdead_0000_0000;

/// Calls made; batch entries accepted; events reaped and those that moved bytes; stream-ordered
/// operations queued and those that moved bytes; transfers whose bytes were compared, and those
/// that moved bytes that could not be (others in flight may have raced with them).
pub static CALLS: AtomicU64 = AtomicU64::new(0);
pub static ENTRIES: AtomicU64 = AtomicU64::new(0);
pub static EVENTS: AtomicU64 = AtomicU64::new(0);
pub static EVENTS_MOVED: AtomicU64 = AtomicU64::new(0);
pub static ASYNC_QUEUED: AtomicU64 = AtomicU64::new(0);
pub static ASYNC_MOVED: AtomicU64 = AtomicU64::new(0);
pub static VERIFIED: AtomicU64 = AtomicU64::new(0);
pub static UNCHECKED: AtomicU64 = AtomicU64::new(0);

/// Writes collided (see `Run::collided`): the scratch file may have an error to report.
static ERROR_PENDING: AtomicBool = AtomicBool::new(false);

fn count(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

type StreamCreate = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type StreamCall = extern "C" fn(*mut c_void) -> c_int;
type HostFn = unsafe extern "C" fn(*mut c_void);
type LaunchHostFunc = unsafe extern "C" fn(*mut c_void, Option<HostFn>, *mut c_void) -> c_int;
type HostMalloc = unsafe extern "C" fn(*mut *mut c_void, usize, c_uint) -> c_int;

/// The mock's stream calls, two streams and a destroyed one, and a page of pinned host memory:
/// made once per process (the library keeps a little state per stream it has seen, so inputs
/// reuse these rather than create their own).
struct Gpu {
    synchronize: StreamCall,
    launch: LaunchHostFunc,
    streams: [usize; 2],
    destroyed: usize,
    pinned: usize,
}

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let sym = |name: &std::ffi::CStr| {
            // SAFETY: a lookup in the process, where `Hip::load` put the mock.
            let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            assert!(!p.is_null(), "{name:?} missing: load the mock first");
            p
        };
        // SAFETY: the mock's hipStreamCreate has this C signature (HIP's).
        let create = unsafe { std::mem::transmute::<*mut c_void, StreamCreate>(sym(c"hipStreamCreate")) };
        // SAFETY: as above, hipStreamDestroy.
        let destroy = unsafe { std::mem::transmute::<*mut c_void, StreamCall>(sym(c"hipStreamDestroy")) };
        // SAFETY: as above, hipStreamSynchronize.
        let synchronize = unsafe { std::mem::transmute::<*mut c_void, StreamCall>(sym(c"hipStreamSynchronize")) };
        // SAFETY: as above, hipLaunchHostFunc.
        let launch = unsafe { std::mem::transmute::<*mut c_void, LaunchHostFunc>(sym(c"hipLaunchHostFunc")) };
        // SAFETY: as above, hipHostMalloc.
        let host_malloc = unsafe { std::mem::transmute::<*mut c_void, HostMalloc>(sym(c"hipHostMalloc")) };
        let stream = || {
            let mut s = std::ptr::null_mut();
            // SAFETY: `s` is writable.
            assert_eq!(unsafe { create(&mut s) }, 0);
            s as usize
        };
        let streams = [stream(), stream()];
        let destroyed = stream();
        assert_eq!(destroy(destroyed as *mut c_void), 0);
        let mut pinned = std::ptr::null_mut();
        // SAFETY: `pinned` is writable.
        assert_eq!(unsafe { host_malloc(&mut pinned, 4096, 0) }, 0);
        Gpu { synchronize, launch, streams, destroyed, pinned: pinned as usize }
    })
}

/// A host function that holds its stream until the flag it is given is set.
unsafe extern "C" fn hold(flag: *mut c_void) {
    // SAFETY: an `AtomicBool` the caller keeps alive until the stream has run this.
    let open = unsafe { &*(flag as *const AtomicBool) };
    while !open.load(Ordering::Acquire) {
        std::thread::sleep(std::time::Duration::from_micros(20));
    }
}

/// The flag of a held stream: set when dropped, and leaked if that is on a panic (the stream may
/// not have read it yet).
struct Held(Option<Box<AtomicBool>>);

impl Drop for Held {
    fn drop(&mut self) {
        let flag = self.0.take().unwrap();
        flag.store(true, Ordering::Release);
        if std::thread::panicking() {
            std::mem::forget(flag);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    ReadWrite,
    Write,
}

/// A device allocation: its registration (the length registered) and the ranges reads may have
/// written since the canary was last restored (offsets in the allocation).
struct Alloc {
    base: usize,
    len: usize,
    registered: Option<usize>,
    dirty: Vec<(usize, usize)>,
}

struct Fd {
    fd: OwnedFd,
    /// 0 the data file, 1 the scratch file.
    file: usize,
    access: Access,
    handle: Option<usize>,
}

/// One transfer that passed its checks and may run: what it may touch, and when it was
/// submitted and known to be over (model clock).
#[derive(Clone, Debug)]
struct Op {
    write: bool,
    file: usize,
    access: Access,
    /// Device range: `at`, `size` bytes (the request, capped at `MAX_RW`).
    at: usize,
    size: usize,
    alloc: usize,
    file_offset: u64,
    born: u64,
    ended: Option<u64>,
    /// The stream slot, for stream-ordered operations (which run in order).
    stream: Option<usize>,
}

struct Batch {
    id: usize,
    capacity: usize,
    /// Cookie of each entry submitted and not reaped, and its operation.
    pending: HashMap<usize, usize>,
}

/// A stream-ordered operation's values, where the library reads them and writes the result.
#[repr(C)]
struct Values {
    size: usize,
    file_offset: i64,
    buffer_offset: i64,
    bytes: isize,
}

/// A `Values` the library may read and write from its threads while an operation is queued:
/// only ever accessed through raw pointers (volatile), freed once the stream has run it.
#[derive(Clone, Copy)]
struct Shared(*mut Values);

impl Shared {
    fn new(v: Values) -> Shared {
        Shared(Box::into_raw(Box::new(v)))
    }

    fn size(self) -> *mut usize {
        // SAFETY: a live allocation (from `Box::into_raw`); only the field's address is taken.
        unsafe { &raw mut (*self.0).size }
    }

    fn file_offset(self) -> *mut i64 {
        // SAFETY: as in `size`.
        unsafe { &raw mut (*self.0).file_offset }
    }

    fn buffer_offset(self) -> *mut i64 {
        // SAFETY: as in `size`.
        unsafe { &raw mut (*self.0).buffer_offset }
    }

    fn bytes(self) -> *mut isize {
        // SAFETY: as in `size`.
        unsafe { &raw mut (*self.0).bytes }
    }

    /// The values the operation will read (nothing writes them meanwhile: the caller's).
    fn get(self) -> (usize, i64, i64) {
        // SAFETY: live; the library only reads these.
        let size = unsafe { std::ptr::read_volatile(self.size()) };
        // SAFETY: as above.
        let file_offset = unsafe { std::ptr::read_volatile(self.file_offset()) };
        // SAFETY: as above.
        let buffer_offset = unsafe { std::ptr::read_volatile(self.buffer_offset()) };
        (size, file_offset, buffer_offset)
    }

    /// Changes the values, while nothing reads them (the caller holds the stream).
    fn set(self, (size, file_offset, buffer_offset): (usize, i64, i64)) {
        // SAFETY: live; nothing reads it now (the caller's).
        unsafe { std::ptr::write_volatile(self.size(), size) };
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(self.file_offset(), file_offset) };
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(self.buffer_offset(), buffer_offset) };
    }

    /// The result, once the library stored it (the caller synchronized the stream).
    fn result(self) -> isize {
        // SAFETY: live; nothing writes it now (the caller's).
        unsafe { std::ptr::read_volatile(self.bytes()) }
    }

    /// Frees it: the stream has run the operation, or it was never queued.
    fn free(self) {
        // SAFETY: from `Box::into_raw`, freed once (the caller's).
        drop(unsafe { Box::from_raw(self.0) });
    }
}

/// What a queued stream-ordered operation should end with.
enum Outcome {
    /// Not known until its values are final (the stream is held).
    Open,
    /// This result, moving nothing.
    Result(i64),
    /// It runs: the operation's index.
    Runs(usize),
}

struct Queued {
    values: Shared,
    write: bool,
    fd: usize,
    alloc: usize,
    buffer_base: usize,
    /// The buffer's length as the call found it.
    buffer_len: usize,
    /// The stream's flags at submission.
    flags: u32,
    submitted: (usize, i64, i64),
    born: u64,
    outcome: Outcome,
}

impl Drop for Queued {
    fn drop(&mut self) {
        // On a panic the stream may not have run it: leaked then.
        if !std::thread::panicking() {
            self.values.free();
        }
    }
}

/// A stream argument: the null stream, the two streams, the destroyed one, a garbage value.
struct Slot {
    stream: usize,
    live: bool,
    flags: Option<u32>,
    queued: Vec<Queued>,
}

/// A transfer's arguments as the caller gives them.
#[derive(Clone, Copy, Debug)]
struct Args {
    base: usize,
    size: usize,
    file_offset: i64,
    buffer_offset: i64,
}

/// Why a transfer's checks fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refused {
    Closed,
    Handle,
    /// A null buffer (`hipFileInvalidValue`) or memory that is not the device's.
    Buffer(i32),
    /// Offsets or size out of the buffer (`hipFileInvalidValue`).
    Range,
    /// Negative offsets, or a transfer past the largest file offset (`EINVAL`).
    Einval,
}

impl Refused {
    /// The codes a `hipFileError_t` call may give for it.
    fn codes(self) -> &'static [i32] {
        match self {
            // Checked "as hipFileRead would" (-1/EINVAL there): either reading is fair.
            Refused::Closed => &[NOT_INITIALIZED, INVALID],
            Refused::Handle => &[HANDLE_NOT_REGISTERED],
            Refused::Buffer(INVALID) => &[INVALID],
            Refused::Buffer(_) => &[MEMORY_TYPE],
            Refused::Range | Refused::Einval => &[INVALID],
        }
    }
}

/// A transfer that passes its checks.
struct Plan {
    fd: usize,
    alloc: usize,
    buffer_len: usize,
    at: usize,
    size: usize,
    file_offset: u64,
}

struct Run<'h> {
    hip: &'h Hip,
    gpu: &'static Gpu,
    use_count: i64,
    allocs: Vec<Alloc>,
    fds: Vec<Fd>,
    stale_handles: Vec<usize>,
    batches: Vec<Batch>,
    stale_batches: Vec<usize>,
    slots: Vec<Slot>,
    ops: Vec<Op>,
    clock: u64,
    cookies: u64,
    /// The scratch file's first `SCRATCH_CAP` bytes and its length, while known.
    scratch: Vec<u8>,
    scratch_len: u64,
    scratch_known: bool,
    /// What the current call is, for messages.
    call: String,
    /// Arguments are drawn from the valid ones only.
    clean: bool,
    /// Two writes that overlap in the scratch file were in flight together. Durable writes send
    /// the aligned interior through `O_DIRECT` and the rest buffered; when another write's
    /// buffered pages lie in that interior, the kernel cannot drop them from the page cache
    /// after the direct write ("Page cache invalidation failure on direct I/O" in its log),
    /// records `EIO` on the file, and the next fdatasync of each descriptor of the file reports
    /// it: from then on a write may fail with `-EIO` having written all its bytes.
    collided: bool,
    /// The largest batch `hipFileBatchIOSetUp` accepts now (the batch-size parameter).
    batch_limit: u32,
    /// The values of stream-ordered calls that failed, as the call left them.
    refused: Vec<(Shared, (usize, i64, i64), isize)>,
}

/// Runs the sequence `data` describes against the process's driver, then releases everything
/// it made and closes the driver to zero.
pub fn run(hip: &Hip, data: &[u8]) {
    if trace() {
        eprintln!("== a sequence of {} bytes", data.len());
    }
    let f = files();
    let gpu = gpu();
    // Each input starts from a scratch file of zeros, with no write error pending on it (see
    // `Run::collided`): a fresh descriptor's first fdatasync reports and clears one, so the
    // descriptors opened afterwards do not see it.
    let scratch = std::fs::OpenOptions::new().write(true).open(&f.scratch).unwrap();
    scratch.set_len(0).unwrap();
    scratch.set_len(DATA_LEN as u64).unwrap();
    if ERROR_PENDING.swap(false, Ordering::Relaxed) {
        let _ = scratch.sync_data();
    }
    drop(scratch);
    assert_eq!(hipFileUseCount(), 0, "a sequence starts with the driver closed");
    let fds = vec![
        Fd { fd: open(&f.data, libc::O_RDONLY), file: 0, access: Access::Read, handle: None },
        Fd { fd: open(&f.scratch, libc::O_RDWR), file: 1, access: Access::ReadWrite, handle: None },
        Fd { fd: open(&f.scratch, libc::O_WRONLY), file: 1, access: Access::Write, handle: None },
    ];
    let slot = |stream, live| Slot { stream, live, flags: None, queued: Vec::new() };
    let mut run = Run {
        hip,
        gpu,
        use_count: 0,
        allocs: Vec::new(),
        fds,
        stale_handles: Vec::new(),
        batches: Vec::new(),
        stale_batches: Vec::new(),
        slots: vec![
            slot(0, true),
            slot(gpu.streams[0], true),
            slot(gpu.streams[1], true),
            slot(gpu.destroyed, false),
            slot(GARBAGE_STREAM, false),
        ],
        ops: Vec::new(),
        clock: 0,
        cookies: 1,
        scratch: vec![0; DATA_LEN],
        scratch_len: DATA_LEN as u64,
        scratch_known: true,
        call: String::new(),
        clean: false,
        collided: false,
        refused: Vec::new(),
        batch_limit: 128,
    };
    let mut input = Input(data);
    for len in [4096, 64 * 1024, 256 * 1024 + 4096] {
        let base = hip.alloc(len);
        hip.put(base, &vec![CANARY; len]);
        run.allocs.push(Alloc { base, len, registered: None, dirty: Vec::new() });
    }
    // Values staged for this open (semantics §13): the bounce path's chunk (64 KiB cuts the
    // buffers here into several chunks) and the largest batch.
    let chunk_kib = input.pick(&[0, 0, 64, 128, 1024]);
    let batch_size = input.pick(&[0, 0, 0, 1, 4, 200, 1024]);
    for (param, value) in [(5, chunk_kib), (9, batch_size)] {
        if value > 0 {
            run.call = format!("hipFileSetParameterSizeT({param}, {value})");
            assert_eq!(hipFileSetParameterSizeT(param, value), hipFileError_t::SUCCESS, "{}", run.call);
        }
    }
    if batch_size > 0 {
        run.batch_limit = batch_size as u32;
    }
    assert_eq!(hipFileDriverOpen().err, 0);
    run.use_count = 1;
    run.register_handles();
    for i in 0..run.allocs.len() {
        match input.u8() % 3 {
            0 => {}
            k => {
                let len = if k == 1 { run.allocs[i].len } else { run.allocs[i].len / 2 };
                run.buf_register(i, len);
            }
        }
    }
    // A batch to start with, of a valid capacity (the steps make others, of any).
    let any = 1 + u32::from(input.u8()) % run.batch_limit;
    let capacity = input.pick(&[1, 2, 4, run.batch_limit, any]);
    run.setup_batch(false, capacity);
    for _ in 0..48 {
        if input.0.is_empty() {
            break;
        }
        run.step(&mut input);
        run.settle();
    }
    run.finish();
}

/// `HIPFILE_FUZZ_TRACE=1` prints each call (to follow an input that fails).
fn trace() -> bool {
    static TRACE: OnceLock<bool> = OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("HIPFILE_FUZZ_TRACE").is_some_and(|v| v == "1"))
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    a.0 < b.0 + b.1 && b.0 < a.0 + a.1
}

impl Run<'_> {
    /// After each call: the result was checked by the caller; the use count and the canary.
    fn after_call(&mut self) {
        if trace() {
            eprintln!("{}", self.call);
        }
        count(&CALLS);
        self.clock += 1;
        assert_eq!(hipFileUseCount(), self.use_count, "use count after {}", self.call);
        self.check_canary();
    }

    fn check_canary(&self) {
        static CANARIES: OnceLock<Vec<u8>> = OnceLock::new();
        let canaries = CANARIES.get_or_init(|| vec![CANARY; 1 << 20]);
        for a in &self.allocs {
            let bytes = self.hip.get(a.base, a.len);
            // The gaps between the dirty ranges, compared whole (memcmp, fast in debug builds).
            let mut dirty = a.dirty.clone();
            dirty.sort_unstable();
            dirty.push((a.len, a.len));
            let mut from = 0;
            let mut changed = None;
            for (s, e) in dirty {
                if s > from && bytes[from..s] != canaries[..s - from] {
                    changed = bytes[from..s].iter().position(|&b| b != CANARY).map(|k| from + k);
                    break;
                }
                from = from.max(e);
            }
            if let Some(k) = changed {
                panic!(
                    "device byte {k} of {:#x}+{} changed (now {:#x}), outside every read that may have run; \
                     last call: {}",
                    a.base, a.len, bytes[k], self.call
                );
            }
        }
    }

    /// When nothing is in flight: the scratch file is the model's (or becomes it), the canary
    /// goes back over what reads wrote, and the log of operations starts anew.
    fn settle(&mut self) {
        if self.batches.iter().any(|b| !b.pending.is_empty()) || self.slots.iter().any(|s| !s.queued.is_empty()) {
            return;
        }
        let (disk, len) = scratch_on_disk();
        if self.scratch_known {
            assert_eq!(len, self.scratch_len, "scratch file length (last call: {})", self.call);
            if disk != self.scratch {
                let at = disk.iter().zip(&self.scratch).position(|(a, b)| a != b).unwrap_or(disk.len());
                panic!("scratch file byte {at} differs from the writes made (last call: {})", self.call);
            }
        }
        (self.scratch, self.scratch_len, self.scratch_known) = (disk, len, true);
        for a in &mut self.allocs {
            for (s, e) in a.dirty.drain(..) {
                self.hip.put(a.base + s, &vec![CANARY; e - s]);
            }
        }
        self.ops.clear();
    }

    fn step(&mut self, input: &mut Input<'_>) {
        match input.u8() % 24 {
            0 | 1 => self.setup(input),
            2..=6 => self.submit(input),
            7..=9 => self.status(input),
            10 => self.cancel(input),
            11 => self.destroy(input),
            12..=14 => {
                let slot = input.pick(&[0, 1, 1, 2, 2, 3, 4]);
                self.queue(input, slot, false);
            }
            15 | 16 => self.held(input),
            17 => {
                let slot = input.pick(&[0, 1, 2]);
                self.synchronize(slot);
            }
            18 => self.stream_register(input),
            19 => self.stream_deregister(input),
            20 => self.open_close(input),
            _ => self.registration(input),
        }
    }

    // ------------------------------------------------------------------ arguments

    fn handle(&self, input: &mut Input<'_>) -> usize {
        let registered: Vec<usize> = self.fds.iter().filter_map(|f| f.handle).collect();
        match input.u8() % 16 {
            _ if self.clean && !registered.is_empty() => input.pick(&registered),
            0..=12 if !registered.is_empty() => input.pick(&registered),
            13 if !self.stale_handles.is_empty() => input.pick(&self.stale_handles),
            _ => {
                let garbage = input.u64() as usize;
                input.pick(&[0, 1, usize::MAX, garbage, 0x1000])
            }
        }
    }

    /// A pointer: the base of, into, at the edges of, or outside device memory; host memory.
    fn pointer(&self, input: &mut Input<'_>) -> usize {
        let a = &self.allocs[input.u8() as usize % self.allocs.len()];
        let stack = 0u64;
        match input.u8() % 16 {
            _ if self.clean => a.base,
            0..=8 => a.base,
            9 | 10 => a.base + (input.u64() as usize % a.len),
            11 => a.base + a.len,
            12 => a.base + a.len - 1,
            13 => a.base + a.len - 4096.min(a.len),
            14 => input.pick(&[0, 1, a.base.wrapping_sub(1), &stack as *const u64 as usize, self.gpu.pinned]),
            _ => input.u64() as usize,
        }
    }

    /// The allocation and length a call finds for a buffer pointer (semantics §4), or why not.
    fn buffer(&self, p: usize) -> Result<(usize, usize), Refused> {
        if p == 0 {
            return Err(Refused::Buffer(INVALID));
        }
        if let Some(i) = self.allocs.iter().position(|a| a.base == p && a.registered.is_some()) {
            return Ok((i, self.allocs[i].registered.unwrap()));
        }
        match self.allocs.iter().position(|a| p >= a.base && p < a.base + a.len) {
            Some(i) => Ok((i, self.allocs[i].base + self.allocs[i].len - p)),
            None => Err(Refused::Buffer(MEMORY_TYPE)),
        }
    }

    fn args(&self, input: &mut Input<'_>) -> Args {
        let base = self.pointer(input);
        let len = self.buffer(base).map_or(4096, |(_, len)| len);
        if !input.u8().is_multiple_of(4) || self.clean {
            // Plausible: inside the buffer and near the file's end or start.
            // Offsets and sizes spread over the buffer, so that transfers in flight together
            // often touch different bytes (and can be checked).
            let any = input.u64() as usize % len;
            let buffer_offset = input.pick(&[0, 0, 1, 4096, 513, 16384, any]).min(len - 1);
            let most = input.pick(&[4096, 8192, 65536, usize::MAX]).min(len - buffer_offset);
            let size = 1 + input.u64() as usize % most;
            let near = input.pick(&[0i64, 4096, 1, 777, DATA_LEN as i64 - 4096]);
            let file_offset = near + (input.u64() % DATA_LEN as u64) as i64 / 4096 * 4096;
            return Args { base, size, file_offset, buffer_offset: buffer_offset as i64 };
        }
        let any = input.u64() as usize % (2 * MIB);
        let size = input.pick(&[0, 1, 100, 4095, 4096, 65536, MIB, usize::MAX, i64::MAX as usize, any, len, len + 1]);
        let (any, garbage) = ((input.u64() % (2 * MIB as u64)) as i64, input.u64() as i64);
        let file_offset = input.pick(&[
            0,
            1,
            4096,
            -1,
            i64::MIN,
            i64::MAX,
            i64::MAX - 4096,
            DATA_LEN as i64,
            DATA_LEN as i64 - 100,
            any,
            garbage,
        ]);
        let (any, garbage) = ((input.u64() % (2 * MIB as u64)) as i64, input.u64() as i64);
        let len = len as i64;
        let buffer_offset = input.pick(&[0, 1, 4096, 513, -1, i64::MIN, i64::MAX, len - 1, len, any, garbage]);
        Args { base, size, file_offset, buffer_offset }
    }

    /// Entry `k` of `nr` in a clean submission: in the `k`th stripe of its buffer and of the
    /// file (past its end, for the last ones), so that the entries do not race each other and
    /// each can be checked.
    fn striped(&self, a: Args, k: usize, nr: usize) -> Args {
        let Ok((_, len)) = self.buffer(a.base) else { return a };
        let stripe = (len / nr).max(1);
        let file_stripe = ((DATA_LEN + 65536) / nr).max(1);
        let size = 1 + a.size % stripe.min(file_stripe);
        let buffer_offset = (k * stripe).min(len - 1) as i64;
        let size = size.min(len - buffer_offset as usize);
        Args { base: a.base, size, file_offset: (k * file_stripe) as i64, buffer_offset }
    }

    /// `hipFileRead`'s checks (semantics §3-§5), in its order: driver, handle, buffer, offsets.
    fn check(&self, handle: usize, a: &Args) -> Result<Plan, Refused> {
        if self.use_count == 0 {
            return Err(Refused::Closed);
        }
        let fd = self.fds.iter().position(|f| f.handle == Some(handle)).ok_or(Refused::Handle)?;
        let (alloc, buffer_len) = self.buffer(a.base)?;
        let (at, size, file_offset) = plan_io(a.base, buffer_len, a.size, a.file_offset, a.buffer_offset)?;
        Ok(Plan { fd, alloc, buffer_len, at, size, file_offset })
    }

    /// A transfer that may run from now: logged, and its device range marked when it is a read.
    fn start(&mut self, write: bool, plan: &Plan, stream: Option<usize>) -> usize {
        let fd = &self.fds[plan.fd];
        let (file, access, range) = (fd.file, fd.access, (plan.file_offset, plan.size as u64));
        if write && file == 1 && access != Access::Read && plan.size > 0 {
            let overlapping = |y: &Op| y.write && y.file == 1 && y.access != Access::Read && y.ended.is_none();
            if self.ops.iter().any(|y| overlapping(y) && overlaps(range, (y.file_offset, y.size as u64))) {
                self.collided = true;
                ERROR_PENDING.store(true, Ordering::Relaxed);
            }
        }
        let fd = &self.fds[plan.fd];
        let a = &mut self.allocs[plan.alloc];
        let start = plan.at - a.base;
        if !write && plan.size > 0 {
            a.dirty.push((start, start + plan.size));
        }
        self.ops.push(Op {
            write,
            file: fd.file,
            access: fd.access,
            at: plan.at,
            size: plan.size,
            alloc: plan.alloc,
            file_offset: plan.file_offset,
            born: self.clock,
            ended: None,
            stream,
        });
        self.ops.len() - 1
    }

    /// Whether transfer `j` may have run at some time after transfer `i` was submitted, in an
    /// order the model does not know.
    fn concurrent(&self, i: usize, j: usize) -> bool {
        let (x, y) = (&self.ops[i], &self.ops[j]);
        let same_stream_before = x.stream.is_some() && x.stream == y.stream && y.born < x.born;
        i != j && y.ended.is_none_or(|e| e > x.born) && !same_stream_before
    }

    /// Whether a read may have written over transfer `i`'s device range since it was submitted.
    fn device_conflict(&self, i: usize) -> bool {
        let x = &self.ops[i];
        let range = (x.at as u64, x.size as u64);
        (0..self.ops.len()).any(|j| {
            let y = &self.ops[j];
            !y.write && self.concurrent(i, j) && overlaps(range, (y.at as u64, y.size as u64))
        })
    }

    /// Whether a write may have changed the scratch file since transfer `i` was submitted: in
    /// its range (`range_only`), or anywhere (its length too).
    fn file_conflict(&self, i: usize, range_only: bool) -> bool {
        let x = &self.ops[i];
        let range = (x.file_offset, x.size as u64);
        (0..self.ops.len()).any(|j| {
            let y = &self.ops[j];
            y.write
                && y.file == 1
                && y.access != Access::Read
                && self.concurrent(i, j)
                && (!range_only || overlaps(range, (y.file_offset, y.size as u64)))
        })
    }

    /// Checks the result of transfer `i` (an event's `ret`, a stream operation's `*bytes_p`)
    /// and ends it.
    fn result(&mut self, i: usize, ret: i64) {
        let op = self.ops[i].clone();
        let what = format!(
            "{} of {} at file offset {} into {:#x} (allocation {}): {ret}",
            if op.write { "write" } else { "read" },
            op.size,
            op.file_offset,
            op.at,
            op.alloc
        );
        assert!(ret != -i64::from(INTERNAL), "{what}: hipFileInternalError");
        match (op.write, op.access) {
            // A zero-size call succeeds with 0 (semantics §5), whatever the descriptor allows.
            _ if op.size == 0 => assert_eq!(ret, 0, "{what}: a zero-size transfer"),
            (true, Access::Read) | (false, Access::Write) => {
                assert_eq!(ret, -i64::from(libc::EBADF), "{what}: the descriptor does not allow it");
            }
            (true, _) => {
                let big = op.file_offset + op.size as u64 > BIG_FILE;
                if ret < 0 {
                    let efbig = big && ret == -i64::from(libc::EFBIG);
                    let eio = self.collided && ret == -i64::from(libc::EIO);
                    assert!(efbig || eio, "{what}: a write that fails");
                    self.scratch_known = false; // a failed write may leave part
                } else {
                    assert_eq!(ret as usize, op.size, "{what}: a write moves all it is asked");
                    self.written(i);
                }
            }
            (false, _) => {
                assert!(ret >= 0, "{what}: a read that fails");
                let n = ret as usize;
                assert!(n <= op.size, "{what}: more than asked");
                let stable = op.file == 0 || !self.file_conflict(i, false);
                if n > 0 && (!stable || self.device_conflict(i)) {
                    count(&UNCHECKED);
                }
                if stable {
                    let len = if op.file == 0 { DATA_LEN as u64 } else { scratch_on_disk_len() };
                    let want = (op.size as u64).min(len.saturating_sub(op.file_offset)) as usize;
                    assert_eq!(n, want, "{what}: the bytes before end of file ({len})");
                    if n > 0 && !self.device_conflict(i) {
                        let got = self.hip.get(op.at, n);
                        let want = file_bytes(op.file, op.file_offset, n);
                        if got != want {
                            let k = got.iter().zip(&want).position(|(a, b)| a != b).unwrap();
                            panic!("{what}: byte {k} is {:#x} in device memory, {:#x} in the file", got[k], want[k]);
                        }
                        count(&VERIFIED);
                    }
                }
            }
        }
        self.ops[i].ended = Some(self.clock);
    }

    /// A write of transfer `i` that succeeded: the file holds the buffer's bytes, and the model
    /// follows, where nothing else may have raced with it.
    fn written(&mut self, i: usize) {
        let op = self.ops[i].clone();
        if op.size == 0 {
            return;
        }
        if self.file_conflict(i, true) {
            self.scratch_known = false; // the order of overlapping writes is not known
            count(&UNCHECKED);
            return;
        }
        let disk = file_bytes(1, op.file_offset, op.size);
        if !self.device_conflict(i) {
            let buffer = self.hip.get(op.at, op.size);
            if disk != buffer {
                let k = disk.iter().zip(&buffer).position(|(a, b)| a != b).unwrap_or(disk.len());
                panic!(
                    "write of {} at {} from {:#x}: file byte {k} is {:x?}, the buffer's {:x?}",
                    op.size,
                    op.file_offset,
                    op.at,
                    disk.get(k),
                    buffer.get(k)
                );
            }
            count(&VERIFIED);
        } else {
            count(&UNCHECKED);
        }
        if self.scratch_known {
            let end = op.file_offset + op.size as u64;
            self.scratch_len = self.scratch_len.max(end);
            let keep = (self.scratch_len as usize).min(SCRATCH_CAP);
            self.scratch.resize(keep, 0);
            if op.file_offset < SCRATCH_CAP as u64 {
                let (s, e) = (op.file_offset as usize, (end as usize).min(SCRATCH_CAP));
                self.scratch[s..e].copy_from_slice(&disk[..e - s]);
            }
        }
    }

    /// Transfers that may or may not have run (canceled, destroyed): over now.
    fn dropped(&mut self, ops: impl IntoIterator<Item = usize>) {
        for i in ops {
            let op = &mut self.ops[i];
            op.ended = Some(self.clock);
            if op.write && op.file == 1 && op.access != Access::Read && op.size > 0 {
                self.scratch_known = false;
            }
        }
    }

    // ------------------------------------------------------------------ batches

    /// A batch argument: a live batch (its index), a destroyed one, or garbage.
    fn batch(&self, input: &mut Input<'_>) -> (usize, Option<usize>) {
        let id = match input.u8() % 16 {
            0..=12 if !self.batches.is_empty() => self.batches[input.u8() as usize % self.batches.len()].id,
            13 if !self.stale_batches.is_empty() => input.pick(&self.stale_batches),
            14 if !self.batches.is_empty() => self.batches[0].id.wrapping_add(input.pick(&[1, usize::MAX, 1 << 40])),
            _ => {
                let garbage = input.u64() as usize;
                input.pick(&[0, 1, usize::MAX, garbage])
            }
        };
        (id, self.batches.iter().position(|b| b.id == id))
    }

    fn setup(&mut self, input: &mut Input<'_>) {
        let any = input.u64() as u32;
        let limit = self.batch_limit;
        let capacity =
            input.pick(&[0, 1, 1, 2, 4, 128, 129, limit, limit, limit + 1, any, any % (limit + 2), u32::MAX]);
        let null = input.u8().is_multiple_of(16);
        self.setup_batch(null, capacity);
    }

    fn setup_batch(&mut self, null: bool, capacity: u32) {
        self.call = format!("hipFileBatchIOSetUp({}, {capacity})", if null { "NULL" } else { "&batch" });
        let mut id: hipFileBatchHandle_t = std::ptr::null_mut();
        let out = if null { std::ptr::null_mut() } else { &mut id as *mut _ };
        // SAFETY: null or writable.
        let e = unsafe { hipFileBatchIOSetUp(out, capacity) };
        let want = if null || !(1..=self.batch_limit).contains(&capacity) { INVALID } else { 0 };
        assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
        if want == 0 {
            let id = id as usize;
            assert!(
                self.batches.iter().all(|b| b.id != id) && !self.stale_batches.contains(&id),
                "{}: a batch handle given twice",
                self.call
            );
            self.batches.push(Batch { id, capacity: capacity as usize, pending: HashMap::new() });
        }
        self.after_call();
    }

    fn submit(&mut self, input: &mut Input<'_>) {
        let (id, live) = self.batch(input);
        let (capacity, room) = live.map_or((4, 4), |i| {
            let b = &self.batches[i];
            (b.capacity, b.capacity - b.pending.len())
        });
        let any = input.u8() as usize % 131;
        let nr = input.pick(&[0, 1, 1, 1, 2, 2, 3, 4, room, room, room + 1, capacity, any]).min(capacity + 2);
        let null = input.u8().is_multiple_of(16);
        let flags = input.u64() as c_uint;
        // Half the submissions have only valid entries (one bad entry fails the whole).
        self.clean = input.u8().is_multiple_of(2);
        let mut params = Vec::with_capacity(nr);
        let mut entries = Vec::with_capacity(nr);
        for k in 0..nr {
            // Mostly valid, so that random bytes make whole submissions that run.
            let (kind, garbage) = (input.u8(), input.u64() as c_int);
            let write = kind & 1 != 0;
            let invalid = input.pick(&[0, 2, -1, 1 << 16, garbage]);
            let mode = if kind & 0x1e == 0 && !self.clean { invalid } else { 1 };
            let opcode = if kind & 0x1e == 2 && !self.clean { invalid } else { c_int::from(write) };
            let handle = self.handle(input);
            let args = self.args(input);
            let args = if self.clean { self.striped(args, k, nr) } else { args };
            let cookie = (input.u64() << 24 | (self.cookies & 0xff_ffff)) as usize;
            self.cookies += 1;
            params.push(hipFileIOParams_t {
                mode,
                u: hipFileIOParamsUnion {
                    batch: hipFileBatchParams {
                        devPtr_base: args.base as *mut c_void,
                        file_offset: args.file_offset,
                        devPtr_offset: args.buffer_offset,
                        size: args.size,
                    },
                },
                fh: handle as hipFileHandle_t,
                opcode,
                cookie: cookie as *mut c_void,
            });
            entries.push((mode == 1 && (opcode == 0 || opcode == 1), opcode == 1, handle, args, cookie));
        }
        self.call =
            format!("hipFileBatchIOSubmit({id:#x}, {nr}, {}, {flags:#x})", if null { "NULL" } else { "entries" });
        // What it should give: the arguments, each entry's checks in order, then room.
        let mut plans = Vec::new();
        let mut refused = String::new();
        let want: Result<(), Vec<i32>> = (|| {
            if nr == 0 || null || entries.iter().any(|e| !e.0) || live.is_none() {
                refused = format!(": {}", if live.is_none() { "unknown batch" } else { "arguments" });
                return Err(vec![INVALID]);
            }
            for (k, &(_, write, handle, args, _)) in entries.iter().enumerate() {
                match self.check(handle, &args) {
                    Ok(plan) => plans.push((write, plan)),
                    Err(why) => {
                        refused = format!(": entry {k} {args:?} {why:?}");
                        return Err(why.codes().to_vec());
                    }
                }
            }
            if nr > room { Err(vec![BATCH_FULL]) } else { Ok(()) }
        })();
        self.call += &refused;
        self.clean = false;
        if trace() {
            for (valid, write, handle, args, cookie) in &entries {
                let kind = if !valid {
                    "invalid"
                } else if *write {
                    "write"
                } else {
                    "read"
                };
                self.call += &format!("\n    {kind} {handle:#x} {args:?} cookie {cookie:#x}");
            }
        }
        // Marked before the call: its entries may run before it returns.
        let started: Vec<usize> = if want.is_ok() {
            plans.iter().map(|(write, plan)| self.start(*write, plan, None)).collect()
        } else {
            Vec::new()
        };
        let p = if null { std::ptr::null_mut() } else { params.as_mut_ptr() };
        // SAFETY: null, or `nr` entries.
        let e = unsafe { hipFileBatchIOSubmit(id as hipFileBatchHandle_t, nr as c_uint, p, flags) };
        self.call += &format!(" = {}", e.err);
        match &want {
            Ok(()) => assert_eq!((e.err, e.hip_drv_err), (0, 0), "{}", self.call),
            Err(codes) => {
                assert!(codes.contains(&e.err) && e.hip_drv_err == 0, "{}: {e:?}, expected one of {codes:?}", self.call)
            }
        }
        if want.is_ok() {
            let b = &mut self.batches[live.unwrap()];
            for (&(.., cookie), &op) in entries.iter().zip(&started) {
                b.pending.insert(cookie, op);
                count(&ENTRIES);
            }
        }
        self.after_call();
    }

    fn status(&mut self, input: &mut Input<'_>) {
        let (id, live) = self.batch(input);
        let outstanding = live.map_or(0, |i| self.batches[i].pending.len()) as u32;
        let any = u32::from(input.u8()) % 131;
        let max = input.pick(&[0, 1, 2, outstanding, outstanding, outstanding + 1, 128, any, 1024]);
        let min = input.pick(&[0, 0, 1, outstanding, outstanding, max, max + 1, any, u32::MAX]);
        let (null_nr, null_events) = (input.u8().is_multiple_of(16), input.u8().is_multiple_of(16));
        let mut timeout = match input.u8() % 12 {
            0 | 1 => None,
            2 => Some((0, 0)),
            3 => Some((0, 1_000_000)),
            4 => Some((0, 20_000)),
            5 => Some((-1, 0)),
            6 => Some((0, -1)),
            7 => Some((0, 1_000_000_000)),
            8 => Some((i64::MIN, 5)),
            _ => Some((i64::MAX, 999_999_999)),
        };
        let unbounded = |t: &Option<(i64, i64)>| matches!(t, None | Some((i64::MAX, _)));
        // No limit only where the wait must end: `min` events can come, or none is outstanding.
        if unbounded(&timeout) && outstanding > 0 && min > outstanding {
            timeout = Some((0, 0));
        }
        let mut ts = timeout.map(|(s, ns)| libc::timespec { tv_sec: s, tv_nsec: ns });
        let unset = hipFileIOEvents_t { cookie: 0x5a5a as *mut c_void, status: 0x7777, ret: 0xa5a5 };
        let mut events = vec![unset; max.max(1) as usize];
        let mut nr = max;
        self.call = format!(
            "hipFileBatchIOGetStatus({id:#x}, {min}, {}, {}, {timeout:?}) with {outstanding} outstanding",
            if null_nr { "NULL".into() } else { format!("&{max}") },
            if null_events { "NULL" } else { "events" }
        );
        let t = ts.as_mut().map_or(std::ptr::null_mut(), |t| t as *mut libc::timespec);
        let nr_p = if null_nr { std::ptr::null_mut() } else { &mut nr as *mut c_uint };
        let events_p = if null_events { std::ptr::null_mut() } else { events.as_mut_ptr() };
        // SAFETY: each pointer is null or valid (`max` events).
        let e = unsafe { hipFileBatchIOGetStatus(id as hipFileBatchHandle_t, min, nr_p, events_p, t) };
        let bad_timeout = timeout.is_some_and(|(s, ns)| s < 0 || ns < 0);
        let odd_timeout = timeout.is_some_and(|(_, ns)| ns >= 1_000_000_000); // not a valid timespec
        let invalid = null_nr || null_events || live.is_none() || max == 0 || min > max || bad_timeout;
        let untouched = |from: usize, events: &[hipFileIOEvents_t]| {
            events[from..].iter().all(|e| e.cookie == unset.cookie && e.status == unset.status && e.ret == unset.ret)
        };
        if invalid || (odd_timeout && e.err == INVALID) {
            assert_eq!((e.err, e.hip_drv_err), (INVALID, 0), "{}", self.call);
            assert!(untouched(0, &events), "{}: events stored by a call that failed", self.call);
            assert_eq!(nr, max, "{}: *nr changed by a call that failed", self.call);
            return self.after_call();
        }
        assert_eq!((e.err, e.hip_drv_err), (0, 0), "{}", self.call);
        let n = nr as usize;
        assert!(nr <= max.min(outstanding), "{}: {n} events", self.call);
        if unbounded(&timeout) {
            assert!(nr >= min.min(outstanding), "{}: only {n} events with no time limit", self.call);
        }
        assert!(untouched(n, &events), "{}: events stored past the {n} reported", self.call);
        let b = live.unwrap();
        for (k, ev) in events[..n].iter().enumerate() {
            let cookie = ev.cookie as usize;
            let Some(i) = self.batches[b].pending.remove(&cookie) else {
                panic!("{}: event {k} has cookie {cookie:#x}, no entry of this batch waiting", self.call)
            };
            let ret = ev.ret as i64;
            match ev.status {
                STATUS_COMPLETE => assert!(ret >= 0, "{}: event {k} complete with {ret}", self.call),
                STATUS_FAILED => assert!(ret < 0, "{}: event {k} failed with {ret}", self.call),
                s => panic!("{}: event {k} has status {s}", self.call),
            }
            count(&EVENTS);
            if ret > 0 {
                count(&EVENTS_MOVED);
            }
            let call = std::mem::take(&mut self.call);
            self.call = format!("{call}, event {k}");
            self.result(i, ret);
            self.call = call;
        }
        self.after_call();
    }

    fn cancel(&mut self, input: &mut Input<'_>) {
        let (id, live) = self.batch(input);
        self.call = format!("hipFileBatchIOCancel({id:#x})");
        let e = hipFileBatchIOCancel(id as hipFileBatchHandle_t);
        let want = if live.is_some() { 0 } else { INVALID };
        assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
        if let Some(b) = live {
            let ops: Vec<usize> = self.batches[b].pending.drain().map(|(_, op)| op).collect();
            self.dropped(ops);
        }
        self.after_call();
    }

    fn destroy(&mut self, input: &mut Input<'_>) {
        let (id, live) = self.batch(input);
        self.call = format!("hipFileBatchIODestroy({id:#x})");
        hipFileBatchIODestroy(id as hipFileBatchHandle_t);
        if let Some(b) = live {
            let batch = self.batches.remove(b);
            self.dropped(batch.pending.into_values());
            self.stale_batches.push(id);
        }
        self.after_call();
    }

    // ------------------------------------------------------------------ streams

    /// Queues one stream-ordered read or write on `slot`. With `held`, the stream is held by
    /// the caller and the outcome is left open (the caller may change the values first).
    fn queue(&mut self, input: &mut Input<'_>, slot: usize, held: bool) {
        let write = input.u8().is_multiple_of(2);
        let handle = self.handle(input);
        let args = self.args(input);
        let nulls = input.u8();
        let null = |bit: u8| nulls & (1 << bit) != 0 && nulls >> 5 == 0; // each 1/8 of the time
        let values = Shared::new(Values {
            size: args.size,
            file_offset: args.file_offset,
            buffer_offset: args.buffer_offset,
            bytes: UNSET,
        });
        let size_p = if null(0) { std::ptr::null_mut() } else { values.size() };
        let foff_p = if null(1) { std::ptr::null_mut() } else { values.file_offset() };
        let boff_p = if null(2) { std::ptr::null_mut() } else { values.buffer_offset() };
        let bytes_p = if null(3) { std::ptr::null_mut() } else { values.bytes() };
        let base = if null(4) { 0 } else { args.base };
        let any_null = base == 0 || size_p.is_null() || foff_p.is_null() || boff_p.is_null() || bytes_p.is_null();
        let stream = self.slots[slot].stream;
        self.call = format!(
            "hipFile{}Async({handle:#x}, {base:#x}, {args:?}, nulls {:#b}, stream {stream:#x})",
            if write { "Write" } else { "Read" },
            if nulls >> 5 == 0 { nulls & 31 } else { 0 }
        );
        // The stream-ordered calls open the driver first, whatever their arguments.
        self.use_count = self.use_count.max(1);
        let args = Args { base, ..args };
        let checked = if any_null {
            Err(vec![INVALID])
        } else if args.size == 0 {
            Ok(None)
        } else if args.file_offset < 0 || args.buffer_offset < 0 {
            Err(vec![INVALID])
        } else {
            match self.check(handle, &args) {
                Err(why) => Err(why.codes().to_vec()),
                Ok(_) if !self.slots[slot].live => Err(vec![HIP_DRIVER]),
                Ok(plan) => Ok(Some(plan)),
            }
        };
        let flags = self.slots[slot].flags.unwrap_or(0);
        // A stream that is not held runs the operation as soon as it can: it is marked now.
        let op = match &checked {
            Ok(Some(plan)) if !held => Some(self.start(write, plan, Some(slot))),
            _ => None,
        };
        let (fh, buffer, stream_p) = (handle as hipFileHandle_t, base as *mut c_void, stream as hipStream_t);
        let e = if write {
            // SAFETY: each pointer is null or valid until the stream has run the operation (the
            // values are freed after synchronizing the stream).
            unsafe { hipFileWriteAsync(fh, buffer, size_p, foff_p, boff_p, bytes_p, stream_p) }
        } else {
            // SAFETY: as above.
            unsafe { hipFileReadAsync(fh, buffer, size_p, foff_p, boff_p, bytes_p, stream_p) }
        };
        match &checked {
            Ok(_) => assert_eq!((e.err, e.hip_drv_err), (0, 0), "{}", self.call),
            Err(codes) if codes == &[HIP_DRIVER] => {
                assert_eq!((e.err, e.hip_drv_err), (HIP_DRIVER, HIP_INVALID_HANDLE), "{}", self.call)
            }
            Err(codes) => {
                assert!(codes.contains(&e.err) && e.hip_drv_err == 0, "{}: {e:?}, expected one of {codes:?}", self.call)
            }
        }
        match checked {
            Ok(None) => {
                assert_eq!(values.result(), 0, "{}: a size of 0 stores 0 at once", self.call);
                values.free();
            }
            Err(_) => {
                // Nothing was queued: the library must not touch the values any more. They are
                // kept until the end, and checked then.
                self.refused.push((values, values.get(), values.result()));
            }
            Ok(Some(plan)) => {
                count(&ASYNC_QUEUED);
                let outcome = match op {
                    Some(i) => Outcome::Runs(i),
                    None => Outcome::Open,
                };
                self.slots[slot].queued.push(Queued {
                    values,
                    write,
                    fd: plan.fd,
                    alloc: plan.alloc,
                    buffer_base: base,
                    buffer_len: plan.buffer_len,
                    flags,
                    submitted: (args.size, args.file_offset, args.buffer_offset),
                    born: self.clock,
                    outcome,
                });
            }
        }
        self.after_call();
    }

    /// Holds a created stream, queues up to three operations on it, maybe changes their values,
    /// lets it go, synchronizes it and checks what each did.
    fn held(&mut self, input: &mut Input<'_>) {
        let slot = 1 + input.u8() as usize % 2;
        let stream = self.slots[slot].stream;
        let flag = Held(Some(Box::new(AtomicBool::new(false))));
        let p = flag.0.as_deref().unwrap() as *const AtomicBool as *mut c_void;
        // SAFETY: `hold` takes the flag, which lives until the stream has been synchronized.
        assert_eq!(unsafe { (self.gpu.launch)(stream as *mut c_void, Some(hold), p) }, 0);
        let first = self.slots[slot].queued.len();
        for _ in 0..1 + input.u8() % 3 {
            self.queue(input, slot, true);
        }
        // Change the values the stream has not read yet, then settle what each should do.
        for k in first..self.slots[slot].queued.len() {
            let q = &self.slots[slot].queued[k];
            let (size, foff, boff) = q.submitted;
            let any = input.u64();
            let new_size =
                input.pick(&[size, size, size, size / 2, size + 1, 0, 1, size.saturating_mul(2), any as usize]);
            let new_foff =
                input.pick(&[foff, foff, foff, foff + 4096, -1, 0, i64::MAX, DATA_LEN as i64, (any >> 8) as i64]);
            let new_boff = input.pick(&[boff, boff, boff, boff + 1, -1, 0, q.buffer_len as i64, (any >> 16) as i64]);
            q.values.set((new_size, new_foff, new_boff)); // the stream is held: nothing reads them
            self.resolve(slot, k);
        }
        flag.0.as_ref().unwrap().store(true, Ordering::Release);
        self.synchronize(slot);
        drop(flag);
    }

    /// What a held operation will do with the values it will read (semantics §12): those its
    /// stream's FIXED flags captured, the others as they are now.
    fn resolve(&mut self, slot: usize, k: usize) {
        let q = &self.slots[slot].queued[k];
        let (sub_size, sub_foff, sub_boff) = q.submitted;
        let (size, foff, boff) = q.values.get();
        let size = if q.flags & 4 != 0 { sub_size } else { size };
        let foff = if q.flags & 2 != 0 { sub_foff } else { foff };
        let boff = if q.flags & 1 != 0 { sub_boff } else { boff };
        let outcome = if size > sub_size {
            Outcome::Result(-i64::from(INVALID))
        } else if size == 0 {
            Outcome::Result(0)
        } else if foff < 0 || boff < 0 {
            Outcome::Result(-i64::from(INVALID))
        } else {
            match plan_io(q.buffer_base, q.buffer_len, size, foff, boff) {
                Err(Refused::Einval) => Outcome::Result(-i64::from(libc::EINVAL)),
                Err(_) => Outcome::Result(-i64::from(INVALID)),
                Ok((at, size, file_offset)) => {
                    let plan = Plan { fd: q.fd, alloc: q.alloc, buffer_len: q.buffer_len, at, size, file_offset };
                    let (write, born) = (q.write, q.born);
                    let i = self.start(write, &plan, Some(slot));
                    self.ops[i].born = born;
                    Outcome::Runs(i)
                }
            }
        };
        self.slots[slot].queued[k].outcome = outcome;
    }

    /// Synchronizes a live stream and checks the results of what it ran.
    fn synchronize(&mut self, slot: usize) {
        let stream = self.slots[slot].stream;
        assert_eq!((self.gpu.synchronize)(stream as *mut c_void), 0, "hipStreamSynchronize");
        for q in std::mem::take(&mut self.slots[slot].queued) {
            let bytes = q.values.result() as i64; // the stream has run it
            let (size, foff, boff) = q.submitted;
            self.call = format!(
                "stream {stream:#x}: {} queued with ({size}, {foff}, {boff}) into {:#x}, flags {:#x}",
                if q.write { "write" } else { "read" },
                q.buffer_base,
                q.flags
            );
            assert!(bytes != UNSET as i64, "{}: no result stored", self.call);
            match q.outcome {
                Outcome::Open => unreachable!("resolved before the stream went on"),
                Outcome::Result(want) => assert_eq!(bytes, want, "{}", self.call),
                Outcome::Runs(i) => {
                    if bytes > 0 {
                        count(&ASYNC_MOVED);
                    }
                    self.result(i, bytes);
                }
            }
        }
    }

    fn stream_register(&mut self, input: &mut Input<'_>) {
        let slot = input.pick(&[0, 0, 1, 1, 2, 2, 3, 4]);
        let any = input.u64() as u32;
        let flags = input.pick(&[0, 1, 2, 4, 7, 8, 0xf, 0x10, any]);
        let s = &mut self.slots[slot];
        self.call = format!("hipFileStreamRegister({:#x}, {flags:#x})", s.stream);
        let e = hipFileStreamRegister(s.stream as hipStream_t, flags);
        let want = if flags > 0xf || s.flags.is_some() { INVALID } else { 0 };
        assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
        if want == 0 {
            s.flags = Some(flags);
        }
        self.after_call();
    }

    fn stream_deregister(&mut self, input: &mut Input<'_>) {
        let slot = input.pick(&[0, 0, 1, 1, 2, 2, 3, 4]);
        let s = &mut self.slots[slot];
        self.call = format!("hipFileStreamDeregister({:#x})", s.stream);
        let e = hipFileStreamDeregister(s.stream as hipStream_t);
        let want = if s.flags.take().is_some() { 0 } else { INVALID };
        assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
        self.after_call();
    }

    // ------------------------------------------------------------------ driver and registrations

    fn open_close(&mut self, input: &mut Input<'_>) {
        if input.u8().is_multiple_of(2) {
            self.call = "hipFileDriverOpen()".into();
            let e = hipFileDriverOpen();
            assert_eq!((e.err, e.hip_drv_err), (0, 0), "{}", self.call);
            self.use_count += 1;
        } else {
            // Closing waits for the transfers in flight (semantics §11, §12): none is held.
            self.call = "hipFileDriverClose()".into();
            let e = hipFileDriverClose();
            let want = if self.use_count == 0 { NOT_INITIALIZED } else { 0 };
            assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
            if self.use_count > 0 {
                self.use_count -= 1;
                if self.use_count == 0 {
                    self.batch_limit = 128; // the defaults are back
                    for f in &mut self.fds {
                        self.stale_handles.extend(f.handle.take());
                    }
                    self.allocs.iter_mut().for_each(|a| a.registered = None);
                    // Batches end with the driver (semantics §2), as a destroy ends them.
                    for batch in std::mem::take(&mut self.batches) {
                        self.dropped(batch.pending.into_values());
                        self.stale_batches.push(batch.id);
                    }
                }
            }
        }
        self.after_call();
    }

    fn register_handles(&mut self) {
        for i in 0..self.fds.len() {
            if self.fds[i].handle.is_some() {
                continue;
            }
            let mut descr: hipFileDescr_t = unsafe_zeroed();
            descr.r#type = 1;
            descr.handle.fd = self.fds[i].fd.as_raw_fd();
            let mut fh: hipFileHandle_t = std::ptr::null_mut();
            self.call = format!("hipFileHandleRegister(fd {i})");
            // SAFETY: both pointers are valid.
            let e = unsafe { hipFileHandleRegister(&mut fh, &mut descr) };
            assert_eq!((e.err, e.hip_drv_err), (0, 0), "{}", self.call);
            self.use_count = self.use_count.max(1);
            self.fds[i].handle = Some(fh as usize);
            self.after_call();
        }
    }

    fn buf_register(&mut self, i: usize, len: usize) {
        let a = &mut self.allocs[i];
        self.call = format!("hipFileBufRegister({:#x}, {len})", a.base);
        let e = hipFileBufRegister(a.base as *const c_void, len, 0);
        self.use_count = self.use_count.max(1);
        let want = if a.registered.is_some() { ALREADY_REGISTERED } else { 0 };
        assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
        if want == 0 {
            a.registered = Some(len);
        }
        self.after_call();
    }

    /// Registration changes while transfers may be in flight (they keep what they found).
    fn registration(&mut self, input: &mut Input<'_>) {
        match input.u8() % 4 {
            0 => self.register_handles(),
            1 => {
                let h = self.handle(input);
                self.call = format!("hipFileHandleDeregister({h:#x})");
                hipFileHandleDeregister(h as hipFileHandle_t);
                for f in self.fds.iter_mut().filter(|f| f.handle == Some(h)) {
                    f.handle = None;
                    self.stale_handles.push(h);
                }
                self.after_call();
            }
            2 => {
                let i = input.u8() as usize % self.allocs.len();
                let len = input.pick(&[self.allocs[i].len, self.allocs[i].len / 2, 4096]);
                self.buf_register(i, len);
            }
            _ => {
                let i = input.u8() as usize % self.allocs.len();
                let a = &mut self.allocs[i];
                self.call = format!("hipFileBufDeregister({:#x})", a.base);
                let e = hipFileBufDeregister(a.base as *const c_void);
                let want = match (self.use_count, a.registered.take()) {
                    (0, _) => CLOSING,
                    (_, Some(_)) => 0,
                    (_, None) => NOT_REGISTERED,
                };
                assert_eq!((e.err, e.hip_drv_err), (want, 0), "{}", self.call);
                self.after_call();
            }
        }
    }

    /// Reaps or checks everything still in flight, then releases it all.
    fn finish(mut self) {
        for slot in 0..3 {
            self.synchronize(slot);
        }
        while let Some(b) = self.batches.first() {
            let (id, outstanding) = (b.id, b.pending.len() as u32);
            if outstanding > 0 {
                // Every event, waiting as long as it takes (they all come).
                let mut events = vec![unsafe_zeroed_event(); outstanding as usize];
                let mut nr = outstanding;
                self.call = format!("hipFileBatchIOGetStatus({id:#x}, {outstanding}, &{outstanding}, events, NULL)");
                // SAFETY: `outstanding` events.
                let e = unsafe {
                    hipFileBatchIOGetStatus(
                        id as hipFileBatchHandle_t,
                        outstanding,
                        &mut nr,
                        events.as_mut_ptr(),
                        std::ptr::null_mut(),
                    )
                };
                assert_eq!((e.err, e.hip_drv_err, nr), (0, 0, outstanding), "{}", self.call);
                for ev in &events {
                    let i = self.batches[0].pending.remove(&(ev.cookie as usize)).expect("a waiting entry's cookie");
                    let ret = ev.ret as i64;
                    let status = if ret >= 0 { STATUS_COMPLETE } else { STATUS_FAILED };
                    assert_eq!(ev.status, status, "{}", self.call);
                    count(&EVENTS);
                    if ret > 0 {
                        count(&EVENTS_MOVED);
                    }
                    self.result(i, ret);
                }
                self.after_call();
            }
            hipFileBatchIODestroy(id as hipFileBatchHandle_t);
            self.batches.remove(0);
        }
        self.settle();
        for s in &mut self.slots {
            if s.flags.take().is_some() {
                assert_eq!(hipFileStreamDeregister(s.stream as hipStream_t).err, 0);
            }
        }
        for f in &mut self.fds {
            if let Some(h) = f.handle.take() {
                hipFileHandleDeregister(h as hipFileHandle_t);
            }
        }
        while hipFileUseCount() > 0 {
            assert_eq!(hipFileDriverClose().err, 0);
        }
        // Nothing of the library runs now: what failed calls were given is as they left it.
        for (values, args, result) in self.refused.drain(..) {
            assert_eq!((values.get(), values.result()), (args, result), "a refused stream-ordered call's values");
            values.free();
        }
        for a in &self.allocs {
            self.hip.free(a.base);
        }
        self.fds.clear();
    }
}

/// `plan_io` of semantics §1, §5: the device address, size (capped) and file offset, or why not.
fn plan_io(
    base: usize,
    buffer_len: usize,
    size: usize,
    file_offset: i64,
    buffer_offset: i64,
) -> Result<(usize, usize, u64), Refused> {
    let (Ok(file_offset), Ok(buffer_offset)) = (u64::try_from(file_offset), usize::try_from(buffer_offset)) else {
        return Err(Refused::Einval);
    };
    if buffer_offset >= buffer_len || size > buffer_len - buffer_offset {
        return Err(Refused::Range);
    }
    let size = size.min(MAX_RW);
    if file_offset.checked_add(size as u64).is_none_or(|end| end > i64::MAX as u64) {
        return Err(Refused::Einval);
    }
    Ok((base + buffer_offset, size, file_offset))
}

/// `n` bytes of file 0 (data) or 1 (scratch) at `offset`, as far as the file goes.
fn file_bytes(file: usize, offset: u64, n: usize) -> Vec<u8> {
    if file == 0 {
        let data = &files().data_bytes;
        let s = (offset as usize).min(data.len());
        return data[s..(s + n).min(data.len())].to_vec();
    }
    let f = std::fs::File::open(&files().scratch).unwrap();
    let mut out = vec![0u8; n];
    let mut done = 0;
    while done < n {
        match f.read_at(&mut out[done..], offset + done as u64).unwrap() {
            0 => break,
            k => done += k,
        }
    }
    out.truncate(done);
    out
}

fn scratch_on_disk_len() -> u64 {
    std::fs::metadata(&files().scratch).unwrap().len()
}

/// The scratch file's first `SCRATCH_CAP` bytes, and its length.
fn scratch_on_disk() -> (Vec<u8>, u64) {
    let len = scratch_on_disk_len();
    (file_bytes(1, 0, (len as usize).min(SCRATCH_CAP)), len)
}

fn unsafe_zeroed() -> hipFileDescr_t {
    // SAFETY: the descriptor is plain C data; all-zero is valid (AMD's example memsets it).
    unsafe { std::mem::zeroed() }
}

fn unsafe_zeroed_event() -> hipFileIOEvents_t {
    hipFileIOEvents_t { cookie: std::ptr::null_mut(), status: 0, ret: 0 }
}
