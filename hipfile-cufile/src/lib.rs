//! hipfile-cufile: `libcufile.so.0`, NVIDIA cuFile's C API (`include/cufile.h`, cuFile 1.20) for
//! the programs written for cuFile (KvikIO, `torch.cuda.gds`, DALI, ...), over hipfile-rs.
//!
//! Every call goes to the process's `libhipfile.so.0`, loaded at the first call: the one beside
//! this library in the install tree (`lib/`, this being `lib/cufile/libcufile.so.0`), else in
//! this library's own directory, else the one the dynamic loader finds. So cuFile's calls and
//! hipFile's share one driver, one use count and one registry in a process that makes both.
//! hipFile's API is cuFile's under other names, with the same codes and layouts (checked against
//! NVIDIA's header by `hipfile-capi/tests/cufile.rs`), so most calls pass through unchanged. The
//! rules that are cuFile's own live here (docs/cufile.md): its version, its driver properties'
//! narrower fields, its statistics levels and controls, its POSIX pool parameters and BAR size.
//! Where no `libhipfile.so.0` can be loaded, every call fails with
//! `CU_FILE_PLATFORM_NOT_SUPPORTED` (`cuFileUseCount` is 0).
//!
//! No panic crosses the boundary: every export runs in `guard`.
#![allow(non_snake_case, non_camel_case_types)]

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_long, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{OnceLock, RwLock};

pub mod newer;
pub mod slabs;
pub mod stats;

pub use hipfile_abi::cufile_h::{CUfileDescr_t as CUfileDescr, CUfileError_t};
use hipfile_abi::hipfile_h::hipFileDriverProps_t;
use hipfile_abi::{OpError, hooks};

/// The cuFile statuses this library gives itself (the rest come from `libhipfile.so.0`).
pub mod status {
    use std::ffi::c_int;

    use hipfile_abi::OpError;
    /// No direct path on this platform; here also: no `libhipfile.so.0` to serve the call.
    pub const PLATFORM_NOT_SUPPORTED: c_int = OpError::PlatformNotSupported.code();
    /// An argument out of range, or a null pointer.
    pub const INVALID_VALUE: c_int = OpError::InvalidValue.code();
    /// A parameter set while the driver is open.
    pub const DRIVER_ALREADY_OPEN: c_int = OpError::DriverAlreadyOpen.code();
    /// cuFile 1.15's answer to `cuFileStatsStart` with statistics at level 0.
    pub const INTERNAL_ERROR: c_int = OpError::InternalError.code();
}
use status::*;

/// The cuFile version served by default: 1000 * major + 10 * minor, as `cuFileGetVersion`
/// reports it. Its API is cuFile 1.20's, its statistics 1.19's layout.
pub const CUFILE_VERSION: c_int = 1200;

/// The cuFile version this library behaves as (docs/cufile.md, "Versions"):
/// `HIPFILE_CUFILE_VERSION=1.15` for programs built against a header older than 1.19 that read
/// statistics (their structures are 1.15's, 112 bytes shorter at level 1); anything else, and
/// unset, is [`CUFILE_VERSION`]. Read once.
pub fn served_version() -> c_int {
    static SERVED: OnceLock<c_int> = OnceLock::new();
    *SERVED.get_or_init(|| match std::env::var("HIPFILE_CUFILE_VERSION").as_deref().map(str::trim) {
        Ok("1.15" | "1150") => 1150,
        _ => CUFILE_VERSION,
    })
}

/// `CUfileDrvProps_t`: cuFile's driver properties (sizes in KiB, most in 32 bits).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CUfileDrvProps_t {
    /// `nvfs`: the direct path's figures.
    pub nvfs: Nvfs,
    /// `fflags`: `CUfileFeatureFlags` bits.
    pub fflags: c_uint,
    /// `max_device_cache_size`.
    pub max_device_cache_size: c_uint,
    /// `per_buffer_cache_size`.
    pub per_buffer_cache_size: c_uint,
    /// `max_device_pinned_mem_size`.
    pub max_device_pinned_mem_size: c_uint,
    /// `max_batch_io_size`: the most entries of a batch.
    pub max_batch_io_size: c_uint,
    /// `max_batch_io_timeout_msecs`.
    pub max_batch_io_timeout_msecs: c_uint,
}

