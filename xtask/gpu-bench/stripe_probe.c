// Whether one caller's reads get faster when the threads fill large staging stripes together
// (many small preads into one pinned buffer, then one large copy) instead of each thread
// moving its own chunk (a pread and a copy per chunk, as the bounce lanes do). A warm FILE is
// read whole in calls of CALL bytes; each call is cut into stripes of STRIPE bytes, each stripe
// into pieces of PIECE bytes that THREADS threads (the caller's included) take in order; the
// thread that fills a stripe's last piece queues its copy (one stream per call, so copies
// complete in order) and records the stripe's slot's event; a slot (SLOTS of them) is reused
// once its event has completed. PIECE == STRIPE is the lane shape (one thread per chunk).
//
//   gcc -O2 -I/usr/local/cuda/include stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out FILE CALL_KIB STRIPE_KIB PIECE_KIB [THREADS=16] [SLOTS=32]
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHECK(x)                                                                       \
    do {                                                                               \
        cudaError_t e = (x);                                                           \
        if (e != cudaSuccess) {                                                        \
            fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e));                   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static int fd, threads, nslots;
static size_t call, stripe, piece, fsize;
static char *dev;
static cudaStream_t stream;
static char **slot_buf;
static cudaEvent_t *slot_ev;
static atomic_int *slot_pending;

// The call in progress.
static atomic_ulong gen;       // bumped to start a call
static atomic_ulong next_piece; // pieces taken
static size_t call_off, pieces_per_stripe, nstripes, stripe_base; // stripe_base: stripes before this call
static atomic_int *stripe_state; // 0 new, 1 being set up, 2 ready
static atomic_size_t *stripe_filled;
static atomic_size_t issued;
static atomic_int stop;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void take_pieces(void) {
    size_t total = nstripes * pieces_per_stripe;
    for (;;) {
        size_t j = atomic_fetch_add(&next_piece, 1);
        if (j >= total) return;
        size_t s = j / pieces_per_stripe, k = j % pieces_per_stripe;
        int slot = (int)((stripe_base + s) % nslots);
        int expect = 0;
        if (atomic_compare_exchange_strong(&stripe_state[s], &expect, 1)) {
            if (atomic_load(&slot_pending[slot])) {
                while (cudaEventQuery(slot_ev[slot]) == cudaErrorNotReady) sched_yield();
                atomic_store(&slot_pending[slot], 0);
            }
            atomic_store(&stripe_state[s], 2);
        } else {
            while (atomic_load(&stripe_state[s]) != 2) sched_yield();
        }
        size_t at = k * piece;
        size_t off = call_off + s * stripe + at;
        size_t len = piece;
        char *buf = slot_buf[slot] + at;
        while (len > 0) {
            ssize_t n = pread(fd, buf, len, off);
            if (n <= 0) { perror("pread"); exit(1); }
            buf += n; off += n; len -= n;
        }
        if (atomic_fetch_add(&stripe_filled[s], piece) + piece == stripe) {
            CHECK(cudaMemcpyAsync(dev + s * stripe, slot_buf[slot], stripe, cudaMemcpyHostToDevice, stream));
            CHECK(cudaEventRecord(slot_ev[slot], stream));
            atomic_store(&slot_pending[slot], 1);
            atomic_fetch_add(&issued, 1);
        }
    }
}

static void *worker(void *arg) {
    (void)arg;
    CHECK(cudaSetDevice(0));
    unsigned long seen = 0;
    for (;;) {
        unsigned long g;
        while ((g = atomic_load(&gen)) == seen) {
            if (atomic_load(&stop)) return NULL;
            sched_yield();
        }
        seen = g;
        take_pieces();
    }
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s FILE CALL_KIB STRIPE_KIB PIECE_KIB [THREADS] [SLOTS]\n", argv[0]);
        return 2;
    }
    fd = open(argv[1], O_RDONLY);
    struct stat st;
    fstat(fd, &st);
    fsize = st.st_size;
    call = (size_t)atol(argv[2]) << 10;
    stripe = (size_t)atol(argv[3]) << 10;
    piece = (size_t)atol(argv[4]) << 10;
    threads = argc > 5 ? atoi(argv[5]) : 16;
    nslots = argc > 6 ? atoi(argv[6]) : 32;
    if (call % stripe || stripe % piece) { fprintf(stderr, "sizes must divide\n"); return 2; }
    size_t calls = fsize / call;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, call));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    slot_buf = calloc(nslots, sizeof *slot_buf);
    slot_ev = calloc(nslots, sizeof *slot_ev);
    slot_pending = calloc(nslots, sizeof *slot_pending);
    for (int i = 0; i < nslots; i++) {
        CHECK(cudaHostAlloc((void **)&slot_buf[i], stripe, cudaHostAllocDefault));
        CHECK(cudaEventCreateWithFlags(&slot_ev[i], cudaEventDisableTiming));
    }
    nstripes = call / stripe;
    pieces_per_stripe = stripe / piece;
    stripe_state = calloc(nstripes, sizeof *stripe_state);
    stripe_filled = calloc(nstripes, sizeof *stripe_filled);
    pthread_t tid[256];
    for (int i = 1; i < threads; i++) pthread_create(&tid[i], NULL, worker, NULL);
    double best = 0;
    for (int run = 0; run < 4; run++) {
        double t0 = now();
        for (size_t c = 0; c < calls; c++) {
            call_off = c * call;
            for (size_t s = 0; s < nstripes; s++) { stripe_state[s] = 0; stripe_filled[s] = 0; }
            atomic_store(&issued, 0);
            atomic_store(&next_piece, 0);
            atomic_fetch_add(&gen, 1);
            take_pieces();
            while (atomic_load(&issued) < nstripes) sched_yield();
            CHECK(cudaStreamSynchronize(stream));
            stripe_base += nstripes;
        }
        double gbps = (double)calls * call / (now() - t0) / 1e9;
        if (run > 0 && gbps > best) best = gbps; // the first run warms up
    }
    atomic_store(&stop, 1);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    printf("call %zu KiB, stripe %zu KiB, piece %zu KiB, %d threads, %d slots: best of 3 %.2f GB/s\n",
           call >> 10, stripe >> 10, piece >> 10, threads, nslots, best);
    return 0;
}
