//! The C types of `hipfile.h` that cross the boundary, and the boundary itself: no panic
//! escapes, every result takes hipFile's C convention.
#![allow(non_camel_case_types)]

use std::ffi::{c_int, c_void};
use std::panic::AssertUnwindSafe;

use hipfile::boundary::error::ssize_result;
use hipfile::{OpError, Result};

/// `hipFileOpError_t`: an `int`-sized enum in C, taken as an `int` and validated.
pub type hipFileOpError_t = c_int;
/// `hipError_t`: the HIP runtime's `int`-sized error enum.
pub type hipError_t = c_int;
/// `hipFileFileHandleType_t`: taken as an `int` and validated.
pub type hipFileFileHandleType_t = c_int;
/// `hipFileHandle_t`: an opaque key of the driver's registry, never a pointer to memory.
pub type hipFileHandle_t = *mut c_void;
/// `hoff_t` (`off_t`).
pub type hoff_t = libc::off_t;

/// `hipFileSizeTConfigParameter_t`: taken as an `int` and validated.
pub type hipFileSizeTConfigParameter_t = c_int;
/// `hipFileBoolConfigParameter_t`: taken as an `int` and validated.
pub type hipFileBoolConfigParameter_t = c_int;
/// `hipFileStringConfigParameter_t`: taken as an `int` and validated.
pub type hipFileStringConfigParameter_t = c_int;

pub use hipfile_abi::hipfile_h::{hipFileDriverProps_t, hipFileDriverPropsNvfs, hipFileError_t};

/// The C form of the driver's properties.
pub fn c_properties(p: hipfile::DriverProperties) -> hipFileDriverProps_t {
    {
        hipFileDriverProps_t {
            nvfs: hipFileDriverPropsNvfs {
                major_version: p.version.0,
                minor_version: p.version.1,
                poll_thresh_size: p.poll_threshold_kb,
                max_direct_io_size: p.max_direct_io_kb,
                driver_status_flags: p.status_flags,
                driver_control_flags: p.control_flags,
            },
            feature_flags: p.feature_flags,
            max_device_cache_size: p.max_device_cache_kb,
            per_buffer_cache_size: p.per_buffer_cache_kb,
            max_device_pinned_mem_size: p.max_pinned_kb,
            max_batch_io_count: p.max_batch_io_count,
            max_batch_io_timeout_msecs: p.max_batch_io_timeout_ms,
        }
    }
}

/// `hipStream_t`: the runtime's stream handle (null: the default stream).
pub type hipStream_t = *mut c_void;

/// `hipFileBatchHandle_t`: an opaque key of the driver's batch registry.
pub type hipFileBatchHandle_t = *mut c_void;

/// `hipFileBatch`, the one `hipFileBatchMode_t`.
pub const BATCH_MODE: c_int = 1;
/// `hipFileBatchRead` and `hipFileBatchWrite` (`hipFileOpcode_t`).
pub const BATCH_READ: c_int = 0;
/// See [`BATCH_READ`].
pub const BATCH_WRITE: c_int = 1;
/// `hipFileComplete` and `hipFileFailed` (`hipFileStatus_t`).
pub const STATUS_COMPLETE: c_int = 1 << 4;
/// See [`STATUS_COMPLETE`].
pub const STATUS_FAILED: c_int = 1 << 6;

/// The `batch` member of `hipFileIOParams_t`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipFileBatchParams {
    /// The buffer (registered, or any device allocation).
    pub devPtr_base: *mut c_void,
    /// Where in the file.
    pub file_offset: i64,
    /// Where in the buffer.
    pub devPtr_offset: i64,
    /// Bytes to move.
    pub size: usize,
}

/// The union of `hipFileIOParams_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union hipFileIOParamsUnion {
    /// The one member.
    pub batch: hipFileBatchParams,
}

/// `hipFileIOParams_t`: one batch entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipFileIOParams_t {
    /// A `hipFileBatchMode_t`, taken as an `int` and validated.
    pub mode: c_int,
    /// The entry.
    pub u: hipFileIOParamsUnion,
    /// The registered file.
    pub fh: hipFileHandle_t,
    /// A `hipFileOpcode_t`, taken as an `int` and validated.
    pub opcode: c_int,
    /// The caller's value, given back with the event.
    pub cookie: *mut c_void,
}