/// The `nvfs` member of `CUfileDrvProps_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Nvfs {
    /// `major_version`.
    pub major_version: c_uint,
    /// `minor_version`.
    pub minor_version: c_uint,
    /// `poll_thresh_size` (KiB).
    pub poll_thresh_size: usize,
    /// `max_direct_io_size` (KiB).
    pub max_direct_io_size: usize,
    /// `dstatusflags`.
    pub dstatusflags: c_uint,
    /// `dcontrolflags`.
    pub dcontrolflags: c_uint,
}

impl From<&hipFileDriverProps_t> for CUfileDrvProps_t {
    fn from(p: &hipFileDriverProps_t) -> Self {
        let narrow = |v: u64| c_uint::try_from(v).unwrap_or(c_uint::MAX);
        CUfileDrvProps_t {
            nvfs: Nvfs {
                major_version: p.nvfs.major_version,
                minor_version: p.nvfs.minor_version,
                poll_thresh_size: p.nvfs.poll_thresh_size as usize,
                max_direct_io_size: p.nvfs.max_direct_io_size as usize,
                dstatusflags: p.nvfs.driver_status_flags,
                dcontrolflags: p.nvfs.driver_control_flags,
            },
            fflags: p.feature_flags,
            max_device_cache_size: narrow(p.max_device_cache_size),
            per_buffer_cache_size: narrow(p.per_buffer_cache_size),
            max_device_pinned_mem_size: narrow(p.max_device_pinned_mem_size),
            max_batch_io_size: p.max_batch_io_count,
            max_batch_io_timeout_msecs: p.max_batch_io_timeout_msecs,
        }
    }
}

/// Runs an export's body; a panic becomes `fallback` instead of unwinding into C.
fn guard<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(fallback)
}

