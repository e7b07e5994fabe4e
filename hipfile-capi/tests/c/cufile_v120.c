/* A program written for cuFile 1.20 (built against NVIDIA's cufile.h of 1.20, or ours): the
 * calls cuFile 1.16-1.20 added (cuFileReadv/cuFileWritev, the P2P flags, the PCIe topology
 * export, the GPU bounce-buffer slab arrays, the new parameters) and the statistics in 1.19's
 * layout. It prints what each call answered, one line each, so that its transcript over
 * hipfile-rs's libcufile.so.0 can be compared with its transcript over NVIDIA's library
 * (hipfile-capi/tests/cufile.rs keeps NVIDIA's, taken on a GPU machine without nvidia-fs).
 * Data read back is checked bitwise; a mismatch ends the program with status 1.
 *
 *   cufile_v120 DIR    (a scratch directory)
 *
 * Device memory comes from the HIP runtime linked in (the mock, in CI) or, built with
 * -DTESTS_OVER_CUDA, from CUDA's runtime. */
#include <cufile.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#ifdef TESTS_OVER_CUDA
static int (*gpu_malloc)(void **, size_t);
static int (*gpu_free)(void *);
static int (*gpu_memcpy)(void *, const void *, size_t, int);
static void gpu_init(void) {
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    CHECK(rt != NULL);
    *(void **)&gpu_malloc = dlsym(rt, "cudaMalloc");
    *(void **)&gpu_free = dlsym(rt, "cudaFree");
    *(void **)&gpu_memcpy = dlsym(rt, "cudaMemcpy");
    CHECK(gpu_malloc && gpu_free && gpu_memcpy);
}
#define TO_DEVICE 1
#define TO_HOST 2
#else
#include <hip/hip_runtime_api.h>
static void gpu_init(void) {}
static int gpu_malloc(void **p, size_t n) { return (int)hipMalloc(p, n); }
static int gpu_free(void *p) { return (int)hipFree(p); }
static int gpu_memcpy(void *d, const void *s, size_t n, int kind) { return (int)hipMemcpy(d, s, n, (hipMemcpyKind)kind); }
#define TO_DEVICE 1
#define TO_HOST 2
#endif

static void say(const char *what, CUfileError_t e) { printf("%s %d\n", what, (int)e.err); }

static unsigned char byte_at(size_t i) { return (unsigned char)((i * 2654435761u) >> 13); }

/* Before the driver opens: the parameters 1.16-1.20 added and the slab arrays. */
static void closed_driver(void) {
    printf("use-count %ld\n", cuFileUseCount());
    int version = 0;
    say("version", cuFileGetVersion(&version));
    printf("version= %d\n", version);
    bool b = true;
    say("get-bool posix-io-mode", cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE, &b));
    printf("posix-io-mode= %d\n", (int)b);
    b = false;
    say("get-bool gds-fallback-io", cuFileGetParameterBool(CUFILE_PARAM_GDS_FALLBACK_IO, &b));
    printf("gds-fallback-io= %d\n", (int)b);
    char text[64] = "unset";
    say("get-string rdma-transport", cuFileGetParameterString(CUFILE_PARAM_RDMA_TRANSPORT, text, sizeof text));
    printf("rdma-transport= '%s'\n", text);
    CUfileP2PFlags_t flags = (CUfileP2PFlags_t)99;
    say("get-p2p closed", cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, &flags));
    size_t sizes[4] = {0}, counts[4] = {0};
    for (int len = 0; len <= 4; len++) {
        char what[64];
        snprintf(what, sizeof what, "get-bounce-slabs len=%d", len);
        say(what, cuFileGetParameterGpuBounceBufferSlabArray(sizes, counts, len));
    }
    const size_t want_sizes[2] = {1024, 4096}, want_counts[2] = {8, 2};
    say("set-bounce-slabs", cuFileSetParameterGpuBounceBufferSlabArray(want_sizes, want_counts, 2));
    say("get-bounce-slabs after", cuFileGetParameterGpuBounceBufferSlabArray(sizes, counts, 2));
    printf("bounce-slabs= %zu:%zu %zu:%zu\n", sizes[0], counts[0], sizes[1], counts[1]);
    const size_t unaligned[1] = {1001}, one[1] = {1};
    say("set-bounce-slabs unaligned", cuFileSetParameterGpuBounceBufferSlabArray(unaligned, one, 1));
    const size_t descending[2] = {4096, 1024};
    say("set-bounce-slabs descending", cuFileSetParameterGpuBounceBufferSlabArray(descending, want_counts, 2));
    say("set-bounce-slabs null", cuFileSetParameterGpuBounceBufferSlabArray(NULL, want_counts, 2));
    say("set-bool posix-io-mode", cuFileSetParameterBool(CUFILE_PARAM_PROPERTIES_POSIX_IO_MODE, false));
    say("set-string rdma-transport", cuFileSetParameterString(CUFILE_PARAM_RDMA_TRANSPORT, "tcp"));
}

