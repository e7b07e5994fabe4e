// What the probes share: a monotonic clock in seconds, the data file named on the command line
// (open_data), threads run and timed together (run_threads), CHECK, which ends the program
// with the runtime's message when a CUDA call fails (include cuda_runtime_api.h first to use it),
// and load_kernel, a kernel of a PTX module (include cuda.h first to use it).
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (x);                                                                      \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));                               \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

// The file named by the one argument, opened for reading, and its size in *size; exits with
// the usage or the reason otherwise.
static inline int open_data(int argc, char **argv, long *size) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        exit(2);
    }
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        exit(1);
    }
    *size = lseek(fd, 0, SEEK_END);
    return fd;
}

// Runs fn on n threads (each given its index), and returns the seconds until all have ended.
static inline double run_threads(int n, void *(*fn)(void *)) {
    pthread_t th[64];
    double t0 = now();
    for (long t = 0; t < n; t++)
        pthread_create(&th[t], NULL, fn, (void *)t);
    for (int t = 0; t < n; t++)
        pthread_join(th[t], NULL);
    return now() - t0;
}

#ifdef __cuda_cuda_h__
// The kernel `name` of the PTX module `ptx`; where the module does not load, exits with the
// driver's log of why.
static inline cudaKernel_t load_kernel(const char *ptx, const char *name) {
    cudaLibrary_t lib;
    cudaKernel_t kernel;
    if (cudaLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0) != cudaSuccess) {
        char log[8192] = "";
        CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
        void *vals[] = {log, (void *)(size_t)sizeof log};
        CUmodule m;
        CUresult r = cuModuleLoadDataEx(&m, ptx, 2, opts, vals);
        fprintf(stderr, "cudaLibraryLoadData failed; cuModuleLoadDataEx: %d\n%s\n", r, log);
        exit(1);
    }
    CHECK(cudaLibraryGetKernel(&kernel, lib, name));
    return kernel;
}
#endif