/// `hipFileIOEvents_t`: one finished entry.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipFileIOEvents_t {
    /// The entry's cookie.
    pub cookie: *mut c_void,
    /// A `hipFileStatus_t`.
    pub status: c_int,
    /// Bytes moved, or a negative error in a `size_t`.
    pub ret: usize,
}

/// `hipFileOpCounter_t`: calls that succeeded and failed.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct hipFileOpCounter_t {
    pub(crate) ok: u64,
    pub(crate) err: u64,
}

/// `hipFileStatsLevel1_t` (semantics §14 says what each field counts here).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hipFileStatsLevel1_t {
    pub(crate) read_ops: hipFileOpCounter_t,
    pub(crate) write_ops: hipFileOpCounter_t,
    pub(crate) hdl_register_ops: hipFileOpCounter_t,
    pub(crate) hdl_deregister_ops: hipFileOpCounter_t,
    pub(crate) buf_register_ops: hipFileOpCounter_t,
    pub(crate) buf_deregister_ops: hipFileOpCounter_t,
    pub(crate) read_bytes: u64,
    pub(crate) write_bytes: u64,
    pub(crate) read_bw_bytes_per_sec: u64,
    pub(crate) write_bw_bytes_per_sec: u64,
    pub(crate) read_lat_avg_us: u64,
    pub(crate) write_lat_avg_us: u64,
    pub(crate) read_ops_per_sec: u64,
    pub(crate) write_ops_per_sec: u64,
    pub(crate) read_lat_sum_us: u64,
    pub(crate) write_lat_sum_us: u64,
    pub(crate) batch_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_complete_ops: hipFileOpCounter_t,
    pub(crate) batch_setup_ops: hipFileOpCounter_t,
    pub(crate) batch_cancel_ops: hipFileOpCounter_t,
    pub(crate) batch_destroy_ops: hipFileOpCounter_t,
    pub(crate) batch_enqueued_ops: hipFileOpCounter_t,
    pub(crate) batch_posix_enqueued_ops: hipFileOpCounter_t,
    pub(crate) batch_processed_ops: hipFileOpCounter_t,
    pub(crate) batch_posix_processed_ops: hipFileOpCounter_t,
    pub(crate) batch_nvfs_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_p2p_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_aio_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_iouring_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_mixed_io_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_total_submit_ops: hipFileOpCounter_t,
    pub(crate) batch_read_bytes: u64,
    pub(crate) batch_write_bytes: u64,
    pub(crate) batch_read_bw_bytes: u64,
    pub(crate) batch_write_bw_bytes: u64,
    pub(crate) batch_submit_lat_avg_us: u64,
    pub(crate) batch_completion_lat_avg_us: u64,
    pub(crate) batch_submit_ops_per_sec: u64,
    pub(crate) batch_complete_ops_per_sec: u64,
    pub(crate) batch_submit_lat_sum_us: u64,
    pub(crate) batch_completion_lat_sum_us: u64,
    pub(crate) last_batch_read_bytes: u64,
    pub(crate) last_batch_write_bytes: u64,
}

/// `hipFileStatsLevel2_t`: level 1 and the size histograms (KiB classes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hipFileStatsLevel2_t {
    pub(crate) basic: hipFileStatsLevel1_t,
    pub(crate) read_size_kb_hist: [u64; 32],
    pub(crate) write_size_kb_hist: [u64; 32],
}

