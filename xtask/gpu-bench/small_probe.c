// The floor under small bounce reads on the GPU machine: what a 4 KiB or 64 KiB random read of
// a warm file into GPU memory costs when done by hand, step by step, from 1 or 16 threads (each
// with its own pinned buffer and stream). The library's figures (`hipfile bench --mode randread
// --io-size 4K`) are read against these. Built and run on that machine:
//
//   gcc -O2 -I/usr/local/cuda/include small_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out FILE            (FILE warm, at least 64 MiB)
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define CALLS 20000
#define MOST_THREADS 16

enum step { READ_ONLY, COPY_SYNC, COPY_EVENT, READ_COPY_SYNC, READ_COPY_EVENT, READ_MEMCPY, GROUPS, BATCHES };
static const char *names[] = {"pread only", "copy + stream sync", "copy + event spin",
                              "pread + copy + stream sync", "pread + copy + event spin",
                              "pread + cudaMemcpy", "16 preads, 16 copies, 1 sync",
                              "16 preads, 1 batch copy, 1 sync"};
#define GROUP 16

static int fd;
static long file_size;
static size_t io;
static enum step step;
static char *dev;

/// The GROUP pieces of `host` to the first GROUP of `dev`, in one call, in `s`'s order.
static void batch_copy(char *host, cudaStream_t s) {
#if CUDART_VERSION >= 12080
    void *dsts[GROUP], *srcs[GROUP];
    size_t sizes[GROUP], first = 0;
    for (int g = 0; g < GROUP; g++) {
        dsts[g] = dev + g * io;
        srcs[g] = host + g * io;
        sizes[g] = io;
    }
    struct cudaMemcpyAttributes attrs = {0};
    attrs.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
#if CUDART_VERSION >= 13000
    CHECK(cudaMemcpyBatchAsync((void *const *)dsts, (const void *const *)srcs, sizes, GROUP, &attrs, &first, 1, s));
#else
    size_t failed;
    CHECK(cudaMemcpyBatchAsync(dsts, srcs, sizes, GROUP, &attrs, &first, 1, &failed, s));
#endif
#else
    fprintf(stderr, "no cudaMemcpyBatchAsync before CUDA 12.8\n");
    exit(1);
#endif
}

static void *run(void *arg) {
    long t = (long)arg;
    char *host;
    cudaStream_t s;
    cudaEvent_t ev;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc((void **)&host, io * GROUP, cudaHostAllocDefault));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    unsigned seed = 7 + t;
    char *dst = dev + t * io;
    if (step >= GROUPS) {
        // One thread's reads gathered and their copies queued back to back, or as one
        // cudaMemcpyBatchAsync (CUDA 12.8 and later): what a thread that copies for several
        // callers at once would pay per read (CALLS reads in all).
        for (int i = 0; i < CALLS / GROUP; i++) {
            for (int g = 0; g < GROUP; g++) {
                off_t off = (off_t)(rand_r(&seed) % (file_size / io)) * io;
                if (pread(fd, host + g * io, io, off) != (ssize_t)io) {
                    perror("pread");
                    exit(1);
                }
            }
            if (step == GROUPS)
                for (int g = 0; g < GROUP; g++)
                    CHECK(cudaMemcpyAsync(dev + g * io, host + g * io, io, cudaMemcpyHostToDevice, s));
            else
                batch_copy(host, s);
            CHECK(cudaStreamSynchronize(s));
        }
    }
    for (int i = 0; i < CALLS && step < GROUPS; i++) {
        off_t off = (off_t)(rand_r(&seed) % (file_size / io)) * io;
        if (step != COPY_SYNC && step != COPY_EVENT && pread(fd, host, io, off) != (ssize_t)io) {
            perror("pread");
            exit(1);
        }
        switch (step) {
        case READ_ONLY:
            break;
        case COPY_SYNC:
        case READ_COPY_SYNC:
            CHECK(cudaMemcpyAsync(dst, host, io, cudaMemcpyHostToDevice, s));
            CHECK(cudaStreamSynchronize(s));
            break;
        case COPY_EVENT:
        case READ_COPY_EVENT:
            CHECK(cudaMemcpyAsync(dst, host, io, cudaMemcpyHostToDevice, s));
            CHECK(cudaEventRecord(ev, s));
            while (cudaEventQuery(ev) == cudaErrorNotReady)
                ;
            break;
        case READ_MEMCPY:
            CHECK(cudaMemcpy(dst, host, io, cudaMemcpyHostToDevice));
            break;
        default:
            break;
        }
    }
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(host));
    return NULL;
}

int main(int argc, char **argv) {
    fd = open_data(argc, argv, &file_size);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)MOST_THREADS << 16));
    size_t sizes[] = {4096, 65536};
    int thread_counts[] = {1, 16};
    for (int z = 0; z < 2; z++)
        for (int c = 0; c < 2; c++)
            for (step = READ_ONLY; step <= BATCHES; step++) {
                io = sizes[z];
                int n = thread_counts[c];
                if (step >= GROUPS && n > 1)
                    continue;
                double secs = run_threads(n, run);
                printf("%6zu B x %2d threads  %-28s %7.2f us/call  %6.2f GB/s\n", io, n, names[step],
                       secs / CALLS * 1e6, (double)io * CALLS * n / secs / 1e9);
            }
    return 0;
}
