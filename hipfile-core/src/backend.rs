//! Backends: each scores a request and moves its bytes. The driver asks every backend of the
//! closed set it was opened with, takes the best score, and retries on a fallback when the
//! chosen direct path reports that it has no path to the device (spec 2.5).

use crate::error::Result;
use crate::file::FileHandle;

/// Which way the bytes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// File to GPU memory.
    Read,
    /// GPU memory to file.
    Write,
}

/// hipFile's two families of backends, which the compat-mode settings switch on and off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// Direct DMA between storage and the GPU (upstream's "fastpath").
    Fastpath,
    /// Staging through host memory (upstream's "fallback", cuFile's "compat mode").
    Fallback,
}

/// One validated transfer: at most `max_rw_count()` bytes between the file and a range of
/// device memory that the driver has checked.
#[derive(Debug)]
pub struct IoRequest<'a> {
    direction: Direction,
    file: &'a FileHandle,
    device_addr: usize,
    device: i32,
    size: usize,
    file_offset: u64,
}

impl<'a> IoRequest<'a> {
    /// A request to move `size` bytes between `file` at `file_offset` and device memory at
    /// `device_addr` on `device`.
    ///
    /// # Safety
    /// `[device_addr, device_addr + size)` must lie inside one device allocation of the GPU
    /// runtime the backends use, valid for the whole transfer, and `size` must not exceed
    /// `max_rw_count()`. Backends rely on this to write into that range.
    pub unsafe fn new(
        direction: Direction,
        file: &'a FileHandle,
        device_addr: usize,
        device: i32,
        size: usize,
        file_offset: u64,
    ) -> IoRequest<'a> {
        IoRequest { direction, file, device_addr, device, size, file_offset }
    }

    /// Which way the bytes go.
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// The registered file.
    pub fn file(&self) -> &'a FileHandle {
        self.file
    }
    /// The first device address of the transfer (`buffer_base + buffer_offset`).
    pub fn device_addr(&self) -> usize {
        self.device_addr
    }
    /// The device that owns the memory.
    pub fn device(&self) -> i32 {
        self.device
    }
    /// Bytes to move.
    pub fn size(&self) -> usize {
        self.size
    }
    /// Where in the file.
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }
}

/// A data path. Implementations must be thread-safe: the driver calls them concurrently.
pub trait Backend: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// Fastpath or fallback.
    fn kind(&self) -> BackendKind;

    /// How well this backend would serve `req` (higher is better), or `None` if it cannot.
    fn score(&self, req: &IoRequest<'_>) -> Option<u32>;

    /// Moves the bytes of `req`; returns how many moved (fewer only at end of file).
    /// `ENODEV` and `EREMOTEIO` from a fastpath mean "no path": the driver may retry on a
    /// fallback.
    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize>;

    /// Counters of what the backend has done since it was built (name, value), for reports
    /// and profiles. Cumulative; none by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Whether an error from a fastpath means it has no path to the device, so the request may be
/// retried on a fallback (upstream `BackendWithFallback`).
pub fn is_no_path(error: &crate::Error) -> bool {
    matches!(error.errno(), Some(libc::ENODEV | libc::EREMOTEIO))
}

/// Declares a closed set of backends as an enum that implements [`Backend`] by matching on
/// its variants: static dispatch that works across crates (where `enum_dispatch` silently
/// does not, see `shared/reference/rust-notes.md` 1.4).
///
/// ```
/// # use hipfile_core::{Backend, BackendKind, IoRequest, Result};
/// struct Nothing;
/// impl Backend for Nothing {
///     fn name(&self) -> &'static str { "nothing" }
///     fn kind(&self) -> BackendKind { BackendKind::Fallback }
///     fn score(&self, _: &IoRequest<'_>) -> Option<u32> { None }
///     fn transfer(&self, _: &IoRequest<'_>) -> Result<usize> { Ok(0) }
/// }
/// hipfile_core::backend_set! {
///     /// The backends of this program.
///     pub enum Backends { Nothing(Nothing) }
/// }
/// assert_eq!(Backends::Nothing(Nothing).name(), "nothing");
/// ```
#[macro_export]
macro_rules! backend_set {
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $variant:ident($ty:ty)),+ $(,)? }) => {
        $(#[$meta])*
        $vis enum $name { $($(#[$vmeta])* $variant($ty)),+ }

        impl $crate::Backend for $name {
            fn name(&self) -> &'static str {
                match self { $(Self::$variant(b) => $crate::Backend::name(b)),+ }
            }
            fn kind(&self) -> $crate::BackendKind {
                match self { $(Self::$variant(b) => $crate::Backend::kind(b)),+ }
            }
            fn score(&self, req: &$crate::IoRequest<'_>) -> Option<u32> {
                match self { $(Self::$variant(b) => $crate::Backend::score(b, req)),+ }
            }
            fn transfer(&self, req: &$crate::IoRequest<'_>) -> $crate::Result<usize> {
                match self { $(Self::$variant(b) => $crate::Backend::transfer(b, req)),+ }
            }
            fn counters(&self) -> Vec<(&'static str, u64)> {
                match self { $(Self::$variant(b) => $crate::Backend::counters(b)),+ }
            }
        }
    };
}
