//! hipFile 0.5's tracing ABI (`include/hipfile-api-trace.h`): every exported call of
//! `libhipfile.so.0` goes through one dispatch table, `hipFileDispatchTable`, whose entries
//! are this library's own functions until a tool replaces them; the table is handed to
//! rocprofiler-register, where the process has it, as upstream hands its own, so ROCm's
//! profilers (rocprofiler-sdk's hipFile tracing) see and wrap every call (docs/compat.md,
//! "Tracing").
//!
//! rocprofiler-register is loaded at run time (`librocprofiler-register.so.0`), at the first
//! call of the C API: never a dependency. Where it is absent, or has no tool, the table keeps
//! this library's functions and a call costs one indirect jump more.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

use crate::ffi::{
    self, hipFileBatchHandle_t, hipFileDescr_t, hipFileError_t, hipFileHandle_t, hipFileIOEvents_t, hipFileIOParams_t,
    hipFileOpError_t, hipStream_t, hoff_t,
};

/// `HIPFILE_RUNTIME_API_TABLE_MAJOR_VERSION`: bumped when an entry changes.
pub const TABLE_MAJOR_VERSION: u32 = 0;
/// `HIPFILE_RUNTIME_API_TABLE_STEP_VERSION`: bumped when entries are appended (1: the three
/// statistics calls of hipFile 0.5).
pub const TABLE_STEP_VERSION: u32 = 1;

/// Declares the table: its entries in upstream's order, each with this library's function and
/// the call's C signature.
macro_rules! dispatch_table {
    ($( $field:ident : $own:path = ( $($ty:ty),* ) -> $ret:ty; )*) => {
        /// `struct hipFileDispatchTable`: `size` (bytes), then one function pointer per call.
        /// The entries are atomics (pointer-sized, as the header's function pointers) because a
        /// tool writes them through the pointer handed to it while other threads may call.
        #[repr(C)]
        pub struct DispatchTable {
            /// `sizeof(struct hipFileDispatchTable)`: tools read no entry at or past it.
            pub size: usize,
            $( $field: AtomicPtr<()>, )*
        }

        impl DispatchTable {
            /// The table with this library's own functions.
            const fn own() -> DispatchTable {
                DispatchTable { size: std::mem::size_of::<DispatchTable>(), $( $field: AtomicPtr::new($own as *mut ()), )* }
            }

            $(
                /// The entry's function.
                pub fn $field(&self) -> unsafe extern "C" fn($($ty),*) -> $ret {
                    let entry = self.$field.load(Ordering::Acquire);
                    // SAFETY: the entry holds this library's function of this type, or what a
                    // tool put there, which the header's contract requires to be of this type.
                    unsafe { std::mem::transmute::<*mut (), unsafe extern "C" fn($($ty),*) -> $ret>(entry) }
                }
            )*
        }

        /// The entries in order, for the layout check.
        #[cfg(test)]
        const NAMES: &[&str] = &[$( stringify!($field), )*];
    };
}