/* With the driver open: the P2P flags of each file system, the topology export. */
static void open_driver(const char *dir) {
    for (int fs = CU_FILE_LUSTRE_SUPPORTED; fs <= CU_FILE_PANFS_SUPPORTED; fs++) {
        CUfileP2PFlags_t flags = (CUfileP2PFlags_t)99;
        CUfileError_t e = cuFileDriverGetP2PFlags((CUfileDriverStatusFlags_t)fs, &flags);
        printf("get-p2p fs=%d %d flags=%d\n", fs, (int)e.err, e.err == CU_FILE_SUCCESS ? (int)flags : -1);
    }
    say("get-p2p null", cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, NULL));
    say("set-p2p pci", cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, CU_FILE_P2P_FLAG_PCI_P2PDMA));
    say("set-p2p nvfs", cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, CU_FILE_P2P_FLAG_NVFS));
    CUfileP2PFlags_t after = (CUfileP2PFlags_t)99;
    CUfileError_t e = cuFileDriverGetP2PFlags(CU_FILE_NVME_SUPPORTED, &after);
    printf("get-p2p after set %d flags=%d\n", (int)e.err, (int)after);
    say("set-p2p none", cuFileDriverSetP2PFlags(CU_FILE_NVME_SUPPORTED, (CUfileP2PFlags_t)0));
    const size_t sizes[1] = {1024}, counts[1] = {4};
    say("set-bounce-slabs open", cuFileSetParameterGpuBounceBufferSlabArray(sizes, counts, 1));
    char path[512];
    snprintf(path, sizeof path, "%s/topology-%d.json", dir, (int)getpid());
    e = cuFileExportPCIeTopology(path);
    printf("export-topology %d written=%d\n", (int)e.err, access(path, F_OK) == 0);
    unlink(path);
    say("export-topology null", cuFileExportPCIeTopology(NULL));
}

#define SIZE (3u << 20)

/* writev then readv at an odd offset, through device and host memory of odd sizes. */
static void vectors(const char *dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/vectors-%d.bin", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CUfileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    descr.handle.fd = fd;
    CUfileHandle_t fh = NULL;
    say("handle-register", cuFileHandleRegister(&fh, &descr));

    unsigned char *src = malloc(SIZE), *back = malloc(SIZE);
    CHECK(src && back);
    for (size_t i = 0; i < SIZE; i++)
        src[i] = byte_at(i);
    void *dev = NULL;
    CHECK(gpu_malloc(&dev, SIZE) == 0);
    CHECK(gpu_memcpy(dev, src, SIZE, TO_DEVICE) == 0);
    /* Device 1 MiB + 3, host 4093 bytes, device the rest: 3 MiB in all. */
    size_t first = (1u << 20) + 3, second = 4093, third = SIZE - first - second;
    CUfileIOVec_t out[3] = {{dev, first}, {src + first, second}, {(char *)dev + first + second, third}};
    const off_t at = 4097;
    printf("writev %zd\n", cuFileWritev(fh, out, 3, at, 0));

    void *dev2 = NULL;
    CHECK(gpu_malloc(&dev2, SIZE) == 0);
    memset(back, 0, SIZE);
    CUfileIOVec_t in[3] = {{dev2, third}, {back, second}, {(char *)dev2 + third, first}};
    printf("readv %zd\n", cuFileReadv(fh, in, 3, at, 0));
    unsigned char *check = malloc(SIZE);
    CHECK(check != NULL);
    CHECK(gpu_memcpy(check, dev2, third, TO_HOST) == 0);
    CHECK(gpu_memcpy(check + third + second, (char *)dev2 + third, first, TO_HOST) == 0);
    memcpy(check + third, back, second);
    printf("readv bitwise %d\n", memcmp(check, src, SIZE) == 0);
    /* A vector past the end: a short read, then 0 at the end. */
    printf("readv at end-100 %zd\n", cuFileReadv(fh, in, 3, at + SIZE - 100, 0));
    printf("readv at end %zd\n", cuFileReadv(fh, in, 3, at + SIZE, 0));
    /* What the calls refuse. */
    printf("readv no vectors %zd\n", cuFileReadv(fh, in, 0, 0, 0));
    printf("readv null %zd\n", cuFileReadv(fh, NULL, 3, 0, 0));
    printf("readv flags %zd\n", cuFileReadv(fh, in, 3, 0, 1));
    printf("readv negative offset %zd\n", cuFileReadv(fh, in, 3, -1, 0));
    CUfileIOVec_t null_base[1] = {{NULL, 4096}};
    printf("readv null base %zd\n", cuFileReadv(fh, null_base, 1, 0, 0));
    CUfileIOVec_t empty[2] = {{dev2, 0}, {back, 0}};
    printf("readv empty vectors %zd\n", cuFileReadv(fh, empty, 2, 0, 0));
    printf("writev null %zd\n", cuFileWritev(fh, NULL, 1, 0, 0));
    printf("readv unregistered %zd\n", cuFileReadv(NULL, in, 3, 0, 0));

    /* A registered buffer, with cuFileRead and cuFileReadv side by side for the statistics. */
    say("buf-register", cuFileBufRegister(dev2, SIZE, 0));
    printf("read %zd\n", cuFileRead(fh, dev2, 1u << 20, at, 0));
    CUfileIOVec_t whole[1] = {{dev2, SIZE}};
    printf("readv registered %zd\n", cuFileReadv(fh, whole, 1, at, 0));
    CHECK(gpu_memcpy(check, dev2, SIZE, TO_HOST) == 0);
    printf("readv registered bitwise %d\n", memcmp(check, src, SIZE) == 0);
    say("buf-deregister", cuFileBufDeregister(dev2));

    cuFileHandleDeregister(fh);
    close(fd);
    unlink(path);
    gpu_free(dev);
    gpu_free(dev2);
    free(src);
    free(back);
    free(check);
}

