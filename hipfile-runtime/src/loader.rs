//! The one library loader of the crate: `libloading` for `dlopen`/`dlsym` with errors that say
//! why, and `dladdr`/`RTLD_NOLOAD` (which it does not wrap) to find the library of a runtime
//! already in the process.

use std::ffi::{CStr, c_int, c_void};
use std::fmt;

/// Why no HIP runtime could be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError(pub String);

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

/// A loaded library, kept for the life of the process (a GPU runtime is never unloaded): the
/// raw handle of a libloading `Library` that is never dropped. `dladdr` and `RTLD_NOLOAD`, which
/// libloading does not wrap, find the library of a runtime already in the process
/// ([`Library::defining`]).
#[derive(Clone, Copy)]
pub(crate) struct Library(*mut c_void);

// SAFETY: a dlopen handle is a process-wide token; dlsym may be called from any thread.
unsafe impl Send for Library {}
// SAFETY: as above.
unsafe impl Sync for Library {}

impl Library {
    /// `dlopen(name, flags)`, or the loader's reason.
    pub(crate) fn open(name: &str, flags: c_int) -> Result<Library, String> {
        // SAFETY: loading runs the library's initialisers, which is what loading a GPU runtime
        // (or cuFile) means.
        let lib = unsafe { libloading::os::unix::Library::open(Some(name), flags) }.map_err(|e| e.to_string())?;
        Ok(Library(lib.into_raw()))
    }

    /// The symbols of the process: the program, what it loaded at startup, and what was loaded
    /// with `RTLD_GLOBAL` since (as `RTLD_DEFAULT` sees them).
    pub(crate) fn process() -> Library {
        Library(libloading::os::unix::Library::this().into_raw())
    }

    /// The address of `name`, if the library defines it.
    pub(crate) fn symbol(self, name: &str) -> Option<*mut c_void> {
        // SAFETY: `self.0` came from `into_raw` of a library that stays loaded; the
        // ManuallyDrop keeps this view from closing it.
        let lib = std::mem::ManuallyDrop::new(unsafe { libloading::os::unix::Library::from_raw(self.0) });
        // SAFETY: only the symbol's address is read (a `*mut c_void` "symbol" is the address);
        // nothing is called or dereferenced here.
        let sym = unsafe { lib.get::<*mut c_void>(name.as_bytes()) }.ok()?;
        let addr = *sym;
        (!addr.is_null()).then_some(addr)
    }

    /// The file that defines `sym`, reopened so that every symbol comes from that one library.
    pub(crate) fn defining(sym: *mut c_void) -> Option<(Library, String)> {
        let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
        // SAFETY: `info` is writable; dladdr only reads the address.
        if unsafe { libc::dladdr(sym, info.as_mut_ptr()) } == 0 {
            return None;
        }
        // SAFETY: dladdr succeeded and filled `info`.
        let info = unsafe { info.assume_init() };
        if info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: non-null, NUL-terminated, owned by the loader.
        let path = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
        let lib = Library::open(&path, libc::RTLD_NOW | libc::RTLD_NOLOAD).ok()?;
        Some((lib, path))
    }
}
