//! CUDA's contexts. The library's streams, events and pinned staging belong to each device's
//! primary context, the one CUDA's runtime API uses. A program written for the driver API may
//! call with a context of its own current (`cuCtxCreate`, as cufile-python's tests do); on
//! such a thread the library's streams are another context's (`cudaErrorInvalidResourceHandle`).
//! The data path then makes the device's primary context current for the call and gives the
//! program's back after it (semantics §4); the program's memory is reachable from the primary
//! context under unified addressing (the pointer and copy calls work across the two).

use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::Mutex;

use crate::Library;

type GetContext = unsafe extern "C" fn(*mut *mut c_void) -> c_int;
type SetContext = unsafe extern "C" fn(*mut c_void) -> c_int;
type GetDevice = unsafe extern "C" fn(*mut c_int) -> c_int;
type RetainPrimary = unsafe extern "C" fn(*mut *mut c_void, c_int) -> c_int;

/// The driver calls that find and switch a thread's context, and each device's primary
/// context once looked up (retained once, for the life of the process, as the runtime does).
pub(crate) struct Contexts {
    get_current: GetContext,
    set_current: SetContext,
    get_device: GetDevice,
    retain_primary: RetainPrimary,
    primaries: Mutex<Vec<(c_int, usize)>>,
}

thread_local! {
    /// The primary context last found current on this thread: the common case, answered
    /// without asking which device it is.
    static LAST_PRIMARY: Cell<usize> = const { Cell::new(0) };
}

impl Contexts {
    /// The calls from CUDA's driver library (`libcuda.so.1`); `None` where it lacks one.
    pub(crate) fn resolve() -> Option<Contexts> {
        let lib = Library::open("libcuda.so.1", libc::RTLD_NOW | libc::RTLD_LOCAL).ok()?;
        macro_rules! function {
            ($name:literal as $ty:ty) => {{
                let address = lib.symbol($name)?;
                // SAFETY: the address of CUDA's function of that name, whose C signature
                // (cuda.h) is the type it is given; data and function pointers have the same
                // size here.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(address) }
            }};
        }
        Some(Contexts {
            get_current: function!("cuCtxGetCurrent" as GetContext),
            set_current: function!("cuCtxSetCurrent" as SetContext),
            get_device: function!("cuCtxGetDevice" as GetDevice),
            retain_primary: function!("cuDevicePrimaryCtxRetain" as RetainPrimary),
            primaries: Mutex::new(Vec::new()),
        })
    }

    /// Where the calling thread's current context is not its device's primary context, makes
    /// the primary one current and returns the thread's (for [`restore`](Self::restore));
    /// `None` otherwise (no context yet: the runtime binds the primary one itself).
    pub(crate) fn enter_primary(&self) -> Option<usize> {
        let mut current = std::ptr::null_mut();
        // SAFETY: `current` is writable.
        if unsafe { (self.get_current)(&mut current) } != 0 || current.is_null() {
            return None;
        }
        if LAST_PRIMARY.get() == current as usize {
            return None;
        }
        let mut device = 0;
        // SAFETY: `device` is writable; asks about the current context.
        if unsafe { (self.get_device)(&mut device) } != 0 {
            return None;
        }
        let primary = self.primary(device)?;
        if primary == current as usize {
            LAST_PRIMARY.set(primary);
            return None;
        }
        // SAFETY: a primary context, retained for the life of the process.
        (unsafe { (self.set_current)(primary as *mut c_void) } == 0).then_some(current as usize)
    }

    /// Makes `saved` (from [`enter_primary`](Self::enter_primary)) the thread's context again.
    pub(crate) fn restore(&self, saved: usize) {
        // SAFETY: the context that was current on this thread before the call; the program
        // that made it keeps it alive across its own call.
        unsafe { (self.set_current)(saved as *mut c_void) };
    }

    /// `device`'s primary context, retained at the first ask.
    fn primary(&self, device: c_int) -> Option<usize> {
        let mut known = self.primaries.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&(_, ctx)) = known.iter().find(|(d, _)| *d == device) {
            return Some(ctx);
        }
        let mut ctx = std::ptr::null_mut();
        // SAFETY: `ctx` is writable; the device ordinal came from the driver.
        if unsafe { (self.retain_primary)(&mut ctx, device) } != 0 || ctx.is_null() {
            return None;
        }
        known.push((device, ctx as usize));
        Some(ctx as usize)
    }
}
