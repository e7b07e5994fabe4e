//! The project's kernels, on CUDA: the gathered copy ([`GpuRuntime::gather`]: one launch copies
//! several pieces of pinned host memory to their device addresses) and the served copy
//! ([`GpuRuntime::serve`], [`crate::serve`]: a kernel kept running while small copies come).
//! Both read host memory from the GPU (pinned memory has the same address on the device under
//! unified addressing). A copy call costs the runtime 2-3 µs however small, one call at a time
//! from many threads (docs/performance.md, "Small reads and many callers").
//!
//! The kernels are PTX, compiled by the driver on first use (`cudaLibraryLoadData`, CUDA 12.0
//! and later: one load serves every device). Where they cannot be loaded, gathered pieces are
//! copied one by one, as [`GpuRuntime::gather`]'s default does, and nothing is served.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use hipfile_core::{GatherPiece, GpuRuntime, HipError, Stream};

use crate::ffi::{HipResult, RawStream, check};
use crate::loader::Library;
use crate::serve::{self, Launcher, Server, Shared};

/// [`GpuRuntime::gather`] for `gpu`: one launch of the kernel where `kernels` has it (and it
/// loads), else a copy each.
///
/// # Safety
/// As [`GpuRuntime::gather`].
pub(crate) unsafe fn launch_or_copy<G: GpuRuntime + ?Sized>(
    kernels: Option<&Kernels>,
    gpu: &G,
    pieces: &[GatherPiece],
    stream: Stream,
) -> Result<(), HipError> {
    // SAFETY: the caller's contract.
    if let Some(launched) = kernels.and_then(|k| unsafe { k.gather(pieces, stream.as_raw() as RawStream) }) {
        return launched;
    }
    // SAFETY: the caller's contract.
    unsafe { hipfile_core::gpu::copy_each(gpu, pieces, stream) }
}

