//! What cuFile 1.16-1.20 added (docs/cufile.md, "Versions"): vector I/O (`cuFileReadv`,
//! `cuFileWritev`) through the library's data path; the P2P flags and the PCIe topology export,
//! answered as NVIDIA's library answers on a machine without the GDS kernel module; and the
//! parameters 1.20 added to hipFile's (`PROPERTIES_POSIX_IO_MODE`, `GDS_FALLBACK_IO`,
//! `RDMA_TRANSPORT`), kept and read back. The parameters hipFile has pass through to it.

use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::sync::Mutex;

use hipfile_abi::cufile_h::CUfileIOVec_t;

use crate::status::*;
use crate::{Api, CUfileError_t, IO_OUTCOMES, PANICKED, UNSERVED, api, guard, on_file};

/// `CU_FILE_DRIVER_NOT_INITIALIZED`.
const NOT_INITIALIZED: c_int = hipfile_abi::OpError::DriverNotInitialized.code();

/// `cuFileReadv` (cuFile 1.19): `iovcnt` buffers, device or host memory, registered or not,
/// filled in order from `file_offset` on; the bytes read (fewer at the end of the file), -1
/// with `errno`, or a negative status. `flags` must be 0; a file opened write-only is
/// `-CU_FILE_INVALID_FILE_OPEN_FLAG`, as `cuFileRead`.
///
/// # Safety
/// `iov` must be null or readable for `iovcnt` vectors, each valid as `cuFileRead`'s buffer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileReadv(
    fh: *mut c_void,
    iov: *const CUfileIOVec_t,
    iovcnt: usize,
    file_offset: i64,
    flags: c_uint,
) -> isize {
    // SAFETY: the caller's contract.
    unsafe { vector_io(0, fh, iov, iovcnt, file_offset, flags) }
}

/// `cuFileWritev` (cuFile 1.19): as [`cuFileReadv`], writing; a file opened read-only is
/// `-CU_FILE_INVALID_FILE_OPEN_FLAG`.
///
/// # Safety
/// As [`cuFileReadv`], each vector readable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileWritev(
    fh: *mut c_void,
    iov: *const CUfileIOVec_t,
    iovcnt: usize,
    file_offset: i64,
    flags: c_uint,
) -> isize {
    // SAFETY: the caller's contract.
    unsafe { vector_io(1, fh, iov, iovcnt, file_offset, flags) }
}

/// # Safety
/// As [`cuFileReadv`].
unsafe fn vector_io(
    write: c_int,
    fh: *mut c_void,
    iov: *const CUfileIOVec_t,
    n: usize,
    offset: i64,
    flags: c_uint,
) -> isize {
    let refusing = if write == 0 { libc::O_WRONLY } else { libc::O_RDONLY };
    // SAFETY: the caller's contract, which is the hook's.
    on_file(fh, refusing, IO_OUTCOMES, |api| unsafe { (api.vector_io)(write, fh, iov, n, offset, flags) })
}

/// The file systems cuFile 1.20 knows (`CUfileDriverStatusFlags_t`, 0 to 14).
const FILE_SYSTEMS: usize = 15;
/// `CU_FILE_P2P_FLAG_PCI_P2PDMA`: the one flag cuFile takes on x86-64 (`C2C` on Arm).
const P2P_ALLOWED: c_int = if cfg!(target_arch = "aarch64") { 1 << 3 } else { 1 };

/// The P2P flags set per file system (none until set, as without the GDS module).
static P2P_FLAGS: Mutex<[c_int; FILE_SYSTEMS]> = Mutex::new([0; FILE_SYSTEMS]);

/// Whether the driver is open.
fn open(api: &Api) -> bool {
    // SAFETY: no arguments.
    unsafe { (api.use_count)() > 0 }
}