/// Declares the functions taken from `libhipfile.so.0` (the [`Api`] table, filled by name at
/// the first call), and for each the cuFile export that passes its call on unchanged, or
/// answers `fallback` where no `libhipfile.so.0` could be loaded.
macro_rules! hipfile_api {
    (
        passed { $( $(#[$doc:meta])* $export:ident => $field:ident = $symbol:literal
            ( $($arg:ident : $ty:ty),* ) -> $ret:ty, else $fallback:expr; )* }
        used { $( $ufield:ident = $usymbol:literal ( $($uty:ty),* ) -> $uret:ty; )* }
        hooks { $( $hfield:ident = $hname:path : $hty:ty; )* }
    ) => {
        /// The functions of `libhipfile.so.0` this library calls.
        struct Api {
            $( $field: unsafe extern "C" fn($($ty),*) -> $ret, )*
            $( $ufield: unsafe extern "C" fn($($uty),*) -> $uret, )*
            $( $hfield: $hty, )*
        }

        impl Api {
            /// Every function, from `lib`; the first missing one is the error.
            fn from(lib: &libloading::Library) -> Result<Api, libloading::Error> {
                // SAFETY: each symbol is a function of libhipfile with exactly the declared
                // signature (hipfile.h's, or, for the hooks, hipfile-abi's, which hipfile-capi's
                // definitions are checked against).
                unsafe {
                    Ok(Api {
                        $( $field: *lib.get(concat!($symbol, "\0").as_bytes())?, )*
                        $( $ufield: *lib.get(concat!($usymbol, "\0").as_bytes())?, )*
                        $( $hfield: *lib.get($hname.to_bytes_with_nul())?, )*
                    })
                }
            }
        }

        $(
            $(#[$doc])*
            ///
            /// # Safety
            /// As the same call of cuFile (`include/cufile.h`): pointers null or valid for what
            /// the call reads and writes.
            #[unsafe(no_mangle)]
            pub unsafe extern "C" fn $export($($arg: $ty),*) -> $ret {
                guard($fallback, || match api() {
                    // SAFETY: the caller's contract, which is hipFile's for the same call.
                    Some(api) => unsafe { (api.$field)($($arg),*) },
                    None => $fallback,
                })
            }
        )*
    };
}

const UNSERVED: CUfileError_t = CUfileError_t::code(PLATFORM_NOT_SUPPORTED);
const UNSERVED_IO: isize = -(PLATFORM_NOT_SUPPORTED as isize);
/// What a call answers when this library panicked (it never unwinds into C).
const PANICKED: CUfileError_t = CUfileError_t::code(INTERNAL_ERROR);

hipfile_api! {
    passed {
        /// `cuFileBufRegister` (`hipFileBufRegister`).
        cuFileBufRegister => buf_register = "hipFileBufRegister"
            (base: *const c_void, length: usize, flags: c_int) -> CUfileError_t, else UNSERVED;
        /// `cuFileBufDeregister` (`hipFileBufDeregister`).
        cuFileBufDeregister => buf_deregister = "hipFileBufDeregister"
            (base: *const c_void) -> CUfileError_t, else UNSERVED;
        /// `cuFileDriverOpen` (`hipFileDriverOpen`).
        cuFileDriverOpen => driver_open = "hipFileDriverOpen" () -> CUfileError_t, else UNSERVED;
        /// `cuFileUseCount` (`hipFileUseCount`).
        cuFileUseCount => use_count = "hipFileUseCount" () -> c_long, else 0;
        /// `cuFileBatchIOSetUp` (`hipFileBatchIOSetUp`).
        cuFileBatchIOSetUp => batch_setup = "hipFileBatchIOSetUp"
            (batch: *mut *mut c_void, nr: c_uint) -> CUfileError_t, else UNSERVED;
        /// `cuFileBatchIOSubmit` (`hipFileBatchIOSubmit`; the layouts are the same).
        cuFileBatchIOSubmit => batch_submit = "hipFileBatchIOSubmit"
            (batch: *mut c_void, nr: c_uint, iocbp: *mut c_void, flags: c_uint) -> CUfileError_t, else UNSERVED;
        /// `cuFileBatchIOGetStatus` (`hipFileBatchIOGetStatus`).
        cuFileBatchIOGetStatus => batch_status = "hipFileBatchIOGetStatus"
            (batch: *mut c_void, min_nr: c_uint, nr: *mut c_uint, events: *mut c_void, timeout: *mut c_void)
            -> CUfileError_t, else UNSERVED;
        /// `cuFileBatchIOCancel` (`hipFileBatchIOCancel`).
        cuFileBatchIOCancel => batch_cancel = "hipFileBatchIOCancel" (batch: *mut c_void) -> CUfileError_t,
            else UNSERVED;
        /// `cuFileBatchIODestroy` (`hipFileBatchIODestroy`).
        cuFileBatchIODestroy => batch_destroy = "hipFileBatchIODestroy" (batch: *mut c_void) -> (), else ();
        /// `cuFileStreamRegister` (`hipFileStreamRegister`; the flags are the same).
        cuFileStreamRegister => stream_register = "hipFileStreamRegister"
            (stream: *mut c_void, flags: c_uint) -> CUfileError_t, else UNSERVED;
        /// `cuFileStreamDeregister` (`hipFileStreamDeregister`).
        cuFileStreamDeregister => stream_deregister = "hipFileStreamDeregister" (stream: *mut c_void)
            -> CUfileError_t, else UNSERVED;
        /// `cuFileGetParameterSizeT` (the parameters are hipFile's, in the same order).
        cuFileGetParameterSizeT => get_size = "hipFileGetParameterSizeT" (param: c_int, value: *mut usize)
            -> CUfileError_t, else UNSERVED;
        /// `cuFileSetParameterSizeT`: staged for the next open.
        cuFileSetParameterSizeT => set_size = "hipFileSetParameterSizeT" (param: c_int, value: usize)
            -> CUfileError_t, else UNSERVED;
    }
    used {
        driver_close = "hipFileDriverClose" () -> CUfileError_t;
        handle_register = "hipFileHandleRegister" (*mut *mut c_void, *mut CUfileDescr) -> CUfileError_t;
        handle_deregister = "hipFileHandleDeregister" (*mut c_void) -> ();
        read = "hipFileRead" (*mut c_void, *mut c_void, usize, i64, i64) -> isize;
        write = "hipFileWrite" (*mut c_void, *const c_void, usize, i64, i64) -> isize;
        read_async = "hipFileReadAsync"
            (*mut c_void, *mut c_void, *mut usize, *mut i64, *mut i64, *mut isize, *mut c_void) -> CUfileError_t;
        write_async = "hipFileWriteAsync"
            (*mut c_void, *mut c_void, *mut usize, *mut i64, *mut i64, *mut isize, *mut c_void) -> CUfileError_t;
        properties = "hipFileDriverGetProperties" (*mut hipFileDriverProps_t) -> CUfileError_t;
        set_poll_mode = "hipFileDriverSetPollMode" (bool, usize) -> CUfileError_t;
        set_max_direct_io = "hipFileDriverSetMaxDirectIOSize" (usize) -> CUfileError_t;
        set_max_cache = "hipFileDriverSetMaxCacheSize" (usize) -> CUfileError_t;
        set_max_pinned = "hipFileDriverSetMaxPinnedMemSize" (usize) -> CUfileError_t;
        stats_l1 = "hipFileGetStatsL1" (*mut c_void) -> CUfileError_t;
        stats_l2 = "hipFileGetStatsL2" (*mut c_void) -> CUfileError_t;
        stats_l3 = "hipFileGetStatsL3" (*mut c_void) -> CUfileError_t;
        get_bool = "hipFileGetParameterBool" (c_int, *mut bool) -> CUfileError_t;
        get_string = "hipFileGetParameterString" (c_int, *mut c_char, c_int) -> CUfileError_t;
        set_bool = "hipFileSetParameterBool" (c_int, bool) -> CUfileError_t;
        set_string = "hipFileSetParameterString" (c_int, *const c_char) -> CUfileError_t;
    }
    hooks {
        stats_level = hooks::STATS_LEVEL: hooks::StatsLevel;
        stats_reset = hooks::STATS_RESET: hooks::StatsReset;
        parameter_range = hooks::PARAMETER_RANGE: hooks::ParameterRange;
        vector_io = hooks::VECTOR_IO: hooks::VectorIo;
        vector_stats = hooks::VECTOR_STATS: hooks::VectorStats;
    }
}

/// `libhipfile.so.0`'s functions, loaded at the first call (`None`: no library could be): the
/// one already in the process where it is hipfile-rs's (the Python package's extension carries
/// that SONAME), so that cuFile's calls and hipFile's share its driver; else the first of
/// [`candidates`].
fn api() -> Option<&'static Api> {
    static API: OnceLock<Option<Api>> = OnceLock::new();
    API.get_or_init(|| {
        // The library's functions, where it is hipfile-rs's; they stay valid for the life of the
        // process, which keeps the library.
        let functions = |lib: libloading::Library| {
            let api = Api::from(&lib).ok()?;
            std::mem::forget(lib);
            Some(api)
        };
        // SAFETY: RTLD_NOLOAD loads nothing: it finds a library already loaded, whose
        // initialisers have run.
        let loaded = unsafe {
            libloading::os::unix::Library::open(Some("libhipfile.so.0"), libc::RTLD_NOLOAD | libc::RTLD_LAZY)
        };
        loaded.ok().and_then(|lib| functions(lib.into())).or_else(|| {
            candidates().iter().find_map(|path| {
                // SAFETY: loading libhipfile.so.0 runs its initialisers, which only set up its
                // own statics; a library of that name without hipfile-rs's functions is refused.
                functions(unsafe { libloading::Library::new(path) }.ok()?)
            })
        })
    })
    .as_ref()
}

/// Where to look for `libhipfile.so.0`, in order: the install tree's `lib/` above this
/// library, this library's directory (each for the path it was loaded by and, where that is a
/// symbolic link, such as NVIDIA's `libcufile.so.0` pointed at this one, for the file it
/// names), then the loader's search.
fn candidates() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: `dladdr` fills `info` for an address inside a loaded object (this function).
    let found = unsafe { libc::dladdr(candidates as *const c_void, info.as_mut_ptr()) } != 0;
    // SAFETY: zero-initialised, and filled where `dladdr` succeeded.
    let info = unsafe { info.assume_init() };
    if found && !info.dli_fname.is_null() {
        // SAFETY: `dladdr` gives a NUL-terminated path that lives as long as the object.
        let me = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let me = PathBuf::from(std::ffi::OsStr::new(&*me.to_string_lossy()));
        let real = std::fs::canonicalize(&me).ok().filter(|real| *real != me);
        for dir in [Some(me.as_path()), real.as_deref()].into_iter().flatten().filter_map(|p| p.parent()) {
            paths.push(dir.join("../libhipfile.so.0"));
            paths.push(dir.join("libhipfile.so.0"));
        }
    }
    paths.push(PathBuf::from("libhipfile.so.0"));
    paths
}

