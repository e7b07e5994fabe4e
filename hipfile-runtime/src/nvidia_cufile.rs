//! cuFile (NVIDIA GPUDirect Storage, `libcufile.so.0`), loaded at run time: its ABI and the
//! entry points hipfile-rs uses, resolved once.

use std::ffi::{c_int, c_void};

use hipfile_core::Direction;

use crate::Library;

/// `CUfileError_t`: a cuFile status and a CUDA driver result (hipfile-abi's, shared with our
/// `libcufile.so.0`).
pub type CuFileError = hipfile_abi::cufile_h::CUfileError_t;

/// A registered cuFile handle (`CUfileHandle_t`, an opaque pointer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CuHandle(pub usize);

use hipfile_abi::cufile_h::{CU_FILE_HANDLE_TYPE_OPAQUE_FD, CUfileDescr_t as CuFileDescr};
const CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE: c_int = 1;
const CUFILE_PARAM_FORCE_COMPAT_MODE: c_int = 2;

type Status0 = unsafe extern "C" fn() -> CuFileError;
type SetBool = unsafe extern "C" fn(c_int, bool) -> CuFileError;
type HandleRegister = unsafe extern "C" fn(*mut *mut c_void, *mut CuFileDescr) -> CuFileError;
type HandleDeregister = unsafe extern "C" fn(*mut c_void);
type BufRegister = unsafe extern "C" fn(*const c_void, usize, c_int) -> CuFileError;
type BufDeregister = unsafe extern "C" fn(*const c_void) -> CuFileError;
type Io = unsafe extern "C" fn(*mut c_void, *mut c_void, usize, i64, i64) -> isize;

/// libcufile, loaded with the crate's one loader.
pub struct LibCuFile {
    set_bool: SetBool,
    driver_open: Status0,
    driver_close: Status0,
    handle_register: HandleRegister,
    handle_deregister: HandleDeregister,
    buf_register: BufRegister,
    buf_deregister: BufDeregister,
    read: Io,
    write: Io,
}

/// Where cuFile is looked for.
const LIBRARY_NAMES: [&str; 2] = ["libcufile.so.0", "/usr/local/cuda/lib64/libcufile.so.0"];

impl LibCuFile {
    /// Loads libcufile and resolves its entry points, or says why not.
    pub fn load() -> std::result::Result<LibCuFile, String> {
        let mut tried = Vec::new();
        for name in LIBRARY_NAMES {
            match Library::open(name, libc::RTLD_NOW | libc::RTLD_LOCAL) {
                Ok(lib) => return Self::resolve(lib).map_err(|missing| format!("{name} has no {missing}")),
                Err(why) => tried.push(why),
            }
        }
        Err(format!("no cuFile library ({})", tried.join("; ")))
    }

    fn resolve(lib: Library) -> std::result::Result<LibCuFile, &'static str> {
        let sym = |name: &'static str| lib.symbol(name).ok_or(name);
        macro_rules! get {
            ($name:literal as $ty:ty) => {{
                let p = sym($name)?;
                // SAFETY: the symbol is cuFile's function of that name, whose C signature
                // (cufile.h) is `$ty`; function and data pointers have one size.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
            }};
        }
        // Newer headers map cuFileDriverClose to _v2; the library has both.
        let driver_close = match sym("cuFileDriverClose_v2") {
            Ok(_) => get!("cuFileDriverClose_v2" as Status0),
            Err(_) => get!("cuFileDriverClose" as Status0),
        };
        Ok(LibCuFile {
            set_bool: get!("cuFileSetParameterBool" as SetBool),
            driver_open: get!("cuFileDriverOpen" as Status0),
            driver_close,
            handle_register: get!("cuFileHandleRegister" as HandleRegister),
            handle_deregister: get!("cuFileHandleDeregister" as HandleDeregister),
            buf_register: get!("cuFileBufRegister" as BufRegister),
            buf_deregister: get!("cuFileBufDeregister" as BufDeregister),
            read: get!("cuFileRead" as Io),
            write: get!("cuFileWrite" as Io),
        })
    }
}

