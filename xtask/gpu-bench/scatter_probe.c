// Whether many small reads' copies can be paid for once: a kernel that copies several pieces of
// pinned host memory to their own device addresses in one launch (the GPU reads the host memory
// itself), against one copy call per piece. Small reads from many threads are bounded by the
// runtime's cost per copy call (docs/performance.md, "Small reads and many callers"); one launch
// for sixteen pieces pays that cost once. Built and run on the GPU machine:
//
//   gcc -O2 -I/usr/local/cuda/include scatter_probe.c -L/usr/local/cuda/lib64 \
//       -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread
//   ./a.out FILE            (FILE warm, at least 64 MiB)
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"

// The kernel, in PTX (compiled by the driver when loaded): block (x, y) copies its share of
// piece y; 16 bytes a thread where the piece's addresses and length allow, else bytes.
static const char PTX[] =
    ".version 7.0\n.target sm_75\n.address_size 64\n"
    ".visible .entry scatter(.param .align 8 .b8 pieces[1536], .param .u32 count)\n{\n"
    ".reg .pred %p<4>;\n.reg .b16 %h<2>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;\n"
    "mov.u32 %r1, %ctaid.y;\nld.param.u32 %r2, [count];\nsetp.ge.u32 %p1, %r1, %r2;\n@%p1 bra DONE;\n"
    "mov.u64 %rd1, pieces;\nmul.wide.u32 %rd2, %r1, 24;\nadd.u64 %rd3, %rd1, %rd2;\n"
    "ld.param.u64 %rd4, [%rd3];\nld.param.u64 %rd5, [%rd3+8];\nld.param.u64 %rd6, [%rd3+16];\n"
    "cvta.to.global.u64 %rd4, %rd4;\ncvta.to.global.u64 %rd5, %rd5;\n"
    "or.b64 %rd7, %rd4, %rd5;\nor.b64 %rd7, %rd7, %rd6;\nand.b64 %rd7, %rd7, 15;\n"
    "mov.u32 %r3, %ctaid.x;\nmov.u32 %r4, %ntid.x;\nmov.u32 %r5, %tid.x;\nmad.lo.u32 %r6, %r3, %r4, %r5;\n"
    "mov.u32 %r7, %nctaid.x;\nmul.lo.u32 %r8, %r7, %r4;\ncvt.u64.u32 %rd8, %r6;\ncvt.u64.u32 %rd9, %r8;\n"
    "setp.ne.u64 %p2, %rd7, 0;\n@%p2 bra BYTES;\nshl.b64 %rd10, %rd8, 4;\nshl.b64 %rd11, %rd9, 4;\n"
    "WIDE:\nsetp.ge.u64 %p3, %rd10, %rd6;\n@%p3 bra DONE;\nadd.u64 %rd12, %rd4, %rd10;\nadd.u64 %rd13, %rd5, %rd10;\n"
    "ld.global.v4.u32 {%r9, %r10, %r11, %r12}, [%rd12];\nst.global.v4.u32 [%rd13], {%r9, %r10, %r11, %r12};\n"
    "add.u64 %rd10, %rd10, %rd11;\nbra WIDE;\n"
    "BYTES:\nsetp.ge.u64 %p3, %rd8, %rd6;\n@%p3 bra DONE;\nadd.u64 %rd12, %rd4, %rd8;\nadd.u64 %rd13, %rd5, %rd8;\n"
    "ld.global.u8 %h1, [%rd12];\nst.global.u8 [%rd13], %h1;\nadd.u64 %rd8, %rd8, %rd9;\nbra BYTES;\n"
    "DONE:\nret;\n}\n";

#define MOST 64
struct piece {
    unsigned long long src, dst, len;
};
struct pieces {
    struct piece p[MOST];
};

static cudaKernel_t kernel;
static int fd;
static long file_size;
static size_t io;
static char *dev, *staging;
#define CALLS 20000
#define GROUP 16
#define THREADS 16

