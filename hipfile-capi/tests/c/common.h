/* Small helpers shared by the C test programs: every failed check prints where and exits 1. */
#ifndef HIPFILE_TEST_COMMON_H
#define HIPFILE_TEST_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hipfile.h>

#include "check.h"

/* A hipFileError_t call that must give exactly {expected, hipSuccess}. */
#define EXPECT_ERR(call, expected)                                                     \
    do {                                                                               \
        hipFileError_t e_ = (call);                                                    \
        if (e_.err != (expected) || e_.hip_drv_err != hipSuccess) {                    \
            fprintf(stderr, "%s:%d: %s gave {%d, %d}, expected {%d, 0}\n", __FILE__,  \
                    __LINE__, #call, (int)e_.err, (int)e_.hip_drv_err, (int)(expected)); \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define EXPECT_OK(call) EXPECT_ERR(call, hipFileSuccess)

#define HIP_OK(call) CHECK((call) == hipSuccess)

/* Registers descriptor `fd`, which must succeed. */
static inline hipFileHandle_t register_fd(int fd)
{
    hipFileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = hipFileHandleTypeOpaqueFD;
    descr.handle.fd = fd;
    hipFileHandle_t fh = NULL;
    EXPECT_OK(hipFileHandleRegister(&fh, &descr));
    return fh;
}

/* Reads `n` (at most 4) pieces of `piece` bytes of `fh` as one batch, piece i from file offset
 * i * piece into `base` at the same offset; waits for them, keeps their events in `events` and
 * returns how many there are. */
static inline unsigned batch_read_pieces(hipFileHandle_t fh, void *base, size_t piece, unsigned n,
                                         hipFileIOEvents_t *events)
{
    hipFileBatchHandle_t batch;
    EXPECT_OK(hipFileBatchIOSetUp(&batch, 4));
    hipFileIOParams_t io[4];
    CHECK(n <= 4);
    memset(io, 0, sizeof io);
    for (unsigned i = 0; i < n; i++) {
        io[i].mode = hipFileBatch;
        io[i].fh = fh;
        io[i].opcode = hipFileBatchRead;
        io[i].u.batch.devPtr_base = base;
        io[i].u.batch.devPtr_offset = (int64_t)(i * piece);
        io[i].u.batch.file_offset = (int64_t)(i * piece);
        io[i].u.batch.size = piece;
    }
    EXPECT_OK(hipFileBatchIOSubmit(batch, n, io, 0));
    unsigned nr = n;
    EXPECT_OK(hipFileBatchIOGetStatus(batch, n, &nr, events, NULL));
    hipFileBatchIODestroy(batch);
    return nr;
}

/* Byte i of the test data with `seed`: not periodic at any power of two below 2^32. */
static inline unsigned char byte_at(unsigned long long i, unsigned seed)
{
    unsigned long long x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (unsigned long long)seed * 0xBF58476D1CE4E5B9ull;
    return (unsigned char)(x >> 29);
}

/* pread/pwrite in full, whatever signals do to them. */
static inline void full_pread(int fd, void *buf, size_t len, off_t offset)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(fd, (char *)buf + done, len - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        CHECK(n > 0);
        done += (size_t)n;
    }
}

static inline void full_pwrite(int fd, const void *buf, size_t len, off_t offset)
{
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)buf + done, len - done, offset + (off_t)done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        CHECK(n > 0);
        done += (size_t)n;
    }
}

#ifdef TESTS_OVER_CUDA
/* Built with -DTESTS_OVER_CUDA for an NVIDIA machine (`cargo xtask gpu-bench`): the HIP calls
 * of the program go to CUDA's runtime, put in the process first, as a HIP program on NVIDIA has
 * it (libhipfile then follows that runtime). */