dispatch_table! {
    pfn_hipfile_get_op_error_string: crate::own_hipFileGetOpErrorString = (hipFileOpError_t) -> *const c_char;
    pfn_hipfile_handle_register: crate::own_hipFileHandleRegister = (*mut hipFileHandle_t, *mut hipFileDescr_t) -> hipFileError_t;
    pfn_hipfile_handle_deregister: crate::own_hipFileHandleDeregister = (hipFileHandle_t) -> ();
    pfn_hipfile_buf_register: crate::own_hipFileBufRegister = (*const c_void, usize, c_int) -> hipFileError_t;
    pfn_hipfile_buf_deregister: crate::own_hipFileBufDeregister = (*const c_void) -> hipFileError_t;
    pfn_hipfile_read: crate::own_transfer::<false> = (hipFileHandle_t, *mut c_void, usize, hoff_t, hoff_t) -> libc::ssize_t;
    pfn_hipfile_write: crate::own_transfer::<true> = (hipFileHandle_t, *const c_void, usize, hoff_t, hoff_t) -> libc::ssize_t;
    pfn_hipfile_driver_open: crate::own_hipFileDriverOpen = () -> hipFileError_t;
    pfn_hipfile_driver_close: crate::own_hipFileDriverClose = () -> hipFileError_t;
    pfn_hipfile_use_count: crate::own_hipFileUseCount = () -> i64;
    pfn_hipfile_driver_get_properties: crate::params::own_hipFileDriverGetProperties = (*mut ffi::hipFileDriverProps_t) -> hipFileError_t;
    pfn_hipfile_driver_set_poll_mode: crate::params::own_hipFileDriverSetPollMode = (bool, usize) -> hipFileError_t;
    pfn_hipfile_driver_set_max_direct_io_size: crate::params::own_hipFileDriverSetMaxDirectIOSize = (usize) -> hipFileError_t;
    pfn_hipfile_driver_set_max_cache_size: crate::params::own_hipFileDriverSetMaxCacheSize = (usize) -> hipFileError_t;
    pfn_hipfile_driver_set_max_pinned_mem_size: crate::params::own_hipFileDriverSetMaxPinnedMemSize = (usize) -> hipFileError_t;
    pfn_hipfile_batch_io_set_up: crate::batch::own_hipFileBatchIOSetUp = (*mut hipFileBatchHandle_t, c_uint) -> hipFileError_t;
    pfn_hipfile_batch_io_submit: crate::batch::own_hipFileBatchIOSubmit = (hipFileBatchHandle_t, c_uint, *mut hipFileIOParams_t, c_uint) -> hipFileError_t;
    pfn_hipfile_batch_io_get_status: crate::batch::own_hipFileBatchIOGetStatus = (hipFileBatchHandle_t, c_uint, *mut c_uint, *mut hipFileIOEvents_t, *mut libc::timespec) -> hipFileError_t;
    pfn_hipfile_batch_io_cancel: crate::batch::own_hipFileBatchIOCancel = (hipFileBatchHandle_t) -> hipFileError_t;
    pfn_hipfile_batch_io_destroy: crate::batch::own_hipFileBatchIODestroy = (hipFileBatchHandle_t) -> ();
    pfn_hipfile_read_async: crate::own_stream_io::<false> = (hipFileHandle_t, *mut c_void, *mut usize, *mut hoff_t, *mut hoff_t, *mut libc::ssize_t, hipStream_t) -> hipFileError_t;
    pfn_hipfile_write_async: crate::own_stream_io::<true> = (hipFileHandle_t, *mut c_void, *mut usize, *mut hoff_t, *mut hoff_t, *mut libc::ssize_t, hipStream_t) -> hipFileError_t;
    pfn_hipfile_stream_register: crate::own_hipFileStreamRegister = (hipStream_t, c_uint) -> hipFileError_t;
    pfn_hipfile_stream_deregister: crate::own_hipFileStreamDeregister = (hipStream_t) -> hipFileError_t;
    pfn_hipfile_get_version: crate::own_hipFileGetVersion = (*mut c_uint, *mut c_uint, *mut c_uint) -> hipFileError_t;
    pfn_hipfile_get_parameter_size_t: crate::params::own_hipFileGetParameterSizeT = (ffi::hipFileSizeTConfigParameter_t, *mut usize) -> hipFileError_t;
    pfn_hipfile_get_parameter_bool: crate::params::own_hipFileGetParameterBool = (ffi::hipFileBoolConfigParameter_t, *mut bool) -> hipFileError_t;
    pfn_hipfile_get_parameter_string: crate::params::own_hipFileGetParameterString = (ffi::hipFileStringConfigParameter_t, *mut c_char, c_int) -> hipFileError_t;
    pfn_hipfile_set_parameter_size_t: crate::params::own_hipFileSetParameterSizeT = (ffi::hipFileSizeTConfigParameter_t, usize) -> hipFileError_t;
    pfn_hipfile_set_parameter_bool: crate::params::own_hipFileSetParameterBool = (ffi::hipFileBoolConfigParameter_t, bool) -> hipFileError_t;
    pfn_hipfile_set_parameter_string: crate::params::own_hipFileSetParameterString = (ffi::hipFileStringConfigParameter_t, *const c_char) -> hipFileError_t;
    pfn_hipfile_get_stats_l1: crate::own_hipFileGetStatsL1 = (*mut ffi::hipFileStatsLevel1_t) -> hipFileError_t;
    pfn_hipfile_get_stats_l2: crate::own_hipFileGetStatsL2 = (*mut ffi::hipFileStatsLevel2_t) -> hipFileError_t;
    pfn_hipfile_get_stats_l3: crate::own_hipFileGetStatsL3 = (*mut ffi::hipFileStatsLevel3_t) -> hipFileError_t;
}