static void launch(struct pieces *ps, unsigned n, cudaStream_t s) {
    unsigned long long most = 0;
    for (unsigned i = 0; i < n; i++)
        most = ps->p[i].len > most ? ps->p[i].len : most;
    unsigned x = (unsigned)((most + 4095) / 4096);
    dim3 grid = {x < 64 ? x : 64, n, 1}, block = {256, 1, 1};
    void *args[] = {ps, &n};
    CHECK(cudaLaunchKernel((const void *)kernel, grid, block, args, 0, s));
}

static off_t random_offset(unsigned *seed) { return (off_t)(rand_r(seed) % (file_size / io)) * io; }

static void read_at(char *into, off_t off) {
    if (pread(fd, into, io, off) != (ssize_t)io) {
        perror("pread");
        exit(1);
    }
}

enum mode { EACH_COPY, ONE_KERNEL, ONE_COPY_AND_KERNEL, LONE_KERNEL, COMBINED, KERNEL_ONLY };
static const char *names[] = {"each: pread, copy, sync", "1 thread: 16 preads, 1 kernel, sync",
                              "1 thread: 16 preads, 1 copy, 1 d2d kernel", "each: pread, 1-piece kernel, sync",
                              "each: pread; combined kernels", "1 thread: 1 kernel of 16, no preads"};
static enum mode mode;

// Flat combining: a thread with a read done queues its piece; the first with none leading
// leads, launching one kernel for all the pieces queued, until none is left.
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pieces queued;
static unsigned n_queued;
static int leading;
static long next_round = 1;
static _Atomic long done_round;
static cudaStream_t lead_stream;
static _Atomic long rounds;

static void combined(struct piece p) {
    pthread_mutex_lock(&lock);
    long mine = next_round;
    queued.p[n_queued++] = p;
    if (leading) {
        pthread_mutex_unlock(&lock);
        while (atomic_load_explicit(&done_round, memory_order_acquire) < mine)
            __builtin_ia32_pause();
        return;
    }
    leading = 1;
    while (n_queued) {
        struct pieces round = queued;
        unsigned n = n_queued;
        n_queued = 0;
        long r = next_round++;
        pthread_mutex_unlock(&lock);
        launch(&round, n, lead_stream);
        CHECK(cudaStreamSynchronize(lead_stream));
        atomic_fetch_add(&rounds, 1);
        atomic_store_explicit(&done_round, r, memory_order_release);
        pthread_mutex_lock(&lock);
    }
    leading = 0;
    pthread_mutex_unlock(&lock);
}

static void *run(void *arg) {
    long t = (long)arg;
    char *host;
    cudaStream_t s;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc((void **)&host, io * GROUP, cudaHostAllocDefault));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    unsigned seed = 7 + t;
    struct pieces ps;
    for (int g = 0; g < GROUP; g++)
        ps.p[g] = (struct piece){(unsigned long long)(host + g * io), (unsigned long long)(dev + g * io), io};
    int grouped = mode == ONE_KERNEL || mode == ONE_COPY_AND_KERNEL || mode == KERNEL_ONLY;
    for (int i = 0; i < (grouped ? CALLS / GROUP : CALLS); i++) {
        switch (mode) {
        case EACH_COPY:
            read_at(host, random_offset(&seed));
            CHECK(cudaMemcpyAsync(dev + t * io, host, io, cudaMemcpyHostToDevice, s));
            CHECK(cudaStreamSynchronize(s));
            break;
        case LONE_KERNEL: {
            read_at(host, random_offset(&seed));
            struct pieces one = {{{(unsigned long long)host, (unsigned long long)(dev + t * io), io}}};
            launch(&one, 1, s);
            CHECK(cudaStreamSynchronize(s));
            break;
        }
        case COMBINED:
            read_at(host, random_offset(&seed));
            combined((struct piece){(unsigned long long)host, (unsigned long long)(dev + t * io), io});
            break;
        case ONE_KERNEL:
        case KERNEL_ONLY:
            for (int g = 0; g < GROUP && mode == ONE_KERNEL; g++)
                read_at(host + g * io, random_offset(&seed));
            launch(&ps, GROUP, s);
            CHECK(cudaStreamSynchronize(s));
            break;
        case ONE_COPY_AND_KERNEL: {
            for (int g = 0; g < GROUP; g++)
                read_at(host + g * io, random_offset(&seed));
            CHECK(cudaMemcpyAsync(staging, host, io * GROUP, cudaMemcpyHostToDevice, s));
            struct pieces d2d = ps;
            for (int g = 0; g < GROUP; g++)
                d2d.p[g].src = (unsigned long long)(staging + g * io);
            launch(&d2d, GROUP, s);
            CHECK(cudaStreamSynchronize(s));
            break;
        }
        }
    }
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(host));
    return NULL;
}

