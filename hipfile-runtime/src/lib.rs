//! hipfile-runtime: the GPU runtimes and storage libraries of hipfile-rs, loaded at run time and
//! put behind hipfile-core's traits (it is not a `-sys` crate: docs/architecture.md says why). The rest
//! of the workspace loads nothing. One module per library: the GPU runtimes ([`runtime`]: HIP and
//! CUDA), AMD's storage entry points ([`ais`]), NVIDIA's cuFile ([`nvidia_cufile`]); one loader (`loader`).
//!
//! GPU runtimes found at run time: HIP on AMD GPUs (and the mock HIP runtime library,
//! `libhipfile_mockhip.so`), and CUDA's runtime on NVIDIA GPUs, the way HIP itself runs there:
//! CUDA's runtime API has the same functions as HIP's, under other names, so one
//! [`LoadedRuntime`] serves both ([`Vendor`]).
//!
//! hipfile-rs never links a GPU runtime: one build runs on AMD, NVIDIA and machines with no
//! GPU. [`LoadedRuntime::discover`] finds one in this order:
//! 1. runtime symbols already in the process, HIP's then CUDA's (the application linked
//!    `libamdhip64`, the mock, or `libcudart`), so the library and the application share one
//!    runtime and one view of device memory;
//! 2. a HIP runtime with at least one device: `dlopen` of `libamdhip64.so`, `.so.7`, `.so.6`,
//!    `.so.5`;
//! 3. a CUDA runtime with at least one device: `libcudart.so.13`, `.so.12`, `libcudart.so`
//!    (with `libcuda.so.1` for the one driver call the runtime API lacks).
//!
//! HIP changed its ABI at 6.0 (`hipRuntimeGetVersion` tells which one a runtime has):
//! `hipPointerAttribute_t` kept its layout but its first field now uses a renumbered
//! `hipMemoryType` (5.x: Host 0, Device 1, Array 2, Unified 3; 6.x and later: Unregistered 0,
//! Host 1, Device 2, Managed 3, Array 10, Unified 11). [`Abi::memory_type`] maps both.
//!
//! Every symbol is resolved once, when the runtime is loaded; a missing one fails the load
//! with its name, never later in an I/O call.

mod abi;
pub mod ais;
mod context;
pub mod device;
mod ffi;
mod gather;
mod loader;
pub mod nvidia_cufile;
pub mod runtime;

pub use abi::{Abi, PointerAttributes, memory_type_v5, memory_type_v6};
pub use ais::{AmdFileHandle, AmdFileIo};
pub use device::{DeviceProp, DevicePropR0600, device_attribute_v5};
pub(crate) use loader::Library;
pub use loader::LoadError;
pub use runtime::{CUDA_LIBRARY_NAMES, HIP_LIBRARY_NAMES, LoadedRuntime, MOCK_MARKER, Vendor};