/// `hipFilePerGpuStats_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hipFilePerGpuStats_t {
    pub(crate) uuid: [u8; 16],
    pub(crate) read_bytes: u64,
    pub(crate) read_bw_bytes_per_sec: u64,
    pub(crate) read_utilization: u64,
    pub(crate) read_duration_us: u64,
    pub(crate) n_total_reads: u64,
    pub(crate) n_p2p_reads: u64,
    pub(crate) n_nvfs_reads: u64,
    pub(crate) n_posix_reads: u64,
    pub(crate) n_unaligned_reads: u64,
    pub(crate) n_dr_reads: u64,
    pub(crate) n_sparse_regions: u64,
    pub(crate) n_inline_regions: u64,
    pub(crate) n_reads_err: u64,
    pub(crate) write_bytes: u64,
    pub(crate) write_bw_bytes_per_sec: u64,
    pub(crate) write_utilization: u64,
    pub(crate) write_duration_us: u64,
    pub(crate) n_total_writes: u64,
    pub(crate) n_p2p_writes: u64,
    pub(crate) n_nvfs_writes: u64,
    pub(crate) n_posix_writes: u64,
    pub(crate) n_unaligned_writes: u64,
    pub(crate) n_dr_writes: u64,
    pub(crate) n_writes_err: u64,
    pub(crate) n_mmap: u64,
    pub(crate) n_mmap_ok: u64,
    pub(crate) n_mmap_err: u64,
    pub(crate) n_mmap_free: u64,
    pub(crate) reg_bytes: u64,
}

/// `hipFileStatsLevel3_t`: level 2 and each GPU's figures.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct hipFileStatsLevel3_t {
    pub(crate) detailed: hipFileStatsLevel2_t,
    pub(crate) num_gpus: u32,
    /// The C structure's implicit padding, named so that writing the structure writes these
    /// bytes too (zero): padding a Rust value leaves undefined would reach the caller's memory.
    pub(crate) padding: u32,
    pub(crate) per_gpu_stats: [hipFilePerGpuStats_t; 16],
}

const _: () = assert!(std::mem::size_of::<hipFileStatsLevel1_t>() == 512);
const _: () = assert!(std::mem::size_of::<hipFileStatsLevel2_t>() == 1024);
const _: () = assert!(std::mem::size_of::<hipFilePerGpuStats_t>() == 248);
const _: () = assert!(std::mem::size_of::<hipFileStatsLevel3_t>() == 1024 + 8 + 16 * 248);
// No implicit padding left: the fields end where the next begins.
const _: () = assert!(std::mem::offset_of!(hipFileStatsLevel3_t, per_gpu_stats) == 1024 + 4 + 4);