/// `cuFileGetVersion`: the version served ([`served_version`]); `CU_FILE_INVALID_VALUE` for
/// null. Needs no driver.
///
/// # Safety
/// `version` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetVersion(version: *mut c_int) -> CUfileError_t {
    if version.is_null() {
        return CUfileError_t::code(INVALID_VALUE);
    }
    // SAFETY: non-null, writable by the caller's contract.
    unsafe { version.write(served_version()) };
    CUfileError_t::SUCCESS
}

/// `cuFileDriverGetProperties`: hipFile's properties in cuFile's layout (sizes above 32 bits
/// saturate).
///
/// # Safety
/// `props` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileDriverGetProperties(props: *mut CUfileDrvProps_t) -> CUfileError_t {
    guard(PANICKED, || {
        let Some(api) = api() else { return UNSERVED };
        if props.is_null() {
            return CUfileError_t::code(INVALID_VALUE);
        }
        let mut hip = hipFileDriverProps_t::default();
        // SAFETY: a writable hipFileDriverProps_t.
        let e = unsafe { (api.properties)(&mut hip) };
        if e == CUfileError_t::SUCCESS {
            // SAFETY: non-null, writable by the caller's contract.
            unsafe { props.write(CUfileDrvProps_t::from(&hip)) };
        }
        e
    })
}

