//! CUDA's gathered copy ([`GpuRuntime::gather`](hipfile_core::GpuRuntime::gather)): one kernel
//! launch copies several pieces of pinned host memory to their device addresses, the GPU
//! reading the host memory itself (pinned memory has the same address on the device under
//! unified addressing). A copy call costs the runtime 2-3 µs however small, one call at a time
//! from many threads; a launch for sixteen pieces pays that once (docs/performance.md, "Small
//! reads and many callers").
//!
//! The kernel is PTX, compiled by the driver on first use (`cudaLibraryLoadData`, CUDA 12.0 and
//! later: one load serves every device). Where it cannot be loaded, the pieces are copied one by
//! one, as [`GpuRuntime::gather`](hipfile_core::GpuRuntime::gather)'s default does.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use hipfile_core::{GatherPiece, GpuRuntime, HipError, Stream};

use crate::ffi::{HipResult, RawStream, check};
use crate::loader::Library;

/// [`GpuRuntime::gather`] for `gpu`: one launch of the kernel where `gather` has it (and it
/// loads), else a copy each.
///
/// # Safety
/// As [`GpuRuntime::gather`].
pub(crate) unsafe fn launch_or_copy<G: GpuRuntime + ?Sized>(
    gather: Option<&Gather>,
    gpu: &G,
    pieces: &[GatherPiece],
    stream: Stream,
) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    if let Some(launched) = gather.and_then(|g| unsafe { g.launch(pieces, stream.as_raw() as RawStream) }) {
        return launched;
    }
    // SAFETY: the caller's contract.
    unsafe { hipfile_core::gpu::copy_each(gpu, pieces, stream) }
}

/// The kernel: block (x, y) copies its share of piece y, 16 bytes a thread where the piece's
/// addresses and length are multiples of 16, else a byte a thread; x strides the piece in
/// blocks of 4 KiB (256 threads of 16 bytes). Its parameters: the pieces (source, destination,
/// length: 64-bit each), [`MOST`] at most, and their count.
const PTX: &str = concat!(
    ".version 7.0\n.target sm_75\n.address_size 64\n",
    ".visible .entry hipfile_gather(.param .align 8 .b8 pieces[1536], .param .u32 count)\n{\n",
    ".reg .pred %p<4>;\n.reg .b16 %h<2>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n",
    // Piece y's source, destination and length; whether all three are multiples of 16.
    "mov.u32 %r1, %ctaid.y;\nld.param.u32 %r2, [count];\nsetp.ge.u32 %p1, %r1, %r2;\n@%p1 bra DONE;\n",
    "mov.u64 %rd1, pieces;\nmul.wide.u32 %rd2, %r1, 24;\nadd.u64 %rd3, %rd1, %rd2;\n",
    "ld.param.u64 %rd4, [%rd3];\nld.param.u64 %rd5, [%rd3+8];\nld.param.u64 %rd6, [%rd3+16];\n",
    "cvta.to.global.u64 %rd4, %rd4;\ncvta.to.global.u64 %rd5, %rd5;\n",
    "or.b64 %rd7, %rd4, %rd5;\nor.b64 %rd7, %rd7, %rd6;\nand.b64 %rd7, %rd7, 15;\n",
    // This thread's first unit (ctaid.x * ntid.x + tid.x) and the stride (nctaid.x * ntid.x).
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\nmad.lo.u32 %r6, %r3, %r4, %r5;\n",
    "mov.u32 %r7, %nctaid.x;\nmul.lo.u32 %r8, %r7, %r4;\ncvt.u64.u32 %rd8, %r6;\ncvt.u64.u32 %rd9, %r8;\n",
    "setp.ne.u64 %p2, %rd7, 0;\n@%p2 bra BYTES;\nshl.b64 %rd10, %rd8, 4;\nshl.b64 %rd11, %rd9, 4;\n",
    "WIDE:\nsetp.ge.u64 %p3, %rd10, %rd6;\n@%p3 bra DONE;\nadd.u64 %rd12, %rd4, %rd10;\nadd.u64 %rd13, %rd5, %rd10;\n",
    "ld.global.v4.u32 {%r9, %r10, %r11, %r12}, [%rd12];\nst.global.v4.u32 [%rd13], {%r9, %r10, %r11, %r12};\n",
    "add.u64 %rd10, %rd10, %rd11;\nbra WIDE;\n",
    "BYTES:\nsetp.ge.u64 %p3, %rd8, %rd6;\n@%p3 bra DONE;\nadd.u64 %rd12, %rd4, %rd8;\nadd.u64 %rd13, %rd5, %rd8;\n",
    "ld.global.u8 %h1, [%rd12];\nst.global.u8 [%rd13], %h1;\nadd.u64 %rd8, %rd8, %rd9;\nbra BYTES;\n",
    "DONE:\nret;\n}\n\0",
);

