// What NVIDIA's cuFile answers where its documentation is silent: the codes and values of the
// calls hipfile-rs's libcufile.so.0 must match (driver closed and open, parameters, statistics
// controls, batches, bad arguments). Built and run on the GPU machine (no nvidia-fs there, so
// cuFile runs in its compatibility mode):
//
//   gcc -O1 -I/usr/local/cuda/include cufile_probe.c -L/usr/local/cuda/lib64 -lcufile -lcudart
//   ./a.out FILE        (FILE: 4 MiB or more; one line per answer)
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <cufile.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define E(call)                                                                      \
    do {                                                                             \
        CUfileError_t e_ = (call);                                                   \
        printf("%-70s err %d cu %d\n", #call, (int)e_.err, (int)e_.cu_err);          \
    } while (0)

static void params(const char *when) {
    printf("-- parameters (%s)\n", when);
    for (int p = 0; p <= 12; p++) {
        size_t v = 12345, mn = 1, mx = 2;
        CUfileError_t a = cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &v);
        CUfileError_t b = cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)p, &mn, &mx);
        printf("size %2d: get err %d value %zu; minmax err %d min %zu max %zu\n", p, a.err, v, b.err, mn, mx);
    }
    for (int p = 0; p <= 12; p++) {
        bool v = false;
        CUfileError_t a = cuFileGetParameterBool((CUFileBoolConfigParameter_t)p, &v);
        printf("bool %2d: get err %d value %d\n", p, a.err, (int)v);
    }
    for (int p = 0; p <= 3; p++) {
        char s[256] = "untouched";
        CUfileError_t a = cuFileGetParameterString((CUFileStringConfigParameter_t)p, s, sizeof s);
        char t[2] = "u";
        CUfileError_t b = cuFileGetParameterString((CUFileStringConfigParameter_t)p, t, 2);
        printf("string %d: get err %d value '%s'; len 2 err %d '%s'\n", p, a.err, s, b.err, t);
    }
    size_t sizes[8] = {0}, counts[8] = {0};
    for (int len = 0; len <= 8; len += 2) {
        CUfileError_t a = cuFileGetParameterPosixPoolSlabArray(sizes, counts, len);
        printf("slab get len %d: err %d:", len, a.err);
        for (int i = 0; i < len; i++) printf(" %zu x %zu", sizes[i], counts[i]);
        printf("\n");
    }
    E(cuFileGetParameterPosixPoolSlabArray(NULL, counts, 4));
    E(cuFileGetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, NULL));
    E(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, NULL, NULL));
    int level = -7;
    CUfileError_t l = cuFileGetStatsLevel(&level);
    printf("stats level: err %d level %d\n", l.err, level);
    E(cuFileGetStatsLevel(NULL));
    size_t bar = 777;
    CUfileError_t b = cuFileGetBARSizeInKB(0, &bar);
    printf("bar size gpu 0: err %d %zu\n", b.err, bar);
    E(cuFileGetBARSizeInKB(7, &bar));
    E(cuFileGetBARSizeInKB(-1, &bar));
    E(cuFileGetBARSizeInKB(0, NULL));
}

