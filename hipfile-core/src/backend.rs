//! Backends: each scores a request and moves its bytes. The driver asks every backend of the
//! closed set it was opened with, takes the best score, and retries on bounce when the
//! chosen p2p path reports that it has no path to the device (semantics §6).

use std::borrow::Cow;
use std::fmt;

use crate::cache::CacheUse;
use crate::error::Result;
use crate::file::FileHandle;
use crate::gpu::DeviceSpan;

/// Why a backend does not serve a request or a file, in words a user can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declined(pub Cow<'static, str>);

impl Declined {
    /// A reason known at compile time.
    pub const fn fixed(reason: &'static str) -> Self {
        Declined(Cow::Borrowed(reason))
    }
}

impl From<String> for Declined {
    fn from(reason: String) -> Self {
        Declined(Cow::Owned(reason))
    }
}

impl fmt::Display for Declined {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A backend's answer to a request: how well it would serve it (higher is better), or why
/// it would not.
pub type Score = std::result::Result<u32, Declined>;

/// Whether a backend can work on this machine at all, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capability {
    /// The backend's name (`p2p (AIS)`, `p2p (GDS)`, `bounce`, ...).
    pub backend: String,
    /// P2p or bounce.
    pub kind: BackendKind,
    /// Available, or why not.
    pub available: std::result::Result<(), String>,
    /// How it works on this machine, in words (for `hipfile check`); may be empty.
    pub notes: Vec<String>,
}

impl Capability {
    /// `backend` of `kind`, available or why not, with no notes.
    pub fn new(backend: impl Into<String>, kind: BackendKind, available: std::result::Result<(), String>) -> Self {
        Capability { backend: backend.into(), kind, available, notes: Vec::new() }
    }
}

pub use crate::io::Direction;

/// hipFile's two families of backends, which the compat-mode settings switch on and off.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendKind {
    /// `p2p`: DMA between storage and the GPU (upstream's "p2p").
    P2p,
    /// `bounce`: staging through pinned host memory (upstream's "fallback", cuFile's "compat
    /// mode").
    Bounce,
}

/// One validated transfer: at most `max_rw_count()` bytes between the file and a span of
/// device memory that the driver has checked.
#[derive(Clone, Copy, Debug)]
pub struct IoRequest<'a> {
    direction: Direction,
    file: &'a FileHandle,
    memory: DeviceSpan,
    device: i32,
    file_offset: u64,
    cache: CacheUse,
    managed: bool,
    durable: bool,
}

impl<'a> IoRequest<'a> {
    /// A request to move the bytes of `memory` (on `device`) to or from `file` at
    /// `file_offset`. The span carries the guarantee backends rely on to write into it.
    ///
    /// # Panics
    /// When `memory` is longer than `max_rw_count()` (the driver caps every call).
    pub fn new(direction: Direction, file: &'a FileHandle, memory: DeviceSpan, device: i32, file_offset: u64) -> Self {
        assert!(memory.len() <= crate::io::max_rw_count(), "one request moves at most max_rw_count() bytes");
        IoRequest {
            direction,
            file,
            memory,
            device,
            file_offset,
            cache: CacheUse::Bypass,
            managed: false,
            durable: true,
        }
    }

    /// The same request, a write durable when it returns or not (the dispatcher decides,
    /// semantics §5; a request made with [`new`](Self::new) is durable).
    pub fn with_durable(self, durable: bool) -> Self {
        IoRequest { durable, ..self }
    }

    /// The same request, its memory managed memory or not (semantics §4: the bounce path
    /// serves managed memory, the p2p path never).
    pub fn with_managed(self, managed: bool) -> Self {
        IoRequest { managed, ..self }
    }

    /// The same request, using the page cache as `cache` says (the dispatcher applies the
    /// policy, semantics §16; a request made with [`new`](Self::new) bypasses it where the
    /// file allows).
    pub fn with_cache(self, cache: CacheUse) -> Self {
        IoRequest { cache, ..self }
    }

    /// The part of this request that starts `done` bytes in: the same file and device, the
    /// rest of the span (what a backend continues with after a short transfer).
    pub fn rest(&self, done: usize) -> IoRequest<'a> {
        let memory = self.memory.part(done, self.memory.len() - done);
        IoRequest { memory, file_offset: self.file_offset + done as u64, ..*self }
    }

    /// Which way the bytes go.
    pub fn direction(&self) -> Direction {
        self.direction
    }
    /// The registered file.
    pub fn file(&self) -> &'a FileHandle {
        self.file
    }
    /// The device memory of the transfer.
    pub fn memory(&self) -> DeviceSpan {
        self.memory
    }
    /// The first device address of the transfer (`buffer_base + buffer_offset`).
    pub fn device_addr(&self) -> usize {
        self.memory.addr()
    }
    /// The device that owns the memory.
    pub fn device(&self) -> i32 {
        self.device
    }
    /// Bytes to move.
    pub fn size(&self) -> usize {
        self.memory.len()
    }
    /// Where in the file.
    pub fn file_offset(&self) -> u64 {
        self.file_offset
    }
    /// What the transfer does with the page cache (semantics §16).
    pub fn cache(&self) -> CacheUse {
        self.cache
    }
    /// Whether a write is to be durable when it returns (one `fdatasync` per call; semantics §5).
    pub fn durable(&self) -> bool {
        self.durable
    }
    /// Whether the memory is managed memory (semantics §4).
    pub fn is_managed(&self) -> bool {
        self.managed
    }
}