impl From<&hipfile::stats::Snapshot> for hipFileStatsLevel1_t {
    /// What each field counts: semantics §14.
    fn from(s: &hipfile::stats::Snapshot) -> Self {
        use hipfile::Direction::{Read, Write};
        use hipfile::stats::Counter as E;
        let e = |counter| s.get(counter);
        let pair = |ok, err| hipFileOpCounter_t { ok: e(ok), err: e(err) };
        let (r, w) = (s.totals(Read, None, None), s.totals(Write, None, None));
        let per_second = |n: u64, us: u64| if us == 0 { 0 } else { (n as u128 * 1_000_000 / us as u128) as u64 };
        let (submit_us, completion_us) = (s.micros(E::BatchSubmitTime), s.micros(E::BatchCompletionTime));
        let completed = e(E::BatchCompleteOk).saturating_add(e(E::BatchCompleteErr));
        let (last_read, last_write) = s.last_batch();
        hipFileStatsLevel1_t {
            read_ops: hipFileOpCounter_t { ok: r.ok, err: r.err },
            write_ops: hipFileOpCounter_t { ok: w.ok, err: w.err },
            hdl_register_ops: pair(E::HandleRegisterOk, E::HandleRegisterErr),
            hdl_deregister_ops: pair(E::HandleDeregisterOk, E::HandleDeregisterErr),
            buf_register_ops: pair(E::BufRegisterOk, E::BufRegisterErr),
            buf_deregister_ops: pair(E::BufDeregisterOk, E::BufDeregisterErr),
            read_bytes: r.bytes,
            write_bytes: w.bytes,
            read_bw_bytes_per_sec: r.bandwidth(),
            write_bw_bytes_per_sec: w.bandwidth(),
            read_lat_avg_us: r.latency_avg_us(),
            write_lat_avg_us: w.latency_avg_us(),
            read_ops_per_sec: r.ops_per_second(),
            write_ops_per_sec: w.ops_per_second(),
            read_lat_sum_us: r.micros,
            write_lat_sum_us: w.micros,
            batch_submit_ops: pair(E::BatchSubmitOk, E::BatchSubmitErr),
            batch_complete_ops: pair(E::BatchCompleteOk, E::BatchCompleteErr),
            batch_setup_ops: pair(E::BatchSetupOk, E::BatchSetupErr),
            batch_cancel_ops: pair(E::BatchCancelOk, E::BatchCancelErr),
            batch_destroy_ops: hipFileOpCounter_t { ok: e(E::BatchDestroy), err: 0 },
            batch_enqueued_ops: hipFileOpCounter_t { ok: e(E::BatchEntries), err: 0 },
            batch_posix_enqueued_ops: hipFileOpCounter_t { ok: e(E::BatchEntriesBounce), err: 0 },
            batch_processed_ops: pair(E::BatchCompleteOk, E::BatchCompleteErr),
            batch_nvfs_submit_ops: hipFileOpCounter_t { ok: e(E::BatchEntriesP2p), err: 0 },
            batch_total_submit_ops: hipFileOpCounter_t { ok: e(E::BatchEntries), err: 0 },
            batch_read_bytes: e(E::BatchReadBytes),
            batch_write_bytes: e(E::BatchWriteBytes),
            batch_read_bw_bytes: per_second(e(E::BatchReadBytes), completion_us),
            batch_write_bw_bytes: per_second(e(E::BatchWriteBytes), completion_us),
            batch_submit_lat_avg_us: submit_us.checked_div(e(E::BatchSubmitOk)).unwrap_or(0),
            batch_completion_lat_avg_us: completion_us.checked_div(completed).unwrap_or(0),
            batch_submit_ops_per_sec: per_second(e(E::BatchSubmitOk), submit_us),
            batch_complete_ops_per_sec: per_second(completed, completion_us),
            batch_submit_lat_sum_us: submit_us,
            batch_completion_lat_sum_us: completion_us,
            last_batch_read_bytes: last_read,
            last_batch_write_bytes: last_write,
            ..Default::default()
        }
    }
}

impl From<&hipfile::stats::Snapshot> for hipFileStatsLevel2_t {
    fn from(s: &hipfile::stats::Snapshot) -> Self {
        let histogram = |d| {
            let mut h = [0u64; 32];
            h.iter_mut().zip(s.size_histogram(d)).for_each(|(a, b)| *a = b);
            h
        };
        hipFileStatsLevel2_t {
            basic: s.into(),
            read_size_kb_hist: histogram(hipfile::Direction::Read),
            write_size_kb_hist: histogram(hipfile::Direction::Write),
        }
    }
}

impl From<&hipfile::stats::Snapshot> for hipFileStatsLevel3_t {
    fn from(s: &hipfile::stats::Snapshot) -> Self {
        use hipfile::Direction::{Read, Write};
        use hipfile::stats::Path::{Bounce, P2p};
        let mut out = hipFileStatsLevel3_t { detailed: s.into(), ..Default::default() };
        for g in s.gpus_used() {
            let (r, w) = (s.totals(Read, None, Some(g)), s.totals(Write, None, Some(g)));
            let ok = |d, p| s.totals(d, Some(p), Some(g)).ok;
            out.per_gpu_stats[g] = hipFilePerGpuStats_t {
                read_bytes: r.bytes,
                read_bw_bytes_per_sec: r.bandwidth(),
                read_duration_us: r.micros,
                n_total_reads: r.ok,
                n_nvfs_reads: ok(Read, P2p),
                n_posix_reads: ok(Read, Bounce),
                n_unaligned_reads: r.unaligned,
                n_reads_err: r.err,
                write_bytes: w.bytes,
                write_bw_bytes_per_sec: w.bandwidth(),
                write_duration_us: w.micros,
                n_total_writes: w.ok,
                n_nvfs_writes: ok(Write, P2p),
                n_posix_writes: ok(Write, Bounce),
                n_unaligned_writes: w.unaligned,
                n_writes_err: w.err,
                reg_bytes: s.registered_bytes(g),
                ..Default::default()
            };
            out.num_gpus = out.num_gpus.max(g as u32 + 1);
        }
        out
    }
}