/// `CU_FILE_HANDLE_TYPE_OPAQUE_FD`.
const OPAQUE_FD: c_int = hipfile_abi::cufile_h::CU_FILE_HANDLE_TYPE_OPAQUE_FD;

/// `CU_FILE_INVALID_FILE_OPEN_FLAG`.
const INVALID_FILE_OPEN_FLAG: c_int = OpError::InvalidFileOpenFlag.code();

/// The access mode (`O_RDONLY`, `O_WRONLY` or `O_RDWR`) of each registered handle's descriptor
/// when it was registered: cuFile refuses a read of a file opened write-only, and a write of
/// one opened read-only, with `CU_FILE_INVALID_FILE_OPEN_FLAG` before any I/O (KvikIO's tests
/// expect it), where hipFile's calls meet the system's `EBADF`.
/// Read by every `cuFileRead` and `cuFileWrite`, written only by (de)registrations.
static ACCESS: RwLock<BTreeMap<usize, c_int>> = RwLock::new(BTreeMap::new());

fn access_mut() -> std::sync::RwLockWriteGuard<'static, BTreeMap<usize, c_int>> {
    ACCESS.write().unwrap_or_else(|p| p.into_inner())
}

/// Whether `fh` is registered with an access mode that refuses `direction` (`O_WRONLY` for a
/// read, `O_RDONLY` for a write).
fn refused(fh: *mut c_void, refusing: c_int) -> bool {
    ACCESS.read().unwrap_or_else(|p| p.into_inner()).get(&(fh as usize)) == Some(&refusing)
}

/// The results of a call on a registered file in its convention: no library to serve it, the
/// file's access mode refusing it (`CU_FILE_INVALID_FILE_OPEN_FLAG`), a panic.
type Outcomes<T> = (T, T, T);

const IO_OUTCOMES: Outcomes<isize> = (UNSERVED_IO, -(INVALID_FILE_OPEN_FLAG as isize), -(INTERNAL_ERROR as isize));
const STATUS_OUTCOMES: Outcomes<CUfileError_t> = (UNSERVED, CUfileError_t::code(INVALID_FILE_OPEN_FLAG), PANICKED);