/// Most pieces one launch takes (the kernel's parameter array).
const MOST: usize = 64;
/// Threads in a block, and bytes a block copies per stride.
const BLOCK: c_uint = 256;
const BLOCK_BYTES: usize = BLOCK as usize * 16;
/// Most blocks per piece.
const MOST_BLOCKS: usize = 64;

/// `dim3`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Dim3 {
    x: c_uint,
    y: c_uint,
    z: c_uint,
}

type LoadData = unsafe extern "C" fn(
    *mut *mut c_void,
    *const c_void,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
    *mut c_int,
    *mut *mut c_void,
    c_uint,
) -> HipResult;
type GetKernel = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> HipResult;
type Launch = unsafe extern "C" fn(*const c_void, Dim3, Dim3, *mut *mut c_void, usize, RawStream) -> HipResult;

/// The CUDA runtime's entry points for loading and launching the kernel, and the kernel once
/// loaded.
pub(crate) struct Gather {
    load_data: LoadData,
    get_kernel: GetKernel,
    launch: Launch,
    /// `cudaKernel_t`, or why the kernel could not be loaded.
    kernel: OnceLock<Result<usize, HipError>>,
}

impl Gather {
    /// The entry points in CUDA's runtime `lib` (12.0 and later), `None` where it lacks them.
    pub(crate) fn resolve(lib: Library) -> Option<Gather> {
        macro_rules! entry {
            ($name:literal, $ty:ty) => {{
                let sym = lib.symbol($name)?;
                // SAFETY: the address of the runtime's function `$name`, whose C signature
                // (CUDA 12 and 13 agree) is the target type.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(sym) }
            }};
        }
        Some(Gather {
            load_data: entry!("cudaLibraryLoadData", LoadData),
            get_kernel: entry!("cudaLibraryGetKernel", GetKernel),
            launch: entry!("cudaLaunchKernel", Launch),
            kernel: OnceLock::new(),
        })
    }

    /// The kernel, loaded on first use.
    fn kernel(&self) -> Result<usize, HipError> {
        *self.kernel.get_or_init(|| {
            let (mut lib, mut kernel) = (std::ptr::null_mut(), std::ptr::null_mut());
            let (no_options, no_values) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: resolved `cudaLibraryLoadData` with a NUL-terminated PTX image and no
            // options; `lib` is writable.
            let loaded = unsafe {
                (self.load_data)(&mut lib, PTX.as_ptr().cast(), no_options, no_values, 0, no_options, no_values, 0)
            };
            check(loaded)?;
            // SAFETY: resolved `cudaLibraryGetKernel` on the library just loaded (kept for the
            // process's life), a NUL-terminated name; `kernel` is writable.
            check(unsafe { (self.get_kernel)(&mut kernel, lib, c"hipfile_gather".as_ptr()) })?;
            Ok(kernel as usize)
        })
    }

    /// Launches the kernel on `stream` for `pieces`, [`MOST`] at a time; `None` where the kernel
    /// could not be loaded, before anything is queued (the caller then copies piece by piece).
    ///
    /// # Safety
    /// As [`GpuRuntime::gather`](hipfile_core::GpuRuntime::gather).
    unsafe fn launch(&self, pieces: &[GatherPiece], stream: RawStream) -> Option<Result<(), HipError>> {
        let kernel = self.kernel().ok()?;
        for group in pieces.chunks(MOST) {
            let mut params = [[0u64; 3]; MOST];
            for (p, piece) in params.iter_mut().zip(group) {
                *p = [piece.src as u64, piece.dst.addr() as u64, piece.dst.len() as u64];
            }
            let longest = group.iter().map(|p| p.dst.len()).max().unwrap_or(0);
            let blocks = longest.div_ceil(BLOCK_BYTES).clamp(1, MOST_BLOCKS) as c_uint;
            let mut count = group.len() as c_uint;
            let mut args = [(&raw mut params).cast::<c_void>(), (&raw mut count).cast::<c_void>()];
            let grid = Dim3 { x: blocks, y: count, z: 1 };
            let block = Dim3 { x: BLOCK, y: 1, z: 1 };
            // SAFETY: resolved `cudaLaunchKernel` with a kernel handle of `cudaLibraryGetKernel`
            // and its two arguments (read when the launch is queued); the pieces' ranges are the
            // caller's to keep valid until the stream has run the kernel.
            let rc = unsafe { (self.launch)(kernel as *const c_void, grid, block, args.as_mut_ptr(), 0, stream) };
            if let Err(e) = check(rc) {
                return Some(Err(e));
            }
        }
        Some(Ok(()))
    }
}