/// `hipFileHandleTypeOpaqueFD`.
pub const HANDLE_TYPE_OPAQUE_FD: c_int = 1;
/// `hipFileHandleTypeOpaqueWin32`.
pub const HANDLE_TYPE_OPAQUE_WIN32: c_int = 2;
/// `hipFileHandleTypeUserspaceFS`.
pub const HANDLE_TYPE_USERSPACE_FS: c_int = 3;

/// `hipFileError_t` from a Rust result: the C form of `result`.
pub trait FromResult {
    /// `{hipFileSuccess, hipSuccess}` for `Ok`, else the error's pair.
    fn from_result(result: Result<()>) -> Self;
}

impl FromResult for hipFileError_t {
    fn from_result(result: Result<()>) -> Self {
        match result {
            Ok(()) => Self::SUCCESS,
            Err(e) => {
                let (err, hip_drv_err) = e.to_c_pair();
                hipFileError_t { err, hip_drv_err }
            }
        }
    }
}

/// The `handle` union of `hipFileDescr_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union hipFileDescrHandle {
    /// A POSIX file descriptor (`hipFileHandleTypeOpaqueFD`).
    pub fd: c_int,
    /// A Windows handle (`hipFileHandleTypeOpaqueWin32`, not supported).
    pub hFile: *mut c_void,
}

/// `hipFileDescr_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct hipFileDescr_t {
    /// A `hipFileFileHandleType_t`.
    pub r#type: hipFileFileHandleType_t,
    /// The descriptor.
    pub handle: hipFileDescrHandle,
    /// `const hipFileFSOps_t *` (user-space file systems, not supported).
    pub fs_ops: *const c_void,
}

const _: () = assert!(std::mem::size_of::<hipFileError_t>() == 8);
const _: () = assert!(std::mem::size_of::<hipFileDescr_t>() == 24);
const _: () = assert!(std::mem::offset_of!(hipFileDescr_t, handle) == 8);
const _: () = assert!(std::mem::offset_of!(hipFileDescr_t, fs_ops) == 16);

/// What an export returns when its body panicked.
pub trait OnPanic {
    /// The value that reports an internal error in the export's convention.
    fn on_panic() -> Self;
}

impl OnPanic for hipFileError_t {
    fn on_panic() -> Self {
        Self::op(OpError::InternalError)
    }
}

impl OnPanic for libc::ssize_t {
    fn on_panic() -> Self {
        -(OpError::InternalError.code() as libc::ssize_t)
    }
}

impl OnPanic for i64 {
    fn on_panic() -> Self {
        -1 // hipFileUseCount's error value
    }
}

impl OnPanic for c_int {
    fn on_panic() -> Self {
        -1 // the statistics level's error value (libcufile.so.0's entry)
    }
}

impl OnPanic for () {
    fn on_panic() -> Self {}
}

/// Runs an export's body; a panic becomes the export's internal-error value instead of
/// unwinding into C (which would abort the process).
pub fn boundary<T: OnPanic>(body: impl FnOnce() -> T) -> T {
    std::panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| T::on_panic())
}

/// The `ssize_t` convention of `hipFileRead`/`hipFileWrite`, setting `errno` where it says to.
pub fn ssize_return(result: Result<usize>) -> libc::ssize_t {
    let r = ssize_result(&result);
    if let Some(errno) = r.errno {
        // SAFETY: no preconditions.
        let slot = unsafe { libc::__errno_location() };
        // SAFETY: the calling thread's errno slot, always valid for writes.
        unsafe { *slot = errno };
    }
    r.value
}

/// A stream-ordered operation's values in the caller's memory: read when the operation runs,
/// the result stored there when it is done. Only [`CallerValues::new`] makes one.
pub(crate) struct CallerValues {
    size: *const usize,
    file_offset: *const hoff_t,
    buffer_offset: *const hoff_t,
    bytes: *mut libc::ssize_t,
}