/// `call` on file `fh`, unless `fh` was registered with the access mode `refusing` rules
/// out (then the refusal, before any I/O).
fn on_file<T: Copy>(fh: *mut c_void, refusing: c_int, outcomes: Outcomes<T>, call: impl FnOnce(&Api) -> T) -> T {
    let (unserved, refused_by_mode, panicked) = outcomes;
    guard(panicked, || match api() {
        None => unserved,
        Some(_) if refused(fh, refusing) => refused_by_mode,
        Some(api) => call(api),
    })
}

/// `cuFileDriverClose`, the name programs built before CUDA 12.4 call (`hipFileDriverClose`).
/// The last close forgets every registered handle (semantics §2), and their access modes with
/// them.
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverClose() -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) => {
            // SAFETY: takes no arguments.
            let e = unsafe { (api.driver_close)() };
            // SAFETY: takes no arguments.
            if e == CUfileError_t::SUCCESS && unsafe { (api.use_count)() } == 0 {
                access_mut().clear();
            }
            e
        }
    })
}

/// `cuFileDriverClose_v2`, which `cufile.h` names `cuFileDriverClose`: the same call.
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverClose_v2() -> CUfileError_t {
    cuFileDriverClose()
}

/// `cuFileHandleRegister` (`hipFileHandleRegister`), remembering the descriptor's access mode.
///
/// # Safety
/// `fh` and `descr` must each be null or valid (`*fh` writable, `*descr` readable).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileHandleRegister(fh: *mut *mut c_void, descr: *mut CUfileDescr) -> CUfileError_t {
    guard(PANICKED, || {
        let Some(api) = api() else { return UNSERVED };
        // SAFETY: the caller's contract, which is hipFile's.
        let e = unsafe { (api.handle_register)(fh, descr) };
        if e == CUfileError_t::SUCCESS {
            // SAFETY: registered, so `descr` was valid to read.
            let descr = unsafe { &*descr };
            // SAFETY: registered, so `*fh` was written.
            let handle = unsafe { fh.read() };
            let (handle_type, fd) = (descr.r#type, descr.handle as c_int);
            // SAFETY: F_GETFL takes no pointer argument.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if handle_type == OPAQUE_FD && flags >= 0 {
                access_mut().insert(handle as usize, flags & libc::O_ACCMODE);
            }
        }
        e
    })
}

/// `cuFileHandleDeregister` (`hipFileHandleDeregister`).
///
/// # Safety
/// None beyond hipFile's: any handle value is accepted.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileHandleDeregister(fh: *mut c_void) {
    guard((), || {
        access_mut().remove(&(fh as usize));
        if let Some(api) = api() {
            // SAFETY: any handle value is accepted.
            unsafe { (api.handle_deregister)(fh) }
        }
    })
}

/// `cuFileRead` (`hipFileRead`): bytes read; -1 with `errno`; a negative status
/// (`-CU_FILE_INVALID_FILE_OPEN_FLAG` for a file opened write-only).
///
/// # Safety
/// As `hipFileRead`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileRead(
    fh: *mut c_void,
    base: *mut c_void,
    size: usize,
    file_offset: i64,
    buf_offset: i64,
) -> isize {
    // SAFETY: the caller's contract, which is hipFile's.
    on_file(fh, libc::O_WRONLY, IO_OUTCOMES, |api| unsafe { (api.read)(fh, base, size, file_offset, buf_offset) })
}

/// `cuFileWrite` (`hipFileWrite`); `-CU_FILE_INVALID_FILE_OPEN_FLAG` for a file opened
/// read-only.
///
/// # Safety
/// As `hipFileWrite`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileWrite(
    fh: *mut c_void,
    base: *const c_void,
    size: usize,
    file_offset: i64,
    buf_offset: i64,
) -> isize {
    // SAFETY: the caller's contract, which is hipFile's.
    on_file(fh, libc::O_RDONLY, IO_OUTCOMES, |api| unsafe { (api.write)(fh, base, size, file_offset, buf_offset) })
}

