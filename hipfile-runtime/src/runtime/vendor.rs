//! The two runtime APIs the library loads, and the libraries it tries for each.

/// HIP libraries tried by `dlopen` when the process has no runtime symbols, in order.
pub const HIP_LIBRARY_NAMES: [&str; 4] = ["libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"];

/// CUDA runtime libraries tried next, in order (by name, then where the CUDA toolkit puts
/// them, which is not always on the loader's path).
pub const CUDA_LIBRARY_NAMES: [&str; 5] = [
    "libcudart.so.13",
    "libcudart.so.12",
    "libcudart.so",
    "/usr/local/cuda/lib64/libcudart.so.13",
    "/usr/local/cuda/lib64/libcudart.so.12",
];

/// Whose runtime API a library implements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Vendor {
    /// HIP (`hip*` functions).
    Hip,
    /// CUDA's runtime (`cuda*` functions).
    Cuda,
}

impl Vendor {
    /// The symbol whose presence identifies the vendor's runtime.
    pub(super) fn version_symbol(self) -> &'static str {
        match self {
            Vendor::Hip => "hipRuntimeGetVersion",
            Vendor::Cuda => "cudaRuntimeGetVersion",
        }
    }

    pub(super) fn library_names(self) -> &'static [&'static str] {
        match self {
            Vendor::Hip => &HIP_LIBRARY_NAMES,
            Vendor::Cuda => &CUDA_LIBRARY_NAMES,
        }
    }
}