#include <dlfcn.h>
static int (*cuda_malloc)(void **, size_t);
static int (*cuda_free)(void *);
static int (*cuda_memcpy)(void *, const void *, size_t, int);
static int (*cuda_memset)(void *, int, size_t);
static int (*cuda_set_device)(int);
static int (*cuda_get_device)(int *);
static int (*cuda_get_device_count)(int *);
static int (*cuda_stream_create_with_flags)(void **, unsigned);
static int (*cuda_stream_destroy)(void *);
static int (*cuda_stream_synchronize)(void *);
static int (*cuda_memcpy_async)(void *, const void *, size_t, int, void *);
static int (*cuda_launch_host_func)(void *, void (*)(void *), void *);
static int (*cuda_host_alloc)(void **, size_t, unsigned);
static int (*cuda_free_host)(void *);
static int (*cuda_stream_create)(void **);
#define hipMalloc(p, n) cuda_malloc((void **)(p), (n))
#define hipFree(p) cuda_free(p)
#define hipMemcpy(d, s, n, k) cuda_memcpy((d), (s), (n), (int)(k))
#define hipMemset(p, v, n) cuda_memset((p), (v), (n))
#define hipSetDevice(d) cuda_set_device(d)
#define hipGetDevice(d) cuda_get_device(d)
#define hipGetDeviceCount(c) cuda_get_device_count(c)
#define hipStreamCreateWithFlags(s, f) cuda_stream_create_with_flags((void **)(s), (f))
#define hipStreamDestroy(s) cuda_stream_destroy(s)
#define hipStreamSynchronize(s) cuda_stream_synchronize(s)
#define hipMemcpyAsync(d, s, n, k, st) cuda_memcpy_async((d), (s), (n), (int)(k), (st))
#define hipLaunchHostFunc(s, f, a) cuda_launch_host_func((s), (f), (a))
#define hipHostMalloc(p, n, f) cuda_host_alloc((void **)(p), (n), (f))
#define hipHostFree(p) cuda_free_host(p)
#define hipStreamCreate(s) cuda_stream_create((void **)(s))
static inline void gpu_init(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    CHECK(rt != NULL);
    *(void **)&cuda_malloc = dlsym(rt, "cudaMalloc");
    *(void **)&cuda_free = dlsym(rt, "cudaFree");
    *(void **)&cuda_memcpy = dlsym(rt, "cudaMemcpy");
    *(void **)&cuda_memset = dlsym(rt, "cudaMemset");
    *(void **)&cuda_set_device = dlsym(rt, "cudaSetDevice");
    *(void **)&cuda_get_device = dlsym(rt, "cudaGetDevice");
    *(void **)&cuda_get_device_count = dlsym(rt, "cudaGetDeviceCount");
    *(void **)&cuda_stream_create_with_flags = dlsym(rt, "cudaStreamCreateWithFlags");
    *(void **)&cuda_stream_destroy = dlsym(rt, "cudaStreamDestroy");
    *(void **)&cuda_stream_synchronize = dlsym(rt, "cudaStreamSynchronize");
    *(void **)&cuda_memcpy_async = dlsym(rt, "cudaMemcpyAsync");
    *(void **)&cuda_launch_host_func = dlsym(rt, "cudaLaunchHostFunc");
    *(void **)&cuda_host_alloc = dlsym(rt, "cudaHostAlloc");
    *(void **)&cuda_free_host = dlsym(rt, "cudaFreeHost");
    *(void **)&cuda_stream_create = dlsym(rt, "cudaStreamCreate");
    CHECK(cuda_malloc && cuda_free && cuda_memcpy && cuda_memset && cuda_set_device && cuda_get_device &&
          cuda_get_device_count && cuda_stream_create_with_flags && cuda_stream_destroy &&
          cuda_stream_synchronize && cuda_memcpy_async && cuda_launch_host_func && cuda_host_alloc &&
          cuda_free_host && cuda_stream_create);
}
#else
/* With HIP (or the mock HIP runtime) linked in, nothing to set up. */
static inline void gpu_init(void) {}
#endif

#endif
