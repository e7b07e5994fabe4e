// Many callers' 1 MiB reads by hand, as KvikIO's threads make them: each of THREADS threads
// (started afresh each run, as `hipfile bench` starts its callers) reads CALLS random IO-byte
// ranges of a warm file into its own pinned buffer, copies each to the device on its own
// stream and waits for it. Each run prints its GB/s, how long the threads waited runnable for
// a CPU (their schedstat) and how often they were switched out so (getrusage), so that slow
// runs can be told from fast ones by what the scheduler did. Variants:
//   BUF    host: cudaMallocHost; thp: anonymous memory on 2 MiB pages, registered
//   DEMOTE 0: copy straight from the reading core's cache; 1: cldemote every line first;
//          2: clflushopt every line (written back to memory and dropped from the caches)
//   gcc -O2 -I/usr/local/cuda/include callers_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out FILE THREADS CALLS IO RUNS BUF DEMOTE SEED
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "probe.h"

static int fd, threads, calls, demote;
static long file_size;
static size_t io;
static char *dev;
static char *bufs[64];
static cudaStream_t streams[64];
static long offsets[64][256];
static double spans[64][2];
static long waited[64];
static pthread_barrier_t ready;

static long my_wait_ns(void) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    long run = 0, wait = 0;
    if (f) {
        if (fscanf(f, "%ld %ld", &run, &wait) != 2)
            wait = 0;
        fclose(f);
    }
    return wait;
}

static void demote_lines(char *p, size_t n) {
    for (size_t i = 0; i < n; i += 64)
        if (demote == 1)
            __asm__ volatile("cldemote (%0)" ::"r"(p + i) : "memory");
        else
            __asm__ volatile("clflushopt (%0)" ::"r"(p + i) : "memory");
    __asm__ volatile("sfence" ::: "memory");
}

static void *caller(void *arg) {
    long t = (long)arg;
    CHECK(cudaSetDevice(0));
    pthread_barrier_wait(&ready);
    long w0 = my_wait_ns();
    spans[t][0] = now();
    for (int c = 0; c < calls; c++) {
        if (pread(fd, bufs[t], io, offsets[t][c]) != (ssize_t)io) {
            perror("pread");
            exit(1);
        }
        if (demote)
            demote_lines(bufs[t], io);
        CHECK(cudaMemcpyAsync(dev + ((size_t)t * calls + c) * io, bufs[t], io, cudaMemcpyHostToDevice, streams[t]));
        CHECK(cudaStreamSynchronize(streams[t]));
    }
    spans[t][1] = now();
    waited[t] = my_wait_ns() - w0;
    return NULL;
}

static char *pinned(size_t n, int thp) {
    char *p;
    if (!thp) {
        CHECK(cudaMallocHost((void **)&p, n));
        return p;
    }
    size_t huge = 2 << 20, len = (n + huge - 1) / huge * huge;
    char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    p = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
    madvise(p, len, MADV_HUGEPAGE);
    memset(p, 0, len);
    CHECK(cudaHostRegister(p, len, cudaHostRegisterDefault));
    return p;
}

int main(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr, "usage: %s FILE THREADS CALLS IO RUNS host|thp DEMOTE SEED\n", argv[0]);
        return 2;
    }
    char *one[] = {argv[0], argv[1]};
    fd = open_data(2, one, &file_size);
    threads = atoi(argv[2]), calls = atoi(argv[3]), io = strtoul(argv[4], NULL, 0);
    int runs = atoi(argv[5]), thp = !strcmp(argv[6], "thp");
    demote = atoi(argv[7]);
    srand(atoi(argv[8]));
    if (threads < 1 || threads > 64 || calls < 1 || calls > 256 || io == 0 || file_size < (long)io) {
        fprintf(stderr, "THREADS 1-64, CALLS 1-256, IO at most the file\n");
        return 2;
    }
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)threads * calls * io));
    for (int t = 0; t < threads; t++) {
        bufs[t] = pinned(io, thp);
        CHECK(cudaStreamCreateWithFlags(&streams[t], cudaStreamNonBlocking));
        for (int c = 0; c < calls; c++)
            offsets[t][c] = (long)(rand() % (file_size / io)) * io;
    }
    double total = (double)threads * calls * io;
    for (int r = 0; r < runs; r++) {
        struct rusage u0, u1;
        getrusage(RUSAGE_SELF, &u0);
        pthread_barrier_init(&ready, NULL, threads);
        run_threads(threads, caller);
        pthread_barrier_destroy(&ready);
        getrusage(RUSAGE_SELF, &u1);
        double first = spans[0][0], last = spans[0][1];
        long wait = 0;
        for (int t = 0; t < threads; t++) {
            first = spans[t][0] < first ? spans[t][0] : first;
            last = spans[t][1] > last ? spans[t][1] : last;
            wait += waited[t];
        }
        printf("run %d: %.2f GB/s  cpu wait %.2f ms  preempted %ld\n", r + 1, total / (last - first) / 1e9,
               wait / 1e6, u1.ru_nivcsw - u0.ru_nivcsw);
    }
    return 0;
}
