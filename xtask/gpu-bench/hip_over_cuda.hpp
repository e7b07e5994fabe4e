// Force-included (`-include`) into a HIP C++ program built on this machine with AMD's HIP
// headers, for the NVIDIA GPU machine: the HIP calls the README's C++ example makes
// (hipMalloc, hipMemcpy, hipFree) go to CUDA's runtime, loaded before main, as a HIP program on
// NVIDIA has it (libhipfile then follows that runtime).
#include <hip/hip_runtime_api.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>

namespace hip_over_cuda {
inline int (*cuda_malloc)(void **, std::size_t);
inline int (*cuda_free)(void *);
inline int (*cuda_memcpy)(void *, const void *, std::size_t, int);

__attribute__((constructor)) static void load()
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (rt != nullptr) {
        *reinterpret_cast<void **>(&cuda_malloc) = dlsym(rt, "cudaMalloc");
        *reinterpret_cast<void **>(&cuda_free) = dlsym(rt, "cudaFree");
        *reinterpret_cast<void **>(&cuda_memcpy) = dlsym(rt, "cudaMemcpy");
    }
    if (cuda_malloc == nullptr || cuda_free == nullptr || cuda_memcpy == nullptr) {
        std::fprintf(stderr, "hip_over_cuda: CUDA's runtime (libcudart.so.13) not found\n");
        std::exit(1);
    }
}
} // namespace hip_over_cuda

#define hipMalloc(p, n) static_cast<hipError_t>(hip_over_cuda::cuda_malloc(reinterpret_cast<void **>(p), (n)))
#define hipFree(p) static_cast<hipError_t>(hip_over_cuda::cuda_free(p))
#define hipMemcpy(d, s, n, k) static_cast<hipError_t>(hip_over_cuda::cuda_memcpy((d), (s), (n), static_cast<int>(k)))