/// The table every exported call goes through.
static TABLE: DispatchTable = DispatchTable::own();

/// 0: not handed to rocprofiler-register yet; 1: being handed; 2: done (or nothing to hand to).
static REGISTERED: AtomicU8 = AtomicU8::new(0);

/// The dispatch table, handed to rocprofiler-register at the first call (by that call's thread;
/// calls on other threads meanwhile, or from the tool while it registers, use the table as it
/// is, never waiting).
pub fn table() -> &'static DispatchTable {
    if REGISTERED.load(Ordering::Acquire) != 2
        && REGISTERED.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok()
    {
        register();
        REGISTERED.store(2, Ordering::Release);
    }
    &TABLE
}

/// The version rocprofiler-register is told: `ROCPROFILER_REGISTER_COMPUTE_VERSION_3` of
/// hipFile's API version (10000 * major + 100 * minor + patch; 500 for 0.5.0).
pub const REGISTER_VERSION: u32 = {
    let (major, minor, patch) = crate::VERSION;
    10000 * major + 100 * minor + patch
};

/// rocprofiler-register's import function for hipFile (`ROCPROFILER_REGISTER_IMPORT_FUNC(hipFile)`):
/// the version, found by name in the library that registers.
#[unsafe(no_mangle)]
pub extern "C" fn rocprofiler_register_import_hipFile() -> u32 {
    REGISTER_VERSION
}

/// `rocprofiler_register_library_api_table`'s type (rocprofiler-register.h): the library's
/// name, its import function, its version, its tables and their number, the identifier out.
type RegisterTable =
    unsafe extern "C" fn(*const c_char, extern "C" fn() -> u32, u32, *mut *mut c_void, u64, *mut u64) -> c_int;

/// Hands the table to rocprofiler-register where the process can load it; its answer (no tool,
/// say) is its own business, as upstream ignores it.
fn register() {
    // SAFETY: loading rocprofiler-register runs its initialisers, which set up its own state
    // (it is made to be loaded by every ROCm runtime library this way).
    let Ok(lib) = (unsafe { libloading::Library::new("librocprofiler-register.so.0") }) else { return };
    // SAFETY: the function of that name has rocprofiler-register.h's signature.
    let Ok(register) = (unsafe { lib.get::<RegisterTable>(b"rocprofiler_register_library_api_table\0") }) else {
        return;
    };
    let mut tables = [std::ptr::from_ref(&TABLE).cast_mut().cast::<c_void>()];
    let mut identifier = 0u64;
    // SAFETY: a NUL-terminated name, an import function, one table that lives as long as the
    // process (a static whose entries are atomics, so a tool may write them), a writable
    // identifier.
    unsafe {
        register(
            c"hipFile".as_ptr(),
            rocprofiler_register_import_hipFile,
            REGISTER_VERSION,
            tables.as_mut_ptr(),
            1,
            &mut identifier,
        )
    };
    // The tool may keep pointers into the library: it stays loaded.
    std::mem::forget(lib);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_upstreams() {
        assert_eq!(NAMES.len(), 34);
        assert_eq!(TABLE.size, 8 + 34 * 8);
        assert_eq!(std::mem::offset_of!(DispatchTable, pfn_hipfile_get_op_error_string), 8);
        assert_eq!(std::mem::offset_of!(DispatchTable, pfn_hipfile_get_stats_l3), 8 + 33 * 8);
        assert_eq!(REGISTER_VERSION, 500);
    }
}
