//! The mock GPU's allocations: what each address handed out is (device, pinned or registered
//! host memory) and where its bytes are (a guarded device address has them elsewhere).

use std::alloc::Layout;

use super::MOCK_ALIGN;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Device memory the mock allocated.
    Device,
    /// Pinned host memory the mock allocated.
    PinnedHost,
    /// Host memory the caller owns and registered.
    RegisteredHost,
}

#[derive(Debug)]
pub(super) struct Alloc {
    pub(super) size: usize,
    pub(super) device: i32,
    pub(super) kind: Kind,
    /// Device memory from `hipMallocManaged`: reported as managed, reachable from the host.
    pub(super) managed: bool,
    /// Where the bytes are: the address handed out, or for guarded device memory the
    /// allocation behind it.
    pub(super) view: usize,
}

impl Alloc {
    pub(super) fn owned_layout(&self) -> Option<Layout> {
        (self.kind != Kind::RegisteredHost)
            .then(|| Layout::from_size_align(self.size, MOCK_ALIGN).expect("checked at allocation"))
    }

    /// Frees what the allocation handed out at `addr` owns (once: it has left the table).
    pub(super) fn free(&self, addr: usize) {
        if let Some(layout) = self.owned_layout() {
            // SAFETY: `view` was allocated by `allocate` with this layout and its entry is
            // gone from the table, so it is freed once.
            unsafe { std::alloc::dealloc(self.view as *mut u8, layout) };
        }
        if addr != self.view {
            // SAFETY: the no-access range `no_access` mapped for this allocation, `size` bytes.
            unsafe { libc::munmap(addr as *mut libc::c_void, self.size) };
        }
    }
}

/// `len` bytes of address space with no access (reads and writes fault), or `None`.
pub(super) fn no_access(len: usize) -> Option<usize> {
    // SAFETY: an anonymous mapping the kernel places; nothing of ours is there.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (addr != libc::MAP_FAILED).then_some(addr as usize)
}
