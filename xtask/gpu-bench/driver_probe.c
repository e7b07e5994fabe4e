// Where small copies to the device serialize, and what one costs: the same copy and wait made
// through the runtime (cudaMemcpyAsync, cudaStreamSynchronize); through the driver
// (cuMemcpyHtoDAsync, cuStreamSynchronize); through the driver with the wait read from host
// memory (the stream writes a flag after the copy, cuStreamWriteValue32, and the thread spins on
// it without a call); from a context of each thread's own (cuCtxCreate, each with its own device
// buffer); and through the runtime from pageable memory (malloc'd, which the driver stages).
// Copies alone and with the `pread` before them, 4, 16 and 64 KiB, from 1, 4 and 16 threads,
// each thread with its own host buffer and stream; threads start together after a barrier, so
// setup is not timed. Last, whether a copy made in a context of its own may land in memory of
// the primary context (what the library would need of it).
//   gcc -O2 -I/usr/local/cuda/include driver_probe.c -L/usr/local/cuda/lib64 \
//       -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread
//   ./a.out FILE [MODES]    (FILE warm, at least 64 MiB; MODES: which of 0-4 to run, e.g. 04)
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#include "probe.h"

#define MOST_THREADS 16
#define DRV(x)                                                                                     \
    do {                                                                                           \
        CUresult r_ = (x);                                                                         \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *m_ = "?";                                                                  \
            cuGetErrorString(r_, &m_);                                                             \
            fprintf(stderr, "%s: %d %s\n", #x, (int)r_, m_);                                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

enum mode { RUNTIME, DRIVER, DRIVER_FLAG, OWN_CONTEXT, PAGEABLE };
static const char *names[] = {"runtime copy + sync", "driver copy + sync", "driver copy + flag spin",
                              "own context, driver copy + sync", "pageable: runtime copy + sync"};

static int fd, with_read, calls;
static long file_size;
static size_t io;
static enum mode mode;
static char *dev;
static CUcontext primary;
static pthread_barrier_t ready;
static double ended[MOST_THREADS];
static double started;

static void *run(void *arg) {
    long t = (long)arg;
    CUcontext own = NULL;
    CUdeviceptr dst = (CUdeviceptr)(dev + t * io);
    if (mode == OWN_CONTEXT) {
        CUdevice d;
        DRV(cuDeviceGet(&d, 0));
#if CUDA_VERSION >= 13000
        DRV(cuCtxCreate(&own, NULL, CU_CTX_SCHED_SPIN, d));
#else
        DRV(cuCtxCreate(&own, CU_CTX_SCHED_SPIN, d));
#endif
        DRV(cuMemAlloc(&dst, io));
    } else {
        DRV(cuCtxSetCurrent(primary));
    }
    void *host;
    volatile uint32_t *flag;
    CUstream s;
    if (mode == PAGEABLE) {
        host = aligned_alloc(4096, io);
        memset(host, 1, io);
    } else {
        DRV(cuMemHostAlloc(&host, io, 0));
    }
    DRV(cuMemHostAlloc((void **)&flag, 64, CU_MEMHOSTALLOC_DEVICEMAP));
    CUdeviceptr flag_dev;
    DRV(cuMemHostGetDevicePointer(&flag_dev, (void *)flag, 0));
    *flag = 0;
    DRV(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    unsigned seed = 7 + t;
    pthread_barrier_wait(&ready);
    if (t == 0)
        started = now();
    for (int i = 1; i <= calls; i++) {
        off_t off = (off_t)(rand_r(&seed) % (file_size / io)) * io;
        if (with_read && pread(fd, host, io, off) != (ssize_t)io) {
            perror("pread");
            exit(1);
        }
        switch (mode) {
        case RUNTIME:
        case PAGEABLE:
            CHECK(cudaMemcpyAsync((void *)dst, host, io, cudaMemcpyHostToDevice, (cudaStream_t)s));
            CHECK(cudaStreamSynchronize((cudaStream_t)s));
            break;
        case DRIVER:
        case OWN_CONTEXT:
            DRV(cuMemcpyHtoDAsync(dst, host, io, s));
            DRV(cuStreamSynchronize(s));
            break;
        case DRIVER_FLAG:
            DRV(cuMemcpyHtoDAsync(dst, host, io, s));
            DRV(cuStreamWriteValue32(s, flag_dev, (uint32_t)i, CU_STREAM_WRITE_VALUE_DEFAULT));
            while (*flag != (uint32_t)i)
                __builtin_ia32_pause();
            break;
        }
    }
    ended[t] = now();
    DRV(cuStreamSynchronize(s));
    DRV(cuStreamDestroy(s));
    if (mode == PAGEABLE)
        free(host);
    else
        DRV(cuMemFreeHost(host));
    DRV(cuMemFreeHost((void *)flag));
    if (own) {
        DRV(cuMemFree(dst));
        DRV(cuCtxDestroy(own));
    }
    return NULL;
}

static void measure(int n) {
    pthread_t th[MOST_THREADS];
    pthread_barrier_init(&ready, NULL, n);
    for (long t = 0; t < n; t++)
        pthread_create(&th[t], NULL, run, (void *)t);
    for (int t = 0; t < n; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&ready);
    double last = 0;
    for (int t = 0; t < n; t++)
        last = ended[t] > last ? ended[t] : last;
    double secs = last - started;
    printf("%6zu B x %2d threads  %-6s %-32s %7.2f us/call  %6.2f GB/s\n", io, n, with_read ? "pread" : "-",
           names[mode], secs / calls * 1e6, (double)io * calls * n / secs / 1e9);
    fflush(stdout);
}

// Whether a copy issued in a context of its own may write memory the primary context owns,
// before and after peer access is enabled between the two.
static void cross_context(void) {
    CUdevice d;
    CUcontext own;
    void *host;
    DRV(cuDeviceGet(&d, 0));
#if CUDA_VERSION >= 13000
    DRV(cuCtxCreate(&own, NULL, 0, d));
#else
    DRV(cuCtxCreate(&own, 0, d));
#endif
    DRV(cuMemHostAlloc(&host, 4096, 0));
    CUresult before = cuMemcpyHtoD((CUdeviceptr)dev, host, 4096);
    CUresult peer = cuCtxEnablePeerAccess(primary, 0);
    CUresult after = cuMemcpyHtoD((CUdeviceptr)dev, host, 4096);
    printf("copy from an own context into the primary's memory: %d; enable peer access: %d; copy then: %d\n",
           (int)before, (int)peer, (int)after);
    DRV(cuMemFreeHost(host));
    DRV(cuCtxDestroy(own));
    DRV(cuCtxSetCurrent(primary));
}

int main(int argc, char **argv) {
    const char *modes = argc > 2 ? argv[2] : "01234";
    fd = open_data(argc > 2 ? 2 : argc, argv, &file_size);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)MOST_THREADS << 16));
    DRV(cuCtxGetCurrent(&primary));
    size_t sizes[] = {4096, 16384, 65536};
    int counts[] = {1, 4, 16};
    for (with_read = 0; with_read <= 1; with_read++)
        for (int z = 0; z < 3; z++)
            for (int c = 0; c < 3; c++)
                for (mode = RUNTIME; mode <= PAGEABLE; mode++) {
                    if (!strchr(modes, '0' + mode))
                        continue;
                    io = sizes[z];
                    calls = counts[c] == 16 ? 8000 : 20000;
                    if (with_read && counts[c] == 4)
                        continue;
                    measure(counts[c]);
                }
    if (strchr(modes, '3'))
        cross_context();
    return 0;
}