// The kernel's bytes against the file's, 16-byte and byte paths (an odd destination).
static void check(void) {
    io = 65536;
    char *host, *back = malloc(io * GROUP);
    CHECK(cudaHostAlloc((void **)&host, io * GROUP, cudaHostAllocDefault));
    for (int odd = 0; odd < 2; odd++) {
        struct pieces ps;
        unsigned seed = 99;
        for (int g = 0; g < GROUP; g++) {
            read_at(host + g * io, random_offset(&seed));
            size_t len = io - g * 100 - odd;
            ps.p[GROUP - 1 - g] = (struct piece){(unsigned long long)(host + g * io),
                                                 (unsigned long long)(dev + g * io + odd), len};
        }
        CHECK(cudaMemset(dev, 0, io * GROUP + 1));
        launch(&ps, GROUP, 0);
        CHECK(cudaDeviceSynchronize());
        CHECK(cudaMemcpy(back, dev + odd, io * GROUP, cudaMemcpyDeviceToHost));
        for (int g = 0; g < GROUP; g++) {
            size_t len = io - g * 100 - odd;
            if (memcmp(back + g * io, host + g * io, len) || (len < io && back[g * io + len] != 0)) {
                fprintf(stderr, "piece %d (odd %d): wrong bytes\n", g, odd);
                exit(1);
            }
        }
    }
    printf("bytes checked: 16 pieces, aligned and odd, each its own length\n");
    CHECK(cudaFreeHost(host));
    free(back);
}

int main(int argc, char **argv) {
    fd = open_data(argc, argv, &file_size);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)THREADS << 20));
    CHECK(cudaMalloc((void **)&staging, (size_t)GROUP << 20));
    CHECK(cudaStreamCreateWithFlags(&lead_stream, cudaStreamNonBlocking));
    kernel = load_kernel(PTX, "scatter");
    check();
    size_t sizes[] = {4096, 16384, 65536, 262144};
    for (int z = 0; z < 4; z++)
        for (mode = EACH_COPY; mode <= KERNEL_ONLY; mode++) {
            io = sizes[z];
            int n = (mode == EACH_COPY || mode == COMBINED || mode == LONE_KERNEL) ? THREADS : 1;
            for (int k = 0; k < (mode == EACH_COPY || mode == LONE_KERNEL ? 2 : 1); k++) {
                int threads = k ? 1 : n;
                atomic_store(&rounds, 0);
                double secs = run_threads(threads, run);
                long reads = (long)CALLS * threads;
                printf("%7zu B x %2d threads  %-42s %7.2f us/read/thread  %6.2f GB/s", io, threads, names[mode],
                       secs / CALLS * 1e6, (double)io * reads / secs / 1e9);
                if (mode == COMBINED)
                    printf("  (%.1f pieces a kernel)", (double)reads / atomic_load(&rounds));
                printf("\n");
            }
        }
    return 0;
}