/// `cuFileDriverGetP2PFlags` (cuFile 1.16): the flags of file system `fs`: 0 where none were
/// set, as NVIDIA's library answers without the GDS module. `CU_FILE_INVALID_VALUE` for a null
/// pointer or an unknown file system, `CU_FILE_DRIVER_NOT_INITIALIZED` while the driver is
/// closed.
///
/// # Safety
/// `flags` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileDriverGetP2PFlags(fs: c_int, flags: *mut c_int) -> CUfileError_t {
    guard(PANICKED, || {
        let Some(api) = api() else { return UNSERVED };
        let Some(i) = usize::try_from(fs).ok().filter(|&i| i < FILE_SYSTEMS && !flags.is_null()) else {
            return CUfileError_t::code(INVALID_VALUE);
        };
        if !open(api) {
            return CUfileError_t::code(NOT_INITIALIZED);
        }
        let set = P2P_FLAGS.lock().unwrap_or_else(|p| p.into_inner())[i];
        // SAFETY: non-null, writable by the caller's contract.
        unsafe { flags.write(set) };
        CUfileError_t::SUCCESS
    })
}

/// `cuFileDriverSetP2PFlags` (cuFile 1.16): sets file system `fs`'s flags, which may only be
/// the platform's (`CU_FILE_P2P_FLAG_PCI_P2PDMA` on x86-64, `C2C` on Arm) or none;
/// `CU_FILE_INVALID_VALUE` otherwise, as NVIDIA's library answers (`CU_FILE_NVFS`, say).
#[unsafe(no_mangle)]
pub extern "C" fn cuFileDriverSetP2PFlags(fs: c_int, flags: c_int) -> CUfileError_t {
    guard(PANICKED, || {
        let Some(api) = api() else { return UNSERVED };
        let Some(i) = usize::try_from(fs).ok().filter(|&i| i < FILE_SYSTEMS && flags & !P2P_ALLOWED == 0) else {
            return CUfileError_t::code(INVALID_VALUE);
        };
        if !open(api) {
            return CUfileError_t::code(NOT_INITIALIZED);
        }
        P2P_FLAGS.lock().unwrap_or_else(|p| p.into_inner())[i] = flags;
        CUfileError_t::SUCCESS
    })
}

/// `cuFileExportPCIeTopology` (cuFile 1.17): the PCIe topology the direct path would use.
/// There is none to export here: `CU_FILE_INTERNAL_ERROR` and no file, as NVIDIA's library
/// answers without the GDS module; `CU_FILE_INVALID_VALUE` for a null or empty name.
///
/// # Safety
/// `filename` must be null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileExportPCIeTopology(filename: *const c_char) -> CUfileError_t {
    guard(PANICKED, || {
        let Some(_) = api() else { return UNSERVED };
        // SAFETY: non-null, NUL-terminated by the caller's contract.
        if filename.is_null() || unsafe { CStr::from_ptr(filename) }.is_empty() {
            return CUfileError_t::code(INVALID_VALUE);
        }
        CUfileError_t::code(INTERNAL_ERROR)
    })
}

/// cuFile 1.20's Boolean parameters beyond hipFile's: `PROPERTIES_POSIX_IO_MODE` (12) and
/// `GDS_FALLBACK_IO` (13), both false by default.
static BOOLS: Mutex<[bool; 2]> = Mutex::new([false; 2]);
const FIRST_NEW_BOOL: c_int = 12;
/// cuFile 1.20's string parameter beyond hipFile's: `RDMA_TRANSPORT` (3).
const RDMA_TRANSPORT: c_int = 3;
/// The RDMA transports cuFile 1.20 takes; the first is its default.
const TRANSPORTS: [&str; 2] = ["DC_V1", "EXT_RC_V1"];
static TRANSPORT: Mutex<&str> = Mutex::new(TRANSPORTS[0]);

/// The index of a 1.20 Boolean parameter in [`BOOLS`].
fn new_bool(param: c_int) -> Option<usize> {
    usize::try_from(param - FIRST_NEW_BOOL).ok().filter(|&i| i < 2)
}