impl CallerValues {
    /// The four pointers of a stream-ordered call; `None` if one is null.
    ///
    /// # Safety
    /// Non-null pointers must be valid (the first three readable, `bytes` writable), from any
    /// thread, until the stream has run the operation: `hipFileReadAsync`'s contract.
    pub(crate) unsafe fn new(
        size: *const usize,
        file_offset: *const hoff_t,
        buffer_offset: *const hoff_t,
        bytes: *mut libc::ssize_t,
    ) -> Option<Self> {
        let null = size.is_null() || file_offset.is_null() || buffer_offset.is_null() || bytes.is_null();
        (!null).then_some(CallerValues { size, file_offset, buffer_offset, bytes })
    }
}

// SAFETY: the pointers are the caller's, valid (and only read and written as below) until the
// stream has run the operation, whichever thread runs it: the contract of `CallerValues::new`,
// the only way to make one.
unsafe impl Send for CallerValues {}
// SAFETY: as above; the library reads and writes them from one thread at a time.
unsafe impl Sync for CallerValues {}

impl hipfile::AsyncParams for CallerValues {
    fn size(&self) -> usize {
        // SAFETY: non-null (checked at submission), valid by the contract above; volatile
        // because the caller may change it until the stream reaches the operation.
        unsafe { self.size.read_volatile() }
    }

    fn file_offset(&self) -> i64 {
        // SAFETY: as `size`.
        unsafe { self.file_offset.read_volatile() }
    }

    fn buffer_offset(&self) -> i64 {
        // SAFETY: as `size`.
        unsafe { self.buffer_offset.read_volatile() }
    }

    fn complete(&self, result: i64) {
        // SAFETY: non-null (checked at submission), writable by the contract above.
        unsafe { self.bytes.write_volatile(result as libc::ssize_t) }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn driver_properties_have_amds_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<super::hipFileDriverProps_t>(), 72);
        assert_eq!(offset_of!(super::hipFileDriverProps_t, feature_flags), 32);
        assert_eq!(offset_of!(super::hipFileDriverProps_t, max_device_cache_size), 40);
        assert_eq!(offset_of!(super::hipFileDriverProps_t, max_batch_io_count), 64);
    }

    use super::*;

    #[test]
    fn batch_structures_have_amds_layout() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<hipFileIOParams_t>(), 64);
        assert_eq!([offset_of!(hipFileIOParams_t, u), offset_of!(hipFileIOParams_t, fh)], [8, 40],);
        assert_eq!([offset_of!(hipFileIOParams_t, opcode), offset_of!(hipFileIOParams_t, cookie)], [48, 56]);
        assert_eq!([offset_of!(hipFileBatchParams, file_offset), offset_of!(hipFileBatchParams, size)], [8, 24]);
        assert_eq!(size_of::<hipFileIOEvents_t>(), 24);
        assert_eq!([offset_of!(hipFileIOEvents_t, status), offset_of!(hipFileIOEvents_t, ret)], [8, 16]);
    }
    use hipfile::{Error, HipError};

    #[test]
    fn a_panic_becomes_the_internal_error_of_each_convention() {
        let e = boundary(|| -> hipFileError_t { panic!("planted") });
        assert_eq!(e, hipFileError_t { err: 5030, hip_drv_err: 0 });
        assert_eq!(boundary(|| -> libc::ssize_t { panic!("planted") }), -5030);
        assert_eq!(boundary(|| -> i64 { panic!("planted") }), -1);
        boundary(|| -> () { panic!("planted") });
    }

    #[test]
    fn results_take_the_c_conventions() {
        assert_eq!(hipFileError_t::from_result(Ok(())), hipFileError_t::SUCCESS);
        assert_eq!(
            hipFileError_t::from_result(Err(HipError(719).into())),
            hipFileError_t { err: 5011, hip_drv_err: 719 }
        );
        assert_eq!(ssize_return(Ok(4096)), 4096);
        assert_eq!(ssize_return(Err(OpError::HandleNotRegistered.into())), -5027);
        assert_eq!(ssize_return(Err(Error::Os(libc::EIO))), -1);
        assert_eq!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EIO));
    }
}