/// `cuFileReadAsync` (`hipFileReadAsync`; a `CUstream` is the runtime's stream);
/// `CU_FILE_INVALID_FILE_OPEN_FLAG` for a file opened write-only.
///
/// # Safety
/// As `hipFileReadAsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileReadAsync(
    fh: *mut c_void,
    base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut i64,
    buf_offset_p: *mut i64,
    bytes_read_p: *mut isize,
    stream: *mut c_void,
) -> CUfileError_t {
    // SAFETY: the caller's contract, which is hipFile's.
    on_file(fh, libc::O_WRONLY, STATUS_OUTCOMES, |api| unsafe {
        (api.read_async)(fh, base, size_p, file_offset_p, buf_offset_p, bytes_read_p, stream)
    })
}

/// `cuFileWriteAsync` (`hipFileWriteAsync`); `CU_FILE_INVALID_FILE_OPEN_FLAG` for a file
/// opened read-only.
///
/// # Safety
/// As `hipFileWriteAsync`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileWriteAsync(
    fh: *mut c_void,
    base: *mut c_void,
    size_p: *mut usize,
    file_offset_p: *mut i64,
    buf_offset_p: *mut i64,
    bytes_written_p: *mut isize,
    stream: *mut c_void,
) -> CUfileError_t {
    // SAFETY: the caller's contract, which is hipFile's.
    on_file(fh, libc::O_RDONLY, STATUS_OUTCOMES, |api| unsafe {
        (api.write_async)(fh, base, size_p, file_offset_p, buf_offset_p, bytes_written_p, stream)
    })
}

/// A driver setter's result as cuFile gives it: NVIDIA's library accepts these while the
/// driver is open, where hipFile's stage them for the next open and refuse an open driver
/// (`CU_FILE_DRIVER_ALREADY_OPEN`). Here the running driver keeps its settings and the call
/// succeeds, changing nothing (docs/cufile.md).
fn setter(call: impl FnOnce(&Api) -> CUfileError_t) -> CUfileError_t {
    guard(PANICKED, || match api().map(call) {
        None => UNSERVED,
        Some(e) if e.err == DRIVER_ALREADY_OPEN => CUfileError_t::SUCCESS,
        Some(e) => e,
    })
}

/// `cuFileDriverSetPollMode`: staged for the next open (accepted while the driver is open, changing nothing then).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverSetPollMode(poll: bool, threshold_kb: usize) -> CUfileError_t {
    // SAFETY: plain values.
    setter(|api| unsafe { (api.set_poll_mode)(poll, threshold_kb) })
}

/// `cuFileDriverSetMaxDirectIOSize` (KiB): staged for the next open (accepted while the driver is open, changing nothing then).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverSetMaxDirectIOSize(kb: usize) -> CUfileError_t {
    // SAFETY: a plain value.
    setter(|api| unsafe { (api.set_max_direct_io)(kb) })
}

/// `cuFileDriverSetMaxCacheSize` (KiB): staged for the next open (accepted while the driver is open, changing nothing then).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverSetMaxCacheSize(kb: usize) -> CUfileError_t {
    // SAFETY: a plain value.
    setter(|api| unsafe { (api.set_max_cache)(kb) })
}

/// `cuFileDriverSetMaxPinnedMemSize` (KiB): staged for the next open (accepted while the driver is open, changing nothing then).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverSetMaxPinnedMemSize(kb: usize) -> CUfileError_t {
    // SAFETY: a plain value.
    setter(|api| unsafe { (api.set_max_pinned)(kb) })
}

/// `cuFileGetParameterMinMaxValue`: the values a size parameter takes here.
///
/// # Safety
/// `min` and `max` must each be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterMinMaxValue(
    param: c_int,
    min: *mut usize,
    max: *mut usize,
) -> CUfileError_t {
    guard(PANICKED, || match api() {
        // SAFETY: the caller's contract, which is the hook's.
        Some(api) => unsafe { (api.parameter_range)(param, min, max) }.into(),
        None => UNSERVED,
    })
}

#[cfg(test)]
mod tests;