/// The kernels. `hipfile_gather`: block (x, y) copies its share of piece y, 16 bytes a thread
/// where the piece's addresses and length are multiples of 16, else a byte a thread; x strides
/// the piece in blocks of 4 KiB (256 threads of 16 bytes). Its parameters: the pieces (source,
/// destination, length: 64-bit each), [`MOST`] at most, and their count.
///
/// `hipfile_serve` ([`crate::serve`]): block b serves slot b of the queue. Its thread 0 looks
/// at the slot's request number until it differs from the last one served, unless the kernel
/// is closing (a word of `state`, in device memory), has run `life` ns, or no slot has been
/// served for `idle` ns (the time of the last copy is `state`'s second word): then it closes
/// the kernel and writes `generation` to `closed` (host memory). Every thread of the block
/// copies its share of the request, 16 bytes at a time, four at once; then thread 0 writes the
/// request's number as the slot's acknowledgement. Host memory is read past the GPU's caches
/// (`.cv`, `.sys`): the host rewrites it between requests.
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
    "DONE:\nret;\n}\n",
    ".visible .entry hipfile_serve(.param .u64 queue, .param .u64 state, .param .u64 closed, .param .u64 generation,",
    " .param .u64 idle, .param .u64 life)\n{\n",
    ".reg .pred %p<12>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<40>;\n.shared .align 16 .b64 job[4];\n",
    "ld.param.u64 %rd1, [queue];\nld.param.u64 %rd2, [state];\nld.param.u64 %rd3, [closed];\n",
    "ld.param.u64 %rd4, [generation];\nld.param.u64 %rd5, [idle];\nld.param.u64 %rd36, [life];\n",
    "cvta.to.global.u64 %rd2, %rd2;\ncvta.to.global.u64 %rd3, %rd3;\n",
    "mov.u32 %r2, %ctaid.x;\nmul.wide.u32 %rd6, %r2, 128;\nadd.u64 %rd7, %rd1, %rd6;\ncvta.to.global.u64 %rd7, %rd7;\n",
    "mov.u32 %r3, %tid.x;\nsetp.eq.u32 %p1, %r3, 0;\n",
    "ld.volatile.global.u64 %rd8, [%rd7+64];\nmov.u64 %rd9, %globaltimer;\nmov.u64 %rd35, %rd9;\n",
    "cvt.u64.u32 %rd10, %r3;\nshl.b64 %rd10, %rd10, 4;\nmov.u32 %r4, %ntid.x;\nmul.wide.u32 %rd11, %r4, 16;\n",
    "shl.b64 %rd33, %rd11, 2;\n",
    // Thread 0 looks for work; the others wait at the barrier.
    "POLL:\n@!%p1 bra WAIT;\n",
    "ld.volatile.global.u32 %r5, [%rd2];\nsetp.ne.u32 %p2, %r5, 0;\n@%p2 bra QUIT;\n",
    "mov.u64 %rd14, %globaltimer;\nsub.u64 %rd37, %rd14, %rd35;\nsetp.gt.u64 %p11, %rd37, %rd36;\n@%p11 bra CLOSE;\n",
    "ld.acquire.sys.global.u64 %rd13, [%rd7];\nsetp.ne.u64 %p3, %rd13, %rd8;\n@%p3 bra TAKE;\n",
    "ld.volatile.global.u64 %rd34, [%rd2+8];\nmax.u64 %rd34, %rd34, %rd9;\n",
    "sub.u64 %rd15, %rd14, %rd34;\nsetp.gt.u64 %p4, %rd15, %rd5;\n@%p4 bra CLOSE;\nbra POLL;\n",
    "CLOSE:\nmov.u32 %r6, 1;\nst.volatile.global.u32 [%rd2], %r6;\nmembar.sys;\nst.volatile.global.u64 [%rd3], %rd4;\n",
    "QUIT:\nmov.u64 %rd16, 0;\nst.shared.u64 [job], %rd16;\nbra WAIT;\n",
    "TAKE:\nld.volatile.global.u64 %rd17, [%rd7+8];\nld.volatile.global.u64 %rd18, [%rd7+16];\n",
    "ld.volatile.global.u64 %rd19, [%rd7+24];\nmov.u64 %rd16, 1;\nst.shared.u64 [job], %rd16;\n",
    "st.shared.u64 [job+8], %rd17;\nst.shared.u64 [job+16], %rd18;\nst.shared.u64 [job+24], %rd19;\nmov.u64 %rd8, %rd13;\n",
    // Every thread: the job (none: the kernel ends), its share copied.
    "WAIT:\nbar.sync 0;\nld.shared.u64 %rd16, [job];\nsetp.eq.u64 %p6, %rd16, 0;\n@%p6 bra EXIT;\n",
    "ld.shared.u64 %rd17, [job+8];\nld.shared.u64 %rd18, [job+16];\nld.shared.u64 %rd19, [job+24];\n",
    "cvta.to.global.u64 %rd17, %rd17;\ncvta.to.global.u64 %rd18, %rd18;\nmov.u64 %rd20, %rd10;\n",
    "COPY:\nsetp.ge.u64 %p7, %rd20, %rd19;\n@%p7 bra COPIED;\n",
    "add.u64 %rd21, %rd20, %rd11;\nadd.u64 %rd22, %rd21, %rd11;\nadd.u64 %rd23, %rd22, %rd11;\n",
    "setp.lt.u64 %p8, %rd21, %rd19;\nsetp.lt.u64 %p9, %rd22, %rd19;\nsetp.lt.u64 %p10, %rd23, %rd19;\n",
    "add.u64 %rd24, %rd17, %rd20;\nld.global.cv.v4.u32 {%r10, %r11, %r12, %r13}, [%rd24];\n",
    "add.u64 %rd25, %rd17, %rd21;\n@%p8 ld.global.cv.v4.u32 {%r14, %r15, %r16, %r17}, [%rd25];\n",
    "add.u64 %rd26, %rd17, %rd22;\n@%p9 ld.global.cv.v4.u32 {%r18, %r19, %r20, %r21}, [%rd26];\n",
    "add.u64 %rd27, %rd17, %rd23;\n@%p10 ld.global.cv.v4.u32 {%r22, %r23, %r24, %r25}, [%rd27];\n",
    "add.u64 %rd28, %rd18, %rd20;\nst.global.v4.u32 [%rd28], {%r10, %r11, %r12, %r13};\n",
    "add.u64 %rd29, %rd18, %rd21;\n@%p8 st.global.v4.u32 [%rd29], {%r14, %r15, %r16, %r17};\n",
    "add.u64 %rd30, %rd18, %rd22;\n@%p9 st.global.v4.u32 [%rd30], {%r18, %r19, %r20, %r21};\n",
    "add.u64 %rd31, %rd18, %rd23;\n@%p10 st.global.v4.u32 [%rd31], {%r22, %r23, %r24, %r25};\n",
    "add.u64 %rd20, %rd20, %rd33;\nbra COPY;\n",
    // The copy made visible, then acknowledged (and its time kept).
    "COPIED:\nmembar.sys;\nbar.sync 0;\n@!%p1 bra POLL;\n",
    "st.release.sys.global.u64 [%rd7+64], %rd8;\nmov.u64 %rd9, %globaltimer;\nst.volatile.global.u64 [%rd2+8], %rd9;\n",
    "bra POLL;\nEXIT:\nret;\n}\n\0",
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
type MemsetAsync = unsafe extern "C" fn(*mut c_void, c_int, usize, RawStream) -> HipResult;
type StreamQuery = unsafe extern "C" fn(RawStream) -> HipResult;