/* The statistics after vectors(): 1.19's layout, read and vector counts apart. */
static void statistics(void) {
    CUfileStatsLevel3_t s;
    memset(&s, 0xab, sizeof s);
    say("stats-l3", cuFileGetStatsL3(&s));
    const CUfileStatsLevel1_t *l1 = &s.detailed.basic;
    printf("read_ops %llu/%llu read_bytes %llu\n", (unsigned long long)l1->read_ops.ok,
           (unsigned long long)l1->read_ops.err, (unsigned long long)l1->read_bytes);
    printf("write_ops %llu/%llu write_bytes %llu\n", (unsigned long long)l1->write_ops.ok,
           (unsigned long long)l1->write_ops.err, (unsigned long long)l1->write_bytes);
    printf("readv_ops %llu/%llu readv_bytes %llu\n", (unsigned long long)l1->readv_ops.ok,
           (unsigned long long)l1->readv_ops.err, (unsigned long long)l1->readv_bytes);
    printf("writev_ops %llu/%llu writev_bytes %llu\n", (unsigned long long)l1->writev_ops.ok,
           (unsigned long long)l1->writev_ops.err, (unsigned long long)l1->writev_bytes);
    printf("buf_register_ops %llu/%llu\n", (unsigned long long)l1->buf_register_ops.ok,
           (unsigned long long)l1->buf_register_ops.err);
    unsigned long long reads = 0, writes = 0;
    for (int i = 0; i < 32; i++) {
        reads += s.detailed.read_size_kb_hist[i];
        writes += s.detailed.write_size_kb_hist[i];
    }
    printf("histogram reads %llu writes %llu\n", reads, writes);
    printf("num_gpus %u\n", s.num_gpus);
    CUfileStatsLevel1_t only;
    memset(&only, 0xab, sizeof only);
    say("stats-l1", cuFileGetStatsL1(&only));
    printf("l1 matches l3 %d\n", memcmp(&only, l1, offsetof(CUfileStatsLevel1_t, read_bw_bytes_per_sec)) == 0 &&
                                     only.readv_ops.ok == l1->readv_ops.ok);
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    setvbuf(stdout, NULL, _IOLBF, 0);
    gpu_init();
    closed_driver();
    say("driver-open", cuFileDriverOpen());
    open_driver(argv[1]);
    say("stats-level", cuFileSetStatsLevel(3));
    say("stats-start", cuFileStatsStart());
    vectors(argv[1]);
    statistics();
    say("driver-close", cuFileDriverClose());
    return 0;
}
