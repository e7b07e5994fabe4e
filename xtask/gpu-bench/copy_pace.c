// Whether copies to the device run slower when they are queued one at a time, at the pace at
// which a read's stripes fill, than when they are queued together; and whether host threads
// copying memory meanwhile (as page-cache reads do) slow them. Each "call" queues COPIES copies
// of SIZE bytes from pinned memory (a ring of 24 buffers, as the bounce path's slots) on one
// stream, one every GAP microseconds, then waits for the stream; LOAD host threads copy 64 MiB
// buffers back and forth during the calls. Timing events around each copy give its time on
// the GPU and the GPU's idle time before it.
//
//   gcc -O2 -I/usr/local/cuda/include copy_pace.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out [CALLS=300] [registered: 0 = cudaHostAlloc, 1 = huge-page mmap + cudaHostRegister]
//
// Prints one line per case: copies x size, gap, load threads; per call (averages): host time
// from the first copy queued to the stream done, the ideal time ((COPIES - 1) x GAP + the copies
// back to back at the best rate seen), each copy's GPU time and rate, the GPU's idle time
// between copies.
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cudaError_t rc_ = (x);                                                                     \
        if (rc_ != cudaSuccess) {                                                                  \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(rc_));                             \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define SLOTS 24
#define MAXC 16
static atomic_int loading, stop;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *load(void *arg) {
    (void)arg;
    size_t n = 64 << 20;
    char *a = malloc(n), *b = malloc(n);
    memset(a, 1, n);
    memset(b, 2, n);
    while (!atomic_load(&stop)) {
        if (atomic_load(&loading)) {
            memcpy(b, a, n);
            char *t = a;
            a = b;
            b = t;
        } else {
            sched_yield();
        }
    }
    return NULL;
}

static char *pinned(size_t size, int registered) {
    char *p;
    if (!registered) {
        CHECK(cudaHostAlloc((void **)&p, size, cudaHostAllocDefault));
        memset(p, 3, size);
        return p;
    }
    size_t huge = 2 << 20, len = (size + huge - 1) / huge * huge;
    char *m = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); exit(1); }
    p = (char *)(((size_t)m + huge - 1) / huge * huge);
    madvise(p, len, MADV_HUGEPAGE);
    memset(p, 3, len);
    CHECK(cudaHostRegister(p, len, cudaHostRegisterDefault));
    return p;
}

int main(int argc, char **argv) {
    int calls = argc > 1 ? atoi(argv[1]) : 300;
    int registered = argc > 2 ? atoi(argv[2]) : 0;
    CHECK(cudaSetDevice(0));
    size_t most = 4 << 20;
    char *slot[SLOTS];
    for (int i = 0; i < SLOTS; i++) slot[i] = pinned(most, registered);
    char *dev;
    CHECK(cudaMalloc((void **)&dev, MAXC * most));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t b[MAXC], e[MAXC];
    for (int i = 0; i < MAXC; i++) {
        CHECK(cudaEventCreate(&b[i]));
        CHECK(cudaEventCreate(&e[i]));
    }
    pthread_t tid[15];
    for (int i = 0; i < 15; i++) pthread_create(&tid[i], NULL, load, NULL);
    struct { int copies; size_t size; int gap_us; int load; } cases[] = {
        {4, 4 << 20, 0, 0},   {4, 4 << 20, 100, 0}, {4, 4 << 20, 150, 0}, {4, 4 << 20, 0, 1},
        {4, 4 << 20, 100, 1}, {4, 4 << 20, 150, 1}, {16, 4 << 20, 0, 0},  {16, 4 << 20, 90, 0},
        {16, 4 << 20, 90, 1}, {4, 1 << 20, 0, 0},   {4, 1 << 20, 30, 0},  {4, 1 << 20, 30, 1},
    };
    int ring = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int k = cases[c].copies;
        size_t size = cases[c].size;
        double gap = cases[c].gap_us / 1e6;
        atomic_store(&loading, cases[c].load);
        double host = 0, gpu = 0, idle = 0, best_rate = 0;
        for (int n = 0; n < calls; n++) {
            double t0 = now();
            for (int i = 0; i < k; i++) {
                while (now() < t0 + i * gap) {}
                CHECK(cudaEventRecord(b[i], s));
                CHECK(cudaMemcpyAsync(dev + i * size, slot[ring++ % SLOTS], size, cudaMemcpyHostToDevice, s));
                CHECK(cudaEventRecord(e[i], s));
            }
            CHECK(cudaStreamSynchronize(s));
            double t1 = now();
            if (n < calls / 10) continue; // warm-up
            host += t1 - t0;
            for (int i = 0; i < k; i++) {
                float ms;
                CHECK(cudaEventElapsedTime(&ms, b[i], e[i]));
                gpu += ms / 1e3;
                double rate = size / (ms / 1e3) / 1e9;
                if (rate > best_rate) best_rate = rate;
                if (i > 0) {
                    CHECK(cudaEventElapsedTime(&ms, e[i - 1], b[i]));
                    idle += ms / 1e3;
                }
            }
        }
        int counted = calls - calls / 10;
        double per_copy = gpu / counted / k, ideal = (k - 1) * gap + k * size / (best_rate * 1e9);
        printf("%2d x %4zu KiB gap %3d us load %2d: call %7.1f us (ideal %6.1f), copy %6.1f us %5.1f GB/s "
               "(best %5.1f), GPU idle between copies %6.1f us\n",
               k, size >> 10, cases[c].gap_us, cases[c].load ? 15 : 0, host / counted * 1e6, ideal * 1e6,
               per_copy * 1e6, size / per_copy / 1e9, best_rate, idle / counted / (k - 1) * 1e6);
        fflush(stdout);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 15; i++) pthread_join(tid[i], NULL);
    return 0;
}
