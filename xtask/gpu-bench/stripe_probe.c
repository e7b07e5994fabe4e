// Whether one caller's reads get faster when the threads fill large staging stripes together
// (many small preads into one pinned buffer, then one large copy) instead of each thread
// moving its own chunk (a pread and a copy per chunk, as the bounce lanes do). A warm FILE is
// read whole in calls of CALL bytes; each call is cut into stripes of STRIPE bytes, each stripe
// into pieces of PIECE bytes that THREADS threads (the caller's included) take in order; the
// thread that fills a stripe's last piece queues its copy (one stream per call, so copies
// complete in order) and records the stripe's slot's event; a slot (SLOTS of them) is reused
// once its event has completed. PIECE == STRIPE is the lane shape (one thread per chunk).
//
// Environment: LEAD=N paces the readers: a stripe is set up only once the copy of the stripe N
// before it has completed (0, the default: no pacing beyond the slots). TIMING=1 prints, averaged
// over the calls of the last run, when a call queued its first and last copy and when its
// synchronize returned (CPU clock, from the call's start), and when its first and last copy
// completed on the GPU (timing events, from an event recorded at the call's start), so the
// copies' own rate shows apart from the reads'; TIMING=2 also each stripe's. FLUSH=1 writes each piece back out of the CPU's
// caches once it is read (clflushopt; 2: clwb; 3: clflush; 4: cldemote, which moves the lines from
// the core's caches to the shared one), before its stripe's copy may be queued: whether a copy
// reading lines a core still holds modified is what slows it. FLUSH=5 reads each piece into the
// thread's own small buffer (which stays in its cache) and moves it into the slot with
// non-temporal stores (the lines go to memory, not to any cache); FLUSH=6 the same with plain
// stores (memcpy), to tell the extra copy's cost from the stores' kind; FLUSH=7 moves only the
// stripes in a call's first and last EDGE KiB (default 16384) with non-temporal stores, the
// others read into the slot as with 0.
//
//   gcc -O2 -I/usr/local/cuda/include stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread
//   ./a.out FILE CALL_KIB STRIPE_KIB PIECE_KIB [THREADS=16] [SLOTS=32]
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <emmintrin.h>
#include <string.h>
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
static int lead, timing, flush;
static size_t edge;
static cudaEvent_t *stripe_ev; // each stripe's copy, recorded when queued (timing events with TIMING)
static atomic_int *stripe_shipped;
static cudaEvent_t call_ev;
static double t_first, t_last; // this call's first and last copy queued (CPU clock)
static double *t_queued;        // each stripe's copy queued (CPU clock), for TIMING=2
static double *sum_q, *sum_d;   // per stripe over the run's calls: queued, done (ms from the call's start)

// The call in progress.
static atomic_ulong gen;       // bumped to start a call
static atomic_ulong next_piece; // pieces taken
static size_t call_off, pieces_per_stripe, nstripes, stripe_base; // stripe_base: stripes before this call
static atomic_int *stripe_state; // 0 new, 1 being set up, 2 ready
static atomic_size_t *stripe_filled;
static atomic_size_t issued;
static atomic_int stop;

// Non-temporal copy of n bytes (a multiple of 64) to a 16-byte aligned dst.
static void stream_copy(char *dst, const char *src, size_t n) {
    for (size_t i = 0; i < n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(src + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(src + i + 32));
        __m128i d = _mm_loadu_si128((const __m128i *)(src + i + 48));
        _mm_stream_si128((__m128i *)(dst + i), a);
        _mm_stream_si128((__m128i *)(dst + i + 16), b);
        _mm_stream_si128((__m128i *)(dst + i + 32), c);
        _mm_stream_si128((__m128i *)(dst + i + 48), d);
    }
}