/// `cuFileGetParameterBool`: hipFile's parameters, and 1.20's two more.
///
/// # Safety
/// `value` must be null or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterBool(param: c_int, value: *mut bool) -> CUfileError_t {
    guard(PANICKED, || match (api(), new_bool(param)) {
        (None, _) => UNSERVED,
        (Some(_), Some(_)) if value.is_null() => CUfileError_t::code(INVALID_VALUE),
        (Some(_), Some(i)) => {
            // SAFETY: non-null, writable by the caller's contract.
            unsafe { value.write(BOOLS.lock().unwrap_or_else(|p| p.into_inner())[i]) };
            CUfileError_t::SUCCESS
        }
        // SAFETY: the caller's contract, which is hipFile's.
        (Some(api), None) => unsafe { (api.get_bool)(param, value) },
    })
}

/// `cuFileSetParameterBool`: staged for the next open; `CU_FILE_DRIVER_ALREADY_OPEN` while it
/// is open.
#[unsafe(no_mangle)]
pub extern "C" fn cuFileSetParameterBool(param: c_int, value: bool) -> CUfileError_t {
    guard(PANICKED, || match (api(), new_bool(param)) {
        (None, _) => UNSERVED,
        (Some(api), Some(_)) if open(api) => CUfileError_t::code(DRIVER_ALREADY_OPEN),
        (Some(_), Some(i)) => {
            BOOLS.lock().unwrap_or_else(|p| p.into_inner())[i] = value;
            CUfileError_t::SUCCESS
        }
        // SAFETY: plain values.
        (Some(api), None) => unsafe { (api.set_bool)(param, value) },
    })
}

/// `cuFileGetParameterString`: hipFile's parameters, and 1.20's `RDMA_TRANSPORT`
/// (`CU_FILE_INVALID_VALUE` where `len` leaves no room for it and its NUL).
///
/// # Safety
/// `value` must be null or writable for `len` bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileGetParameterString(param: c_int, value: *mut c_char, len: c_int) -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(_) if param == RDMA_TRANSPORT => {
            let transport = *TRANSPORT.lock().unwrap_or_else(|p| p.into_inner());
            if value.is_null() || usize::try_from(len).is_ok_and(|l| l <= transport.len()) || len < 0 {
                return CUfileError_t::code(INVALID_VALUE);
            }
            // SAFETY: writable for `len` bytes, more than the name and its NUL.
            let out = unsafe { std::slice::from_raw_parts_mut(value.cast::<u8>(), transport.len() + 1) };
            out[..transport.len()].copy_from_slice(transport.as_bytes());
            out[transport.len()] = 0;
            CUfileError_t::SUCCESS
        }
        // SAFETY: the caller's contract, which is hipFile's.
        Some(api) => unsafe { (api.get_string)(param, value, len) },
    })
}

/// `cuFileSetParameterString`: staged for the next open. `RDMA_TRANSPORT` takes `DC_V1` or
/// `EXT_RC_V1` (`CU_FILE_INVALID_VALUE` otherwise, checked first), and
/// `CU_FILE_DRIVER_ALREADY_OPEN` while the driver is open.
///
/// # Safety
/// `value` must be null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn cuFileSetParameterString(param: c_int, value: *const c_char) -> CUfileError_t {
    guard(PANICKED, || match api() {
        None => UNSERVED,
        Some(api) if param == RDMA_TRANSPORT => {
            // SAFETY: non-null, NUL-terminated by the caller's contract.
            let given = (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) });
            let Some(&known) = TRANSPORTS.iter().find(|t| given.is_some_and(|g| g.to_bytes() == t.as_bytes())) else {
                return CUfileError_t::code(INVALID_VALUE);
            };
            if open(api) {
                return CUfileError_t::code(DRIVER_ALREADY_OPEN);
            }
            *TRANSPORT.lock().unwrap_or_else(|p| p.into_inner()) = known;
            CUfileError_t::SUCCESS
        }
        // SAFETY: the caller's contract, which is hipFile's.
        Some(api) => unsafe { (api.set_string)(param, value) },
    })
}