static void stats(const char *when) {
    CUfileStatsLevel1_t s1;
    memset(&s1, 0xab, sizeof s1);
    CUfileError_t a = cuFileGetStatsL1(&s1);
    printf("stats L1 (%s): err %d read ok %llu err %llu bytes %llu lat_sum %llu bw %llu hdl_reg ok %llu\n", when,
           a.err, (unsigned long long)s1.read_ops.ok, (unsigned long long)s1.read_ops.err,
           (unsigned long long)s1.read_bytes, (unsigned long long)s1.read_lat_sum_us,
           (unsigned long long)s1.read_bw_bytes_per_sec, (unsigned long long)s1.hdl_register_ops.ok);
    static CUfileStatsLevel3_t s3;
    CUfileStatsLevel2_t s2;
    CUfileError_t c = cuFileGetStatsL2(&s2);
    CUfileError_t d = cuFileGetStatsL3(&s3);
    printf("stats L2 err %d hist[10] %llu; L3 err %d gpus %u\n", c.err, (unsigned long long)s2.read_size_kb_hist[10],
           d.err, s3.num_gpus);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int v = -1;
    CUfileError_t ve = cuFileGetVersion(&v);
    printf("version: err %d value %d\n", ve.err, v);
    E(cuFileGetVersion(NULL));
    printf("use count closed: %ld\n", cuFileUseCount());
    params("closed");
    printf("use count after the parameter calls: %ld\n", cuFileUseCount());
    E(cuFileSetStatsLevel(2));
    E(cuFileSetStatsLevel(4));
    E(cuFileSetStatsLevel(-1));
    E(cuFileStatsStart());
    E(cuFileStatsStop());
    E(cuFileStatsReset());
    stats("closed");
    E(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 3));
    E(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 100000));
    E(cuFileSetParameterSizeT((CUFileSizeTConfigParameter_t)40, 1));
    E(cuFileSetParameterBool((CUFileBoolConfigParameter_t)40, true));
    E(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "WARN"));
    E(cuFileSetParameterString(CUFILE_PARAM_LOGGING_LEVEL, "nonsense"));
    E(cuFileSetParameterString(CUFILE_PARAM_LOG_DIR, "relative"));
    size_t sz[2] = {1024, 4096}, ct[2] = {8, 4};
    E(cuFileSetParameterPosixPoolSlabArray(sz, ct, 2));
    E(cuFileSetParameterPosixPoolSlabArray(sz, ct, 0));
    E(cuFileSetParameterPosixPoolSlabArray(NULL, ct, 2));
    size_t got_s[2] = {0}, got_c[2] = {0};
    CUfileError_t g = cuFileGetParameterPosixPoolSlabArray(got_s, got_c, 2);
    printf("slab after set: err %d %zu x %zu, %zu x %zu\n", g.err, got_s[0], got_c[0], got_s[1], got_c[1]);
    // cuFileBatchIOSetUp(NULL, 4) crashes cuFile 1.15 (SIGSEGV): not asked.
    CUfileBatchHandle_t batch;
    E(cuFileBatchIOSetUp(&batch, 0));
    E(cuFileBatchIOSetUp(&batch, 129));
    E(cuFileDriverClose_v2());
    printf("use count after bad close: %ld\n", cuFileUseCount());

    E(cuFileDriverOpen());
    printf("use count open: %ld\n", cuFileUseCount());
    CUfileDrvProps_t props;
    memset(&props, 0, sizeof props);
    E(cuFileDriverGetProperties(&props));
    printf("props: nvfs %u.%u poll %zu maxdio %zu dstatus 0x%x dcontrol 0x%x fflags 0x%x cache %u perbuf %u "
           "pinned %u batch %u timeout %u\n",
           props.nvfs.major_version, props.nvfs.minor_version, props.nvfs.poll_thresh_size,
           props.nvfs.max_direct_io_size, props.nvfs.dstatusflags, props.nvfs.dcontrolflags, props.fflags,
           props.max_device_cache_size, props.per_buffer_cache_size, props.max_device_pinned_mem_size,
           props.max_batch_io_size, props.max_batch_io_timeout_msecs);
    E(cuFileDriverGetProperties(NULL));
    params("open");
    E(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 1));
    E(cuFileDriverSetMaxDirectIOSize(1024));
    E(cuFileSetStatsLevel(3));
    int level = -1;
    cuFileGetStatsLevel(&level);
    printf("stats level after set 3: %d\n", level);
    E(cuFileStatsStart());
    if (argc > 1) {
        int fd = open(argv[1], O_RDONLY | O_DIRECT);
        CUfileDescr_t d;
        memset(&d, 0, sizeof d);
        d.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
        d.handle.fd = fd;
        CUfileHandle_t fh;
        E(cuFileHandleRegister(&fh, &d));
        void *dev = NULL;
        cudaMalloc(&dev, 4 << 20);
        printf("read: %zd\n", cuFileRead(fh, dev, 1 << 20, 0, 0));
        printf("read past buffer: %zd\n", cuFileRead(fh, dev, 1 << 20, 0, 4 << 20));
        printf("read bad handle: %zd\n", cuFileRead((CUfileHandle_t)0x1234, dev, 4096, 0, 0));
        stats("after a read");
        E(cuFileSetStatsLevel(2));
        stats("level 2, after a read");
        E(cuFileStatsReset());
        stats("after reset");
        E(cuFileStatsStop());
        printf("read: %zd\n", cuFileRead(fh, dev, 1 << 20, 0, 0));
        stats("stopped, one more read");
        cuFileGetStatsLevel(&level);
        printf("stats level after stop: %d\n", level);
        E(cuFileStatsStart());
        printf("read: %zd\n", cuFileRead(fh, dev, 1 << 20, 0, 0));
        stats("started again, one more read");
        E(cuFileSetStatsLevel(1));
        stats("level 1");
        E(cuFileSetStatsLevel(0));
        stats("level 0");
        E(cuFileBatchIOSetUp(&batch, 128));
        cuFileBatchIODestroy(batch);
        cuFileHandleDeregister(fh);
        cudaFree(dev);
        close(fd);
    }
    E(cuFileDriverClose());
    printf("use count after close: %ld\n", cuFileUseCount());
    E(cuFileDriverClose_v2());
    return 0;
}
