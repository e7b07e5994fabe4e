// Whether small reads' copies can skip the runtime altogether: a kernel that stays running
// while small reads come (a block for each staging slot), polling the slots' requests in pinned
// host memory, copying each request's bytes from host memory to its device address and writing
// its acknowledgement back to host memory, against one copy call and a stream wait per read.
// The kernel ends once no request has come for a while (`idle`), or after `life`; a request that
// finds it ended launches it again. Built and run on the GPU machine:
//
//   gcc -O2 -I/usr/local/cuda/include serve_probe.c -L/usr/local/cuda/lib64 \
//       -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread
//   ./a.out FILE            (FILE warm, at least 64 MiB)
//
// Result (docs/bench/history.md, 2026-12-03): slower than a copy and a wait per read except for
// kernels kept running without bound; a relaunch costs about 100 µs. Not used by the library.
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "probe.h"

// The kernel. Block b serves slot b: its thread 0 polls the slot's request number until it
// differs from the last one served, unless the kernel is closing (a word in device memory) or
// no slot has been served for `idle` ns (then it closes the kernel, and tells the host
// `closed` = `gen`); every thread copies its share (16 bytes at a time, four in flight), then
// thread 0 acknowledges with the request's number.
static const char PTX[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry serve(.param .u64 queue, .param .u64 state, .param .u64 closed, .param .u64 gen,"
    " .param .u64 idle, .param .u64 life)\n{\n"
    ".reg .pred %p<12>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<40>;\n.shared .align 16 .b64 job[4];\n"
    "ld.param.u64 %rd1, [queue];\nld.param.u64 %rd2, [state];\nld.param.u64 %rd3, [closed];\n"
    "ld.param.u64 %rd4, [gen];\nld.param.u64 %rd5, [idle];\nld.param.u64 %rd36, [life];\n"
    "cvta.to.global.u64 %rd2, %rd2;\ncvta.to.global.u64 %rd3, %rd3;\n"
    "mov.u32 %r2, %ctaid.x;\nmul.wide.u32 %rd6, %r2, 128;\nadd.u64 %rd7, %rd1, %rd6;\ncvta.to.global.u64 %rd7, %rd7;\n"
    "mov.u32 %r3, %tid.x;\nsetp.eq.u32 %p1, %r3, 0;\n"
    "ld.volatile.global.u64 %rd8, [%rd7+64];\nmov.u64 %rd9, %globaltimer;\nmov.u64 %rd35, %rd9;\n"
    "cvt.u64.u32 %rd10, %r3;\nshl.b64 %rd10, %rd10, 4;\nmov.u32 %r4, %ntid.x;\nmul.wide.u32 %rd11, %r4, 16;\n"
    "shl.b64 %rd33, %rd11, 2;\n"
    "POLL:\n@!%p1 bra WAIT;\n"
    "ld.volatile.global.u32 %r5, [%rd2];\nsetp.ne.u32 %p2, %r5, 0;\n@%p2 bra QUIT;\n"
    "mov.u64 %rd14, %globaltimer;\nsub.u64 %rd37, %rd14, %rd35;\nsetp.gt.u64 %p11, %rd37, %rd36;\n@%p11 bra CLOSE;\n"
    "ld.acquire.sys.global.u64 %rd13, [%rd7];\nsetp.ne.u64 %p3, %rd13, %rd8;\n@%p3 bra TAKE;\n"
    "ld.volatile.global.u64 %rd34, [%rd2+8];\nmax.u64 %rd34, %rd34, %rd9;\nmov.u64 %rd14, %globaltimer;\n"
    "sub.s64 %rd15, %rd14, %rd34;\nsetp.gt.s64 %p4, %rd15, %rd5;\n@%p4 bra CLOSE;\n"
    "bra POLL;\n"
    "CLOSE:\nmov.u32 %r6, 1;\nst.volatile.global.u32 [%rd2], %r6;\nmembar.sys;\nst.volatile.global.u64 [%rd3], %rd4;\n"
    "QUIT:\nmov.u64 %rd16, 0;\nst.shared.u64 [job], %rd16;\nbra WAIT;\n"
    "TAKE:\nld.volatile.global.u64 %rd17, [%rd7+8];\nld.volatile.global.u64 %rd18, [%rd7+16];\n"
    "ld.volatile.global.u64 %rd19, [%rd7+24];\nmov.u64 %rd16, 1;\nst.shared.u64 [job], %rd16;\n"
    "st.shared.u64 [job+8], %rd17;\nst.shared.u64 [job+16], %rd18;\nst.shared.u64 [job+24], %rd19;\nmov.u64 %rd8, %rd13;\n"
    "WAIT:\nbar.sync 0;\nld.shared.u64 %rd16, [job];\nsetp.eq.u64 %p6, %rd16, 0;\n@%p6 bra EXIT;\n"
    "ld.shared.u64 %rd17, [job+8];\nld.shared.u64 %rd18, [job+16];\nld.shared.u64 %rd19, [job+24];\n"
    "cvta.to.global.u64 %rd17, %rd17;\ncvta.to.global.u64 %rd18, %rd18;\nmov.u64 %rd20, %rd10;\n"
    "COPY:\nsetp.ge.u64 %p7, %rd20, %rd19;\n@%p7 bra COPIED;\n"
    "add.u64 %rd21, %rd20, %rd11;\nadd.u64 %rd22, %rd21, %rd11;\nadd.u64 %rd23, %rd22, %rd11;\n"
    "setp.lt.u64 %p8, %rd21, %rd19;\nsetp.lt.u64 %p9, %rd22, %rd19;\nsetp.lt.u64 %p10, %rd23, %rd19;\n"
    "add.u64 %rd24, %rd17, %rd20;\nld.global.cv.v4.u32 {%r10, %r11, %r12, %r13}, [%rd24];\n"
    "add.u64 %rd25, %rd17, %rd21;\n@%p8 ld.global.cv.v4.u32 {%r14, %r15, %r16, %r17}, [%rd25];\n"
    "add.u64 %rd26, %rd17, %rd22;\n@%p9 ld.global.cv.v4.u32 {%r18, %r19, %r20, %r21}, [%rd26];\n"
    "add.u64 %rd27, %rd17, %rd23;\n@%p10 ld.global.cv.v4.u32 {%r22, %r23, %r24, %r25}, [%rd27];\n"
    "add.u64 %rd28, %rd18, %rd20;\nst.global.v4.u32 [%rd28], {%r10, %r11, %r12, %r13};\n"
    "add.u64 %rd29, %rd18, %rd21;\n@%p8 st.global.v4.u32 [%rd29], {%r14, %r15, %r16, %r17};\n"
    "add.u64 %rd30, %rd18, %rd22;\n@%p9 st.global.v4.u32 [%rd30], {%r18, %r19, %r20, %r21};\n"
    "add.u64 %rd31, %rd18, %rd23;\n@%p10 st.global.v4.u32 [%rd31], {%r22, %r23, %r24, %r25};\n"
    "add.u64 %rd20, %rd20, %rd33;\nbra COPY;\n"
    "COPIED:\nmembar.sys;\nbar.sync 0;\n@!%p1 bra POLL;\n"
    "st.release.sys.global.u64 [%rd7+64], %rd8;\nmov.u64 %rd9, %globaltimer;\nst.volatile.global.u64 [%rd2+8], %rd9;\n"
    "bra POLL;\n"
    "EXIT:\nret;\n}\n";

struct slot {
    volatile uint64_t req, src, dst, len, pad[4];
    volatile uint64_t ack, pad2[7];
};

#define THREADS 16
#define CALLS 20000
static cudaKernel_t kernel;
static struct slot *queue; // THREADS slots, then the closed word
static volatile uint64_t *closed;
static uint64_t *state; // device: closing (u32), last work (u64 at 8)
static cudaStream_t serve_stream;
static _Atomic uint64_t live_gen;
static pthread_mutex_t launching = PTHREAD_MUTEX_INITIALIZER;
static _Atomic long launches;
static uint64_t idle_ns = 1000000;
static unsigned per_block = 1024;
static uint64_t life = ~0ull;
static unsigned queued = 1; // kernels kept launched: the running one and those waiting behind it
static int fd;
static long file_size;
static size_t io;
static char *dev;

// Launches a kernel where fewer than `queued` are running or waiting (one a call).
static void ensure_serving(void) {
    if (atomic_load(&live_gen) - *closed >= queued)
        return;
    pthread_mutex_lock(&launching);
    if (atomic_load(&live_gen) - *closed < queued) {
        uint64_t gen = atomic_load(&live_gen) + 1;
        atomic_store(&live_gen, gen);
        CHECK(cudaMemsetAsync(state, 0, 16, serve_stream));
        void *q = queue, *c = (void *)closed;
        void *args[] = {&q, &state, &c, &gen, &idle_ns, &life};
        dim3 grid = {THREADS, 1, 1}, block = {per_block, 1, 1};
        CHECK(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, serve_stream));
        atomic_fetch_add(&launches, 1);
    }
    pthread_mutex_unlock(&launching);
}

static void serve(int i, void *src, void *dst, size_t len) {
    struct slot *s = &queue[i];
    uint64_t n = s->req + 1;
    s->src = (uint64_t)src;
    s->dst = (uint64_t)dst;
    s->len = len;
    atomic_thread_fence(memory_order_release);
    s->req = n;
    ensure_serving();
    for (unsigned k = 1; s->ack != n; k++) {
        __builtin_ia32_pause();
        if (k % 64 == 0)
            ensure_serving();
    }
    atomic_thread_fence(memory_order_acquire);
}

// Reads `io` bytes of the file at a random multiple of `io`.
static void read_random(char *into, unsigned *seed) {
    off_t at = (off_t)(rand_r(seed) % (file_size / io)) * io;
    if (pread(fd, into, io, at) != (ssize_t)io) {
        perror("pread");
        exit(1);
    }
}

enum mode { COPY, SERVED, SERVED_NO_READ, CHECKED, SPACED, SYNCING };
static const char *names[] = {"pread, copy, sync", "pread, served", "served, no pread", "pread, served, bytes checked",
                              "pread, served, 200 us apart", "device syncs"};
static enum mode mode;
static _Atomic long wrong;

static _Atomic int readers_done;
static _Atomic long spaced_ns; // summed time of the spaced requests (each launches a kernel)
static double sync_most, sync_sum;
static long syncs;

// Device-wide waits (cudaDeviceSynchronize, as torch.cuda.synchronize) while the others read.
static void *syncing(void) {
    CHECK(cudaSetDevice(0));
    while (!atomic_load(&readers_done)) {
        double t0 = now();
        CHECK(cudaDeviceSynchronize());
        double w = now() - t0;
        sync_sum += w;
        sync_most = w > sync_most ? w : sync_most;
        syncs++;
        usleep(1000);
    }
    return NULL;
}

static void *run(void *arg) {
    long t = (long)arg;
    if (mode == SYNCING && t == THREADS - 1)
        return syncing();
    char *host, *back = malloc(io);
    cudaStream_t s;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc((void **)&host, io, cudaHostAllocDefault));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned seed = 7 + t;
    char *to = dev + t * (1 << 20);
    int calls = mode == SPACED ? 500 : mode == CHECKED ? 2000 : CALLS;
    for (int i = 0; i < calls; i++) {
        if (mode != SERVED_NO_READ && mode != SYNCING)
            read_random(host, &seed);
        if (mode == COPY) {
            CHECK(cudaMemcpyAsync(to, host, io, cudaMemcpyHostToDevice, s));
            CHECK(cudaStreamSynchronize(s));
            continue;
        }
        double t0 = now();
        serve((int)t, host, to, io);
        if (mode == SPACED)
            atomic_fetch_add(&spaced_ns, (long)((now() - t0) * 1e9));
        if (mode == CHECKED || mode == SPACED) {
            CHECK(cudaMemcpyAsync(back, to, io, cudaMemcpyDeviceToHost, s));
            CHECK(cudaStreamSynchronize(s));
            if (memcmp(back, host, io))
                atomic_fetch_add(&wrong, 1);
        }
        if (mode == SPACED)
            usleep(200);
        if (mode == SYNCING && i == CALLS / 4)
            break;
    }
    if (mode == SYNCING)
        atomic_fetch_add(&readers_done, 1);
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(host));
    free(back);
    return NULL;
}