static __thread char *scratch;

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
            if (lead > 0 && s >= (size_t)lead) {
                size_t before = s - lead;
                while (!atomic_load(&stripe_shipped[before])) sched_yield();
                while (cudaEventQuery(stripe_ev[before]) == cudaErrorNotReady) sched_yield();
            }
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
        int nt = flush == 5 || flush == 6 ||
                 (flush == 7 && ((s + 1) * stripe <= edge || (nstripes - s) * stripe <= edge));
        if (nt) {
            if (!scratch && !(scratch = aligned_alloc(4096, piece))) exit(1);
            size_t got = 0;
            while (got < len) {
                ssize_t n = pread(fd, scratch + got, len - got, off + got);
                if (n <= 0) { perror("pread"); exit(1); }
                got += n;
            }
            if (flush != 6) {
                stream_copy(buf, scratch, len);
                _mm_sfence();
            } else {
                memcpy(buf, scratch, len);
            }
            len = 0;
        }
        while (len > 0) {
            ssize_t n = pread(fd, buf, len, off);
            if (n <= 0) { perror("pread"); exit(1); }
            buf += n; off += n; len -= n;
        }
        if (flush && flush < 5) {  // 1-4
            char *p = slot_buf[slot] + at, *end = p + piece;
            for (; p < end; p += 64) {
                if (flush == 1) __asm__ volatile("clflushopt %0" : "+m"(*(volatile char *)p));
                else if (flush == 2) __asm__ volatile("clwb %0" : "+m"(*(volatile char *)p));
                else if (flush == 4) __asm__ volatile("cldemote %0" : "+m"(*(volatile char *)p));
                else __asm__ volatile("clflush %0" : "+m"(*(volatile char *)p));
            }
            __asm__ volatile("sfence" ::: "memory");
        }
        if (atomic_fetch_add(&stripe_filled[s], piece) + piece == stripe) {
            CHECK(cudaMemcpyAsync(dev + s * stripe, slot_buf[slot], stripe, cudaMemcpyHostToDevice, stream));
            CHECK(cudaEventRecord(slot_ev[slot], stream));
            CHECK(cudaEventRecord(stripe_ev[s], stream));
            if (timing) t_queued[s] = now();
            atomic_store(&stripe_shipped[s], 1);
            atomic_store(&slot_pending[slot], 1);
            size_t n = atomic_fetch_add(&issued, 1);
            if (timing && n == 0) t_first = now();
            if (timing && n + 1 == nstripes) t_last = now();
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
    lead = getenv("LEAD") ? atoi(getenv("LEAD")) : 0;
    timing = getenv("TIMING") ? atoi(getenv("TIMING")) : 0;
    flush = getenv("FLUSH") ? atoi(getenv("FLUSH")) : 0;
    edge = (size_t)(getenv("EDGE") ? atol(getenv("EDGE")) : 16384) << 10;
    stripe_ev = calloc(nstripes, sizeof *stripe_ev);
    stripe_shipped = calloc(nstripes, sizeof *stripe_shipped);
    for (size_t i = 0; i < nstripes; i++)
        CHECK(cudaEventCreateWithFlags(&stripe_ev[i], timing ? cudaEventDefault : cudaEventDisableTiming));
    CHECK(cudaEventCreate(&call_ev));
    t_queued = calloc(nstripes, sizeof *t_queued);
    sum_q = calloc(nstripes, sizeof *sum_q);
    sum_d = calloc(nstripes, sizeof *sum_d);
    stripe_state = calloc(nstripes, sizeof *stripe_state);
    stripe_filled = calloc(nstripes, sizeof *stripe_filled);
    pthread_t tid[256];
    for (int i = 1; i < threads; i++) pthread_create(&tid[i], NULL, worker, NULL);
    double best = 0;
    double sum[5]; // first queued, last queued, synchronized (CPU); first, last copy done (GPU), ms
    for (int run = 0; run < 4; run++) {
        double t0 = now();
        for (int k = 0; k < 5; k++) sum[k] = 0;
        for (size_t k = 0; k < nstripes; k++) sum_q[k] = sum_d[k] = 0;
        for (size_t c = 0; c < calls; c++) {
            call_off = c * call;
            for (size_t s = 0; s < nstripes; s++) { stripe_state[s] = 0; stripe_filled[s] = 0; stripe_shipped[s] = 0; }
            atomic_store(&issued, 0);
            atomic_store(&next_piece, 0);
            double tc = now();
            if (timing) CHECK(cudaEventRecord(call_ev, stream));
            atomic_fetch_add(&gen, 1);
            take_pieces();
            while (atomic_load(&issued) < nstripes) sched_yield();
            CHECK(cudaStreamSynchronize(stream));
            if (timing) {
                float first, last;
                CHECK(cudaEventElapsedTime(&first, call_ev, stripe_ev[0]));
                CHECK(cudaEventElapsedTime(&last, call_ev, stripe_ev[nstripes - 1]));
                sum[0] += (t_first - tc) * 1e3; sum[1] += (t_last - tc) * 1e3; sum[2] += (now() - tc) * 1e3;
                sum[3] += first; sum[4] += last;
                for (size_t k = 0; timing == 2 && k < nstripes; k++) {
                    float done;
                    CHECK(cudaEventElapsedTime(&done, call_ev, stripe_ev[k]));
                    sum_q[k] += (t_queued[k] - tc) * 1e3;
                    sum_d[k] += done;
                }
            }
            stripe_base += nstripes;
        }
        double gbps = (double)calls * call / (now() - t0) / 1e9;
        if (run > 0 && gbps > best) best = gbps; // the first run warms up
    }
    atomic_store(&stop, 1);
    for (int i = 1; i < threads; i++) pthread_join(tid[i], NULL);
    printf("call %zu KiB, stripe %zu KiB, piece %zu KiB, %d threads, %d slots, lead %d, flush %d: best of 3 %.2f GB/s\n",
           call >> 10, stripe >> 10, piece >> 10, threads, nslots, lead, flush, best);
    if (timing) {
        double n = (double)calls, copies = (double)(call - stripe) / 1e6;
        double span = (sum[4] - sum[3]) / n;
        printf("  per call (last run), ms: first copy queued %.3f, last queued %.3f, synchronized %.3f; "
               "GPU: first copy done %.3f, last %.3f (copies after the first: %.1f GB/s)\n",
               sum[0] / n, sum[1] / n, sum[2] / n, sum[3] / n, sum[4] / n, span > 0 ? copies / span : 0.0);
        // Each stripe: when its copy was queued and done, and its copy's rate from when it could
        // start (the copy before it done, and itself queued).
        for (size_t k = 0; timing == 2 && k < nstripes; k++) {
            double q = sum_q[k] / n, d = sum_d[k] / n, start = k ? sum_d[k - 1] / n : 0.0;
            if (q > start) start = q;
            printf("    stripe %2zu: queued %.3f done %.3f ms, %.1f GB/s\n", k, q, d,
                   d > start ? stripe / 1e6 / (d - start) : 0.0);
        }
    }
    return 0;
}