/// The cuFile functions the GDS engine uses: [`LibCuFile`], or a mock (feature `mock`) in
/// tests.
#[cfg_attr(feature = "mock", mockall::automock)]
pub trait CuFileApi: Send + Sync {
    /// `cuFileSetParameterBool` for `CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE` and
    /// `CUFILE_PARAM_FORCE_COMPAT_MODE`: both false.
    fn disable_compat_mode(&self) -> std::result::Result<(), CuFileError>;
    /// `cuFileDriverOpen`.
    fn driver_open(&self) -> std::result::Result<(), CuFileError>;
    /// `cuFileDriverClose`.
    fn driver_close(&self);
    /// `cuFileHandleRegister` of an `O_DIRECT` descriptor (`CU_FILE_HANDLE_TYPE_OPAQUE_FD`).
    fn handle_register(&self, fd: c_int) -> std::result::Result<CuHandle, CuFileError>;
    /// `cuFileHandleDeregister`.
    fn handle_deregister(&self, handle: CuHandle);
    /// `cuFileBufRegister(base, len, 0)`.
    fn buf_register(&self, base: usize, len: usize) -> std::result::Result<(), CuFileError>;
    /// `cuFileBufDeregister`.
    fn buf_deregister(&self, base: usize) -> std::result::Result<(), CuFileError>;
    /// `cuFileRead` (read) or `cuFileWrite` (write): bytes moved, `-1` with `errno`, or
    /// `-CUfileOpError`.
    ///
    /// # Safety
    /// `[base + buf_offset, base + buf_offset + size)` must be device memory valid for the call.
    unsafe fn io(
        &self,
        direction: Direction,
        handle: CuHandle,
        base: usize,
        size: usize,
        file_offset: i64,
        buf_offset: i64,
    ) -> isize;
}

// SAFETY (all calls below): the function pointers were resolved from libcufile with these
// signatures; arguments are plain values, or pointers to locals valid for the call.
impl CuFileApi for LibCuFile {
    fn disable_compat_mode(&self) -> std::result::Result<(), CuFileError> {
        // SAFETY: see above.
        unsafe { (self.set_bool)(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, false) }.check()?;
        // SAFETY: see above.
        unsafe { (self.set_bool)(CUFILE_PARAM_FORCE_COMPAT_MODE, false) }.check()
    }

    fn driver_open(&self) -> std::result::Result<(), CuFileError> {
        // SAFETY: see above.
        unsafe { (self.driver_open)() }.check()
    }

    fn driver_close(&self) {
        // SAFETY: see above.
        let _ = unsafe { (self.driver_close)() };
    }

    fn handle_register(&self, fd: c_int) -> std::result::Result<CuHandle, CuFileError> {
        let mut descr =
            CuFileDescr { r#type: CU_FILE_HANDLE_TYPE_OPAQUE_FD, handle: fd as usize, fs_ops: std::ptr::null() };
        let mut handle: *mut c_void = std::ptr::null_mut();
        // SAFETY: see above.
        unsafe { (self.handle_register)(&mut handle, &mut descr) }.check()?;
        Ok(CuHandle(handle as usize))
    }

    fn handle_deregister(&self, handle: CuHandle) {
        // SAFETY: see above; the handle came from `handle_register`.
        unsafe { (self.handle_deregister)(handle.0 as *mut c_void) }
    }

    fn buf_register(&self, base: usize, len: usize) -> std::result::Result<(), CuFileError> {
        // SAFETY: see above; cuFile checks the range itself.
        unsafe { (self.buf_register)(base as *const c_void, len, 0) }.check()
    }

    fn buf_deregister(&self, base: usize) -> std::result::Result<(), CuFileError> {
        // SAFETY: see above.
        unsafe { (self.buf_deregister)(base as *const c_void) }.check()
    }

    unsafe fn io(
        &self,
        direction: Direction,
        handle: CuHandle,
        base: usize,
        size: usize,
        file_offset: i64,
        buf_offset: i64,
    ) -> isize {
        let f = match direction {
            Direction::Read => self.read,
            Direction::Write => self.write,
        };
        // SAFETY: see above; the caller guarantees the device range.
        unsafe { f(handle.0 as *mut c_void, base as *mut c_void, size, file_offset, buf_offset) }
    }
}