/// `cudaErrorNotReady`: work queued on the stream is still to run.
const NOT_READY: HipResult = 600;

/// Threads in a block of the served copy's kernel: a 64 KiB copy in one round of loads.
const SERVE_BLOCK: c_uint = 1024;

/// The CUDA runtime's entry points for loading and launching the kernels.
#[derive(Clone, Copy)]
struct Entries {
    load_data: LoadData,
    get_kernel: GetKernel,
    launch: Launch,
    memset_async: MemsetAsync,
    stream_query: StreamQuery,
}

/// A device's server of copies, made on first use (`None`: it could not be).
type DeviceServer = OnceLock<Option<Server<CudaLauncher>>>;

/// The kernels' entry points, the kernels once loaded, and each device's server of copies.
pub(crate) struct Kernels {
    entries: Entries,
    /// `cudaKernel_t` of `hipfile_gather` and `hipfile_serve`, or why they could not be loaded.
    loaded: OnceLock<Result<[usize; 2], HipError>>,
    /// Each device's server, made on first use there (`None`: it could not be).
    servers: OnceLock<Box<[DeviceServer]>>,
}

impl Kernels {
    /// The entry points in CUDA's runtime `lib` (12.0 and later), `None` where it lacks them.
    pub(crate) fn resolve(lib: Library) -> Option<Kernels> {
        macro_rules! entry {
            ($name:literal, $ty:ty) => {{
                let sym = lib.symbol($name)?;
                // SAFETY: the address of the runtime's function `$name`, whose C signature
                // (CUDA 12 and 13 agree) is the target type.
                unsafe { std::mem::transmute::<*mut c_void, $ty>(sym) }
            }};
        }
        let entries = Entries {
            load_data: entry!("cudaLibraryLoadData", LoadData),
            get_kernel: entry!("cudaLibraryGetKernel", GetKernel),
            launch: entry!("cudaLaunchKernel", Launch),
            memset_async: entry!("cudaMemsetAsync", MemsetAsync),
            stream_query: entry!("cudaStreamQuery", StreamQuery),
        };
        Some(Kernels { entries, loaded: OnceLock::new(), servers: OnceLock::new() })
    }

    /// The kernels, loaded on first use.
    fn loaded(&self) -> Result<[usize; 2], HipError> {
        *self.loaded.get_or_init(|| {
            let mut lib = std::ptr::null_mut();
            let (no_options, no_values) = (std::ptr::null_mut(), std::ptr::null_mut());
            // SAFETY: resolved `cudaLibraryLoadData` with a NUL-terminated PTX image and no
            // options; `lib` is writable.
            let loaded = unsafe {
                (self.entries.load_data)(
                    &mut lib,
                    PTX.as_ptr().cast(),
                    no_options,
                    no_values,
                    0,
                    no_options,
                    no_values,
                    0,
                )
            };
            check(loaded)?;
            let kernel = |name: &std::ffi::CStr| {
                let mut kernel = std::ptr::null_mut();
                // SAFETY: resolved `cudaLibraryGetKernel` on the library just loaded (kept for
                // the process's life), a NUL-terminated name; `kernel` is writable.
                check(unsafe { (self.entries.get_kernel)(&mut kernel, lib, name.as_ptr()) }).map(|()| kernel as usize)
            };
            Ok([kernel(c"hipfile_gather")?, kernel(c"hipfile_serve")?])
        })
    }

    /// [`GpuRuntime::serve`] on `gpu`'s current device: `None` where the piece is not a
    /// multiple of 16 bytes at addresses that are (the kernel's unit), or the device has no
    /// server.
    ///
    /// # Safety
    /// As [`GpuRuntime::serve`].
    pub(crate) unsafe fn serve<G: GpuRuntime + ?Sized>(
        &self,
        gpu: &G,
        piece: GatherPiece,
    ) -> Option<Result<(), HipError>> {
        let (src, dst, len) = (piece.src, piece.dst.addr(), piece.dst.len());
        if len == 0 || !(src | dst | len).is_multiple_of(16) {
            return None;
        }
        let server = self.server(gpu)?;
        // SAFETY: the caller's contract; all three are multiples of 16.
        unsafe { server.copy(src, dst, len) }
    }

