// What bounds many small bounce reads on the GPU machine: 16 threads each move 8 calls of
// 1 MiB from a warm file into GPU memory (the random-read figure's shape), each call read with
// pread into the thread's pinned buffer and copied with cudaMemcpyAsync on the thread's stream
// (or on a few streams the threads share), whole or cut into pieces that pipeline (read piece
// i+1 while piece i copies). Also the copies alone. Built and run on that machine:
//
//   gcc -O2 -I/usr/local/cuda/include copy_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out FILE
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

#define THREADS 16
#define CALLS 8
#define CALL (1 << 20)

static int fd;
static char *dev;
static off_t slots;
static int pieces, with_read, huge;
// Streams the threads share (0: each thread has its own); a shared stream's users wait on an
// event of their own copy, not the whole stream.
static int shared;
static cudaStream_t streams[THREADS];
static pthread_barrier_t ready;
// Each thread's own first and last clock readings (a late main thread would shorten the time).
static double began[THREADS], ended[THREADS];

static char *pinned(size_t len) {
    if (!huge) {
        void *p;
        CHECK(cudaHostAlloc(&p, len, cudaHostAllocDefault));
        return p;
    }
    size_t h = 2u << 20;
    char *raw = mmap(NULL, len + h, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *p = (char *)(((uintptr_t)raw + h - 1) & ~(uintptr_t)(h - 1));
    madvise(p, len, MADV_HUGEPAGE);
    CHECK(cudaHostRegister(p, len, 0));
    return p;
}

static void *worker(void *arg) {
    long t = (long)arg;
    cudaStream_t s;
    cudaEvent_t done;
    CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
    if (shared)
        s = streams[t % shared];
    else
        CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    char *stage[2] = {pinned(CALL), pinned(CALL)};
    memset(stage[0], 0, CALL);
    memset(stage[1], 0, CALL);
    pthread_barrier_wait(&ready);
    began[t] = now();
    size_t piece = CALL / pieces;
    for (int c = 0; c < CALLS; c++) {
        int i = t * CALLS + c;
        off_t off = ((i * 2654435761u) % slots) * (off_t)CALL;
        for (int p = 0; p < pieces; p++) {
            char *buf = stage[p % 2] + 0;
            if (p >= 2) CHECK(cudaEventSynchronize(done)); // crude: the stage is free again
            if (with_read && pread(fd, buf, piece, off + p * piece) != (ssize_t)piece) {
                perror("pread");
                exit(1);
            }
            CHECK(cudaMemcpyAsync(dev + (size_t)i * CALL + p * piece, buf, piece, cudaMemcpyHostToDevice, s));
            CHECK(cudaEventRecord(done, s));
        }
        CHECK(cudaEventSynchronize(done));
    }
    ended[t] = now();
    return NULL;
}

static double run(void) {
    pthread_t t[THREADS];
    pthread_barrier_init(&ready, NULL, THREADS);
    for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
    double first = 1e300, last = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        first = began[i] < first ? began[i] : first;
        last = ended[i] > last ? ended[i] : last;
    }
    double secs = last - first;
    pthread_barrier_destroy(&ready);
    return (double)THREADS * CALLS * CALL / secs / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    fd = open(argv[1], O_RDONLY);
    slots = lseek(fd, 0, SEEK_END) / CALL;
    CHECK(cudaMalloc((void **)&dev, (size_t)THREADS * CALLS * CALL));
    for (int i = 0; i < THREADS; i++) CHECK(cudaStreamCreateWithFlags(&streams[i], cudaStreamNonBlocking));
    // read?, pieces, huge pages?, shared streams
    int cases[][4] = {{0, 1, 1, 0}, {0, 1, 1, 1}, {1, 1, 1, 0}, {1, 1, 1, 1}, {1, 1, 1, 2}, {1, 1, 1, 4},
                      {1, 2, 1, 1}, {1, 2, 1, 4}, {1, 4, 1, 1}, {1, 1, 1, 0}, {1, 1, 1, 1}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        with_read = cases[c][0], pieces = cases[c][1], huge = cases[c][2], shared = cases[c][3];
        double best = 0;
        for (int r = 0; r < 5; r++) {
            double g = run();
            if (g > best) best = g;
        }
        printf("%s, %d piece(s) per 1 MiB call, %s staging, %d shared streams: best of 5 %.2f GB/s\n",
               with_read ? "pread + copy" : "copies only", pieces, huge ? "huge-page registered" : "cudaHostAlloc",
               shared, best);
    }
    return 0;
}