int main(int argc, char **argv) {
    fd = open_data(argc, argv, &file_size);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)THREADS << 20));
    CHECK(cudaMalloc((void **)&state, 16));
    CHECK(cudaHostAlloc((void **)&queue, sizeof(struct slot) * THREADS + 64, cudaHostAllocMapped));
    memset(queue, 0, sizeof(struct slot) * THREADS + 64);
    closed = (volatile uint64_t *)(queue + THREADS);
    CHECK(cudaStreamCreateWithFlags(&serve_stream, cudaStreamNonBlocking));
    kernel = load_kernel(PTX, "serve");
    // Bytes checked: every size, 16 threads with the kernel kept running, then 2 threads whose
    // requests come 200 us apart with idle 50 us (each request finds the kernel closed).
    size_t sizes[] = {4096, 16384, 65536, 262144};
    for (int z = 0; z < 4; z++) {
        io = sizes[z];
        mode = CHECKED;
        run_threads(THREADS, run);
    }
    idle_ns = 50000;
    mode = SPACED;
    long before = atomic_load(&launches);
    run_threads(2, run);
    printf("bytes checked: %ld wrong (4 sizes x 16 threads x 2000, 256 KiB x 2 threads x 500 spaced; %ld launches "
           "for the spaced ones, %.1f us a spaced request)\n",
           atomic_load(&wrong), atomic_load(&launches) - before, atomic_load(&spaced_ns) / 1000.0 / 1e3);
    idle_ns = 20000;
    struct config {
        int threads;
        enum mode mode;
        unsigned per_block;
        uint64_t life;
        unsigned queued;
    } configs[] = {
        {THREADS, COPY, 0, 0, 1},
        {1, COPY, 0, 0, 1},
        {1, SERVED, 1024, 200000, 1},
        {1, SERVED, 1024, 200000, 2},
        {THREADS, SERVED, 1024, ~0ull, 1},
        {THREADS, SERVED, 1024, 200000, 1},
        {THREADS, SERVED, 1024, 200000, 2},
        {THREADS, SERVED, 256, 200000, 2},
        {THREADS, SERVED_NO_READ, 1024, 200000, 2},
    };
    for (int z = 0; z < 4; z++)
        for (int c = 0; c < (int)(sizeof configs / sizeof *configs); c++) {
            struct config k = configs[c];
            io = sizes[z];
            mode = k.mode;
            per_block = k.per_block;
            life = k.life;
            queued = k.queued;
            long l0 = atomic_load(&launches);
            double secs = run_threads(k.threads, run);
            long reads = (long)CALLS * k.threads;
            printf("%7zu B x %2d threads  %-20s block %4u queued %u life %6.0f us  %7.2f us/read/thread  %6.2f GB/s  "
                   "(%ld launches)\n",
                   io, k.threads, names[mode], per_block, queued, life == ~0ull ? -1.0 : life / 1e3,
                   secs / CALLS * 1e6, (double)io * reads / secs / 1e9, atomic_load(&launches) - l0);
        }
    // cudaDeviceSynchronize from one thread, every 1 ms, while 15 threads read 64 KiB (served).
    io = 65536;
    mode = SYNCING;
    per_block = 1024;
    for (int c = 0; c < 3; c++) {
        life = c ? 200000 : ~0ull;
        queued = c == 2 ? 2 : 1;
        sync_most = sync_sum = 0;
        syncs = 0;
        atomic_store(&readers_done, 0);
        double secs = run_threads(THREADS, run);
        printf("device syncs under 15 readers (life %s, queued %u): %ld syncs, mean %.1f us, most %.1f us; reads "
               "took %.2f s\n",
               c ? "200 us" : "unbounded", queued, syncs, sync_sum / syncs * 1e6, sync_most * 1e6, secs);
    }
    return 0;
}