    /// The server of `gpu`'s current device, made on first use.
    fn server<G: GpuRuntime + ?Sized>(&self, gpu: &G) -> Option<&Server<CudaLauncher>> {
        let device = usize::try_from(gpu.current_device().ok()?).ok()?;
        let servers = self.servers.get_or_init(|| {
            let count = gpu.device_count().map_or(0, |n| usize::try_from(n).unwrap_or(0));
            (0..count).map(|_| OnceLock::new()).collect()
        });
        servers.get(device)?.get_or_init(|| self.new_server(gpu).ok()).as_ref()
    }

    /// A server for `gpu`'s current device: its stream, the kernel's words in device memory,
    /// and the queue in pinned host memory, kept for the process's life.
    fn new_server<G: GpuRuntime + ?Sized>(&self, gpu: &G) -> Result<Server<CudaLauncher>, HipError> {
        let [_, kernel] = self.loaded()?;
        let stream = gpu.stream_create()?;
        let made = gpu.device_alloc(16).and_then(|state| match gpu.host_alloc(size_of::<Shared>()) {
            Ok(shared) => Ok((state, shared.cast::<Shared>())),
            Err(e) => {
                // SAFETY: just allocated, not used.
                let _ = unsafe { gpu.device_free(state) };
                Err(e)
            }
        });
        let (state, shared) = match made {
            Ok(made) => made,
            Err(e) => {
                let _ = gpu.stream_destroy(stream);
                return Err(e);
            }
        };
        // SAFETY: pinned memory just allocated for a `Shared` (page-aligned).
        unsafe { shared.write(Shared::default()) };
        // SAFETY: as above, now initialised; never freed.
        let shared: &'static Shared = unsafe { &*shared };
        let stream = stream.as_raw();
        Ok(Server::new(shared, CudaLauncher { entries: self.entries, kernel, stream, state, shared }))
    }

    /// Launches the gathering kernel on `stream` for `pieces`, [`MOST`] at a time; `None` where
    /// the kernels could not be loaded, before anything is queued (the caller then copies piece
    /// by piece).
    ///
    /// # Safety
    /// As [`GpuRuntime::gather`].
    unsafe fn gather(&self, pieces: &[GatherPiece], stream: RawStream) -> Option<Result<(), HipError>> {
        let [kernel, _] = self.loaded().ok()?;
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
            let rc =
                unsafe { (self.entries.launch)(kernel as *const c_void, grid, block, args.as_mut_ptr(), 0, stream) };
            if let Err(e) = check(rc) {
                return Some(Err(e));
            }
        }
        Some(Ok(()))
    }
}

/// A device's kernel of served copies, as [`crate::serve`] launches it.
struct CudaLauncher {
    entries: Entries,
    /// `cudaKernel_t` of `hipfile_serve`.
    kernel: usize,
    /// The device's stream for the kernel (`cudaStream_t`).
    stream: usize,
    /// 16 bytes of device memory: whether the kernel is closing, and when it last copied.
    state: usize,
    shared: &'static Shared,
}

impl Launcher for CudaLauncher {
    fn launch(&self, generation: u64) -> Result<(), HipError> {
        let stream = self.stream as RawStream;
        // SAFETY: resolved `cudaMemsetAsync` on the server's 16 bytes of device memory, queued on
        // its stream (after the last kernel, which uses them, has ended).
        check(unsafe { (self.entries.memset_async)(self.state as *mut c_void, 0, 16, stream) })?;
        let mut params = [
            std::ptr::from_ref(self.shared) as u64,
            self.state as u64,
            std::ptr::from_ref(&self.shared.closed) as u64,
            generation,
            serve::IDLE_NS,
            serve::LIFE_NS,
        ];
        let mut args = params.each_mut().map(|p| std::ptr::from_mut(p).cast::<c_void>());
        let grid = Dim3 { x: serve::SLOTS as c_uint, y: 1, z: 1 };
        let block = Dim3 { x: SERVE_BLOCK, y: 1, z: 1 };
        // SAFETY: resolved `cudaLaunchKernel` with `hipfile_serve`'s handle and its six 64-bit
        // parameters (read when the launch is queued); the queue and the state live for the
        // process's life.
        check(unsafe { (self.entries.launch)(self.kernel as *const c_void, grid, block, args.as_mut_ptr(), 0, stream) })
    }

    fn ended(&self) -> Result<bool, HipError> {
        // SAFETY: resolved `cudaStreamQuery` on the server's stream, which is never destroyed.
        match unsafe { (self.entries.stream_query)(self.stream as RawStream) } {
            0 => Ok(true),
            NOT_READY => Ok(false),
            rc => Err(HipError(rc)),
        }
    }
}