/// A data path. Implementations must be thread-safe: the driver calls them concurrently.
pub trait Backend: Send + Sync {
    /// A short name for logs and reports.
    fn name(&self) -> &'static str;

    /// P2p or bounce.
    fn kind(&self) -> BackendKind;

    /// How well this backend would serve `req` (higher is better), or why it would not. By
    /// default any request, at 0: the staged path's score, which a p2p backend's beats.
    fn score(&self, _req: &IoRequest<'_>) -> Score {
        Ok(0)
    }

    /// Whether this backend would serve `file` at all (requests may still be declined, for
    /// example when unaligned). All files by default.
    fn accepts_file(&self, _file: &FileHandle) -> std::result::Result<(), Declined> {
        Ok(())
    }

    /// The application registered memory `[base, base + len)` of `device`
    /// (`hipFileBufRegister`): a backend may prepare it, or itself, for transfers to that
    /// device. Nothing by default.
    fn buffer_registered(&self, _base: usize, _len: usize, _device: i32) {}

    /// The registration of `base` ended (`hipFileBufDeregister`). Nothing by default.
    fn buffer_deregistered(&self, _base: usize) {}

    /// Moves the bytes of `req`; returns how many moved (fewer only at end of file).
    /// `ENODEV` and `EREMOTEIO` from a p2p mean "no path": the driver may retry on a
    /// fallback.
    fn transfer(&self, req: &IoRequest<'_>) -> Result<usize>;

    /// Moves the bytes of several requests (a batch's entries this backend was chosen for);
    /// one result per request, in order. One after another by default; a backend that can
    /// overlap them (the bounce path: one request's read against another's copy) does.
    fn transfer_many(&self, reqs: &[&IoRequest<'_>]) -> Vec<Result<usize>> {
        reqs.iter().map(|req| self.transfer(req)).collect()
    }

    /// Counters of what the backend has done since it was built (name, value), for reports
    /// and profiles. Cumulative; none by default.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
}

/// Whether an error from a p2p means it has no path to the device, so the request may be
/// retried on bounce (upstream `BackendWithFallback`).
pub fn is_no_path(error: &crate::Error) -> bool {
    matches!(error.errno(), Some(libc::ENODEV | libc::EREMOTEIO))
}

/// Declares a closed set of backends as an enum that implements [`Backend`] by matching on
/// its variants: static dispatch that works across crates (where `enum_dispatch` silently
/// does not: its trait impls are generated where the trait is declared, so an enum in
/// another crate gets none). A variant written `@cfg(predicate) Name(Type)` exists only where
/// the predicate holds (a backend behind a cargo feature).
///
/// ```
/// # use hipfile_core::{Backend, BackendKind, IoRequest, Result};
/// struct Nothing;
/// impl Backend for Nothing {
///     fn name(&self) -> &'static str { "nothing" }
///     fn kind(&self) -> BackendKind { BackendKind::Bounce }
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
    ($(#[$meta:meta])* $vis:vis enum $name:ident { $($(#[$vmeta:meta])* $(@cfg($cfg:meta))? $variant:ident($ty:ty)),+ $(,)? }) => {
        $(#[$meta])*
        $vis enum $name { $($(#[$vmeta])* $(#[cfg($cfg)])? $variant($ty)),+ }

        impl $crate::Backend for $name {
            fn name(&self) -> &'static str {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::name(b),)+ }
            }
            fn kind(&self) -> $crate::BackendKind {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::kind(b),)+ }
            }
            fn score(&self, req: &$crate::IoRequest<'_>) -> $crate::backend::Score {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::score(b, req),)+ }
            }
            fn accepts_file(&self, file: &$crate::FileHandle) -> ::std::result::Result<(), $crate::backend::Declined> {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::accepts_file(b, file),)+ }
            }
            fn buffer_registered(&self, base: usize, len: usize, device: i32) {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::buffer_registered(b, base, len, device),)+ }
            }
            fn buffer_deregistered(&self, base: usize) {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::buffer_deregistered(b, base),)+ }
            }
            fn transfer(&self, req: &$crate::IoRequest<'_>) -> $crate::Result<usize> {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::transfer(b, req),)+ }
            }
            fn transfer_many(&self, reqs: &[&$crate::IoRequest<'_>]) -> Vec<$crate::Result<usize>> {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::transfer_many(b, reqs),)+ }
            }
            fn counters(&self) -> Vec<(&'static str, u64)> {
                match self { $($(#[cfg($cfg)])? Self::$variant(b) => $crate::Backend::counters(b),)+ }
            }
        }
    };
}
