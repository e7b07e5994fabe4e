/* A program written for NVIDIA's cuFile, built against include/cufile.h and linked with
 * libcufile.so.0 only (not libhipfile), over the mock HIP runtime: every call, with the codes
 * cuFile gives (those measured of cuFile 1.15 and 1.20 where its documentation is silent), and one
 * driver shared with hipFile's API in the same process.
 *
 *   cufile DIR    (a scratch directory); prints "ok" */
#include <cufile.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define EXPECT_ERR(call, expected)                                                            \
    do {                                                                                      \
        CUfileError_t e_ = (call);                                                            \
        if (e_.err != (expected) || e_.cu_err != CUDA_SUCCESS) {                              \
            fprintf(stderr, "%s:%d: %s gave {%d, %d}, expected {%d, 0}\n", __FILE__, __LINE__, \
                    #call, (int)e_.err, (int)e_.cu_err, (int)(expected));                     \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define EXPECT_OK(call) EXPECT_ERR(call, CU_FILE_SUCCESS)

#define HIP_OK(call) CHECK((call) == hipSuccess)

#define MIB (1u << 20)

static unsigned char byte_at(size_t i) { return (unsigned char)((i * 2654435761u) >> 13); }

/* The description of descriptor `fd` that cuFileHandleRegister takes. */
static CUfileDescr_t opaque_fd(int fd) {
    CUfileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    descr.handle.fd = fd;
    return descr;
}

/* Creates (or empties) DIR/NAME-PID.bin, its path left in `path`, and opens it with `flags`. */
static int scratch_file(char *path, size_t size, const char *dir, const char *name, int flags) {
    snprintf(path, size, "%s/%s-%d.bin", dir, name, (int)getpid());
    int fd = open(path, flags | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    return fd;
}

static void parameters_and_version(void) {
    int version = 0;
    EXPECT_OK(cuFileGetVersion(&version));
    CHECK(version == 1200);
    EXPECT_ERR(cuFileGetVersion(NULL), CU_FILE_INVALID_VALUE);
    CHECK(cuFileUseCount() == 0);

    /* Every size parameter reads back inside its range; unknown ones and null pointers are
     * invalid. */
    for (int p = CUFILE_PARAM_PROFILE_STATS; p <= CUFILE_PARAM_PROPERTIES_BATCH_IO_TIMEOUT_MS; p++) {
        size_t value = 0, min = 1, max = 0;
        EXPECT_OK(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)p, &value));
        EXPECT_OK(cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)p, &min, &max));
        CHECK(min <= value && value <= max);
    }
    size_t v = 0, mn = 0, mx = 0;
    EXPECT_ERR(cuFileGetParameterSizeT((CUFileSizeTConfigParameter_t)12, &v), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileGetParameterMinMaxValue((CUFileSizeTConfigParameter_t)12, &mn, &mx), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROFILE_STATS, NULL, &mx), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileGetParameterMinMaxValue(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &mn, &mx));
    CHECK(mn == 1 && mx >= 128);
    EXPECT_ERR(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, mx + 1), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileSetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, 64)); /* staged */
    EXPECT_OK(cuFileGetParameterSizeT(CUFILE_PARAM_PROPERTIES_IO_BATCHSIZE, &v));
    CHECK(v == 64);
    bool b = false;
    EXPECT_OK(cuFileGetParameterBool(CUFILE_PARAM_PROPERTIES_ALLOW_COMPAT_MODE, &b));
    EXPECT_OK(cuFileGetParameterBool(CUFILE_PARAM_GDS_FALLBACK_IO, &b)); /* cuFile 1.20's */
    CHECK(!b);
    EXPECT_ERR(cuFileGetParameterBool((CUFileBoolConfigParameter_t)14, &b), CU_FILE_INVALID_VALUE);
    char level[16];
    EXPECT_OK(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, level, sizeof level));
    EXPECT_ERR(cuFileGetParameterString(CUFILE_PARAM_LOGGING_LEVEL, level, 1), CU_FILE_INVALID_VALUE);

    /* The POSIX pool: cuFile's three default slab kinds, read back only whole. */
    size_t sizes[4] = {0}, counts[4] = {0};
    EXPECT_OK(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 3));
    CHECK(sizes[0] == 4 && sizes[1] == 1024 && sizes[2] == 16384);
    CHECK(counts[0] == 128 && counts[1] == 64 && counts[2] == 64);
    EXPECT_ERR(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 2), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileGetParameterPosixPoolSlabArray(NULL, counts, 3), CU_FILE_INVALID_VALUE);
    const size_t new_sizes[2] = {64, 2048}, new_counts[2] = {16, 8}, zero[2] = {0, 1};
    EXPECT_ERR(cuFileSetParameterPosixPoolSlabArray(new_sizes, new_counts, 0), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileSetParameterPosixPoolSlabArray(NULL, new_counts, 2), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileSetParameterPosixPoolSlabArray(new_sizes, zero, 2), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileSetParameterPosixPoolSlabArray(new_sizes, new_counts, 2));
    EXPECT_OK(cuFileGetParameterPosixPoolSlabArray(sizes, counts, 2));
    CHECK(sizes[1] == 2048 && counts[1] == 8);

    /* Statistics levels: 0 to 3. */
    EXPECT_ERR(cuFileSetStatsLevel(4), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileSetStatsLevel(-1), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileGetStatsLevel(NULL), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileSetStatsLevel(3));
    int stats_level = -1;
    EXPECT_OK(cuFileGetStatsLevel(&stats_level));
    CHECK(stats_level == 3);

    size_t bar = 7;
    EXPECT_ERR(cuFileGetBARSizeInKB(0, &bar), CU_FILE_PLATFORM_NOT_SUPPORTED);
    EXPECT_ERR(cuFileGetBARSizeInKB(-1, &bar), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileGetBARSizeInKB(0, NULL), CU_FILE_INVALID_VALUE);
    CHECK(bar == 7);
}

/* hipFile's use count, from the libhipfile.so.0 libcufile.so.0 loaded: one driver for both. */
static long hipfile_use_count(void) {
    void *lib = dlopen("libhipfile.so.0", RTLD_NOW | RTLD_NOLOAD);
    CHECK(lib != NULL);
    int64_t (*count)(void) = (int64_t(*)(void))dlsym(lib, "hipFileUseCount");
    CHECK(count != NULL);
    long n = (long)count();
    dlclose(lib);
    return n;
}

static void driver_and_io(const char *dir) {
    EXPECT_OK(cuFileDriverOpen());
    CHECK(cuFileUseCount() == 1);
    CHECK(hipfile_use_count() == 1);
    CUfileDrvProps_t props;
    memset(&props, 0xff, sizeof props);
    EXPECT_OK(cuFileDriverGetProperties(&props));
    CHECK(props.max_batch_io_size == 64); /* the staged IOBatchsize applied at the open */
    CHECK(props.fflags & (1u << CU_FILE_BATCH_IO_SUPPORTED));
    CHECK(props.fflags & (1u << CU_FILE_STREAMS_SUPPORTED));
    EXPECT_ERR(cuFileDriverGetProperties(NULL), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileSetParameterSizeT(CUFILE_PARAM_PROFILE_STATS, 1), CU_FILE_DRIVER_ALREADY_OPEN);
    /* The driver setters are accepted while the driver is open, as cuFile's are. */
    EXPECT_OK(cuFileDriverSetPollMode(true, 64));
    EXPECT_OK(cuFileDriverSetMaxDirectIOSize(1024));
    EXPECT_OK(cuFileDriverSetMaxCacheSize(1024));
    EXPECT_OK(cuFileDriverSetMaxPinnedMemSize(65536));
    const size_t one[1] = {64};
    EXPECT_ERR(cuFileSetParameterPosixPoolSlabArray(one, one, 1), CU_FILE_DRIVER_ALREADY_OPEN);

    char path[4096];
    int fd = scratch_file(path, sizeof path, dir, "cufile", O_RDWR);
    CUfileDescr_t descr = opaque_fd(fd);
    CUfileHandle_t fh = NULL;
    EXPECT_ERR(cuFileHandleRegister(NULL, &descr), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileHandleRegister(&fh, &descr));
    EXPECT_ERR(cuFileHandleRegister(&fh, &descr), CU_FILE_HANDLE_ALREADY_REGISTERED);

    unsigned char *host = malloc(4 * MIB), *back = malloc(4 * MIB);
    CHECK(host && back);
    for (size_t i = 0; i < 4 * MIB; i++) host[i] = byte_at(i);
    void *dev = NULL, *dev2 = NULL;
    HIP_OK(hipMalloc(&dev, 4 * MIB));
    HIP_OK(hipMalloc(&dev2, 4 * MIB));
    HIP_OK(hipMemcpy(dev, host, 4 * MIB, hipMemcpyHostToDevice));
    EXPECT_OK(cuFileBufRegister(dev, 4 * MIB, 0));
    EXPECT_ERR(cuFileBufRegister(dev, 4 * MIB, 0), CU_FILE_MEMORY_ALREADY_REGISTERED);
    CHECK(cuFileWrite(fh, dev, 4 * MIB, 0, 0) == (ssize_t)(4 * MIB));
    CHECK(cuFileRead(fh, dev2, 4 * MIB - 100, 100, 0) == (ssize_t)(4 * MIB - 100));
    HIP_OK(hipMemcpy(back, dev2, 4 * MIB - 100, hipMemcpyDeviceToHost));
    CHECK(memcmp(back, host + 100, 4 * MIB - 100) == 0);
    CHECK(cuFileRead(fh, dev2, 4096, 4 * MIB - 10, 0) == 10); /* end of file */
    CHECK(cuFileRead(fh, dev2, MIB, 0, 4 * MIB) == -CU_FILE_INVALID_VALUE);
    CHECK(cuFileRead((CUfileHandle_t)0x1234, dev2, 4096, 0, 0) == -CU_FILE_HANDLE_NOT_REGISTERED);
    CHECK(cuFileRead(fh, host, 4096, 0, 0) == -CU_FILE_CUDA_MEMORY_TYPE_INVALID);

    /* Statistics at level 3 count the calls above; reset, stop and start as cuFile does. */
    CUfileStatsLevel1_t s1;
    static CUfileStatsLevel3_t s3;
    EXPECT_OK(cuFileGetStatsL1(&s1));
    CHECK(s1.read_ops.ok == 2 && s1.read_bytes == 4 * MIB - 100 + 10 && s1.write_ops.ok == 1);
    CHECK(s1.hdl_register_ops.ok == 1 && s1.buf_register_ops.ok == 1);
    EXPECT_OK(cuFileGetStatsL3(&s3));
    CHECK(s3.num_gpus >= 1 && s3.detailed.basic.write_bytes == 4 * MIB);
    EXPECT_ERR(cuFileGetStatsL1(NULL), CU_FILE_INVALID_VALUE);
    EXPECT_OK(cuFileStatsReset());
    EXPECT_OK(cuFileGetStatsL1(&s1));
    CHECK(s1.read_ops.ok == 0 && s1.read_bytes == 0 && s1.write_ops.ok == 0);
    CHECK(cuFileRead(fh, dev2, 4096, 0, 0) == 4096);
    EXPECT_OK(cuFileSetStatsLevel(1));
    EXPECT_OK(cuFileGetStatsL1(&s1));
    CHECK(s1.read_ops.ok == 1 && s1.read_bytes == 4096);
    CUfileStatsLevel2_t s2;
    EXPECT_ERR(cuFileGetStatsL2(&s2), CU_FILE_INVALID_VALUE); /* counting at level 1 */
    EXPECT_OK(cuFileStatsStart());
    EXPECT_OK(cuFileStatsStop());
    int stats_level = -1;
    EXPECT_OK(cuFileGetStatsLevel(&stats_level));
    CHECK(stats_level == 0);
    EXPECT_ERR(cuFileGetStatsL1(&s1), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileStatsStart(), CU_FILE_INTERNAL_ERROR); /* cuFile 1.15's answer at level 0 */
    EXPECT_OK(cuFileSetStatsLevel(2));
    EXPECT_OK(cuFileStatsStart());

    /* A batch: four reads, their events, then a cancel and the end of the batch. */
    CUfileBatchHandle_t batch = NULL;
    EXPECT_ERR(cuFileBatchIOSetUp(&batch, 0), CU_FILE_INVALID_VALUE);
    EXPECT_ERR(cuFileBatchIOSetUp(&batch, 65), CU_FILE_INVALID_VALUE); /* IOBatchsize is 64 */
    EXPECT_ERR(cuFileBatchIOSetUp(NULL, 4), CU_FILE_INVALID_VALUE);  /* cuFile 1.15 crashes */
    EXPECT_OK(cuFileBatchIOSetUp(&batch, 8));
    CUfileIOParams_t io[4];
    memset(io, 0, sizeof io);
    for (int i = 0; i < 4; i++) {
        io[i].mode = CUFILE_BATCH;
        io[i].fh = fh;
        io[i].opcode = CUFILE_READ;
        io[i].cookie = (void *)(uintptr_t)(i + 1);
        io[i].u.batch.devPtr_base = dev2;
        io[i].u.batch.file_offset = (off_t)(3 - i) * MIB;
        io[i].u.batch.devPtr_offset = (off_t)i * MIB;
        io[i].u.batch.size = MIB;
    }
    EXPECT_OK(cuFileBatchIOSubmit(batch, 4, io, 0));
    CUfileIOEvents_t events[4];
    unsigned nr = 4, seen = 0;
    while (seen < 4) {
        nr = 4 - seen;
        EXPECT_OK(cuFileBatchIOGetStatus(batch, 1, &nr, events + seen, NULL));
        seen += nr;
    }
    for (unsigned i = 0; i < 4; i++) {
        CHECK(events[i].status == CUFILE_COMPLETE && events[i].ret == MIB);
        CHECK((uintptr_t)events[i].cookie >= 1 && (uintptr_t)events[i].cookie <= 4);
    }
    HIP_OK(hipMemcpy(back, dev2, 4 * MIB, hipMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++) CHECK(memcmp(back + (size_t)i * MIB, host + (size_t)(3 - i) * MIB, MIB) == 0);
    EXPECT_OK(cuFileBatchIOCancel(batch));
    cuFileBatchIODestroy(batch);

    /* Stream-ordered: a read queued on a registered stream. */
    hipStream_t stream;
    HIP_OK(hipStreamCreate(&stream));
    EXPECT_OK(cuFileStreamRegister((CUstream)stream, 15));
    size_t size = MIB;
    off_t file_offset = 2 * MIB, buf_offset = 0;
    ssize_t bytes = -1;
    EXPECT_OK(cuFileReadAsync(fh, dev2, &size, &file_offset, &buf_offset, &bytes, (CUstream)stream));
    HIP_OK(hipStreamSynchronize(stream));
    CHECK(bytes == (ssize_t)MIB);
    HIP_OK(hipMemcpy(back, dev2, MIB, hipMemcpyDeviceToHost));
    CHECK(memcmp(back, host + 2 * MIB, MIB) == 0);
    ssize_t written = -1;
    EXPECT_OK(cuFileWriteAsync(fh, dev, &size, &file_offset, &buf_offset, &written, (CUstream)stream));
    HIP_OK(hipStreamSynchronize(stream));
    CHECK(written == (ssize_t)MIB);
    EXPECT_OK(cuFileStreamDeregister((CUstream)stream));
    EXPECT_ERR(cuFileStreamDeregister((CUstream)stream), CU_FILE_INVALID_VALUE);
    HIP_OK(hipStreamDestroy(stream));

    /* A file opened write-only cannot be read, nor one opened read-only written: cuFile's
     * code, before any I/O. */
    int wronly = open(path, O_WRONLY), rdonly = open(path, O_RDONLY);
    CHECK(wronly >= 0 && rdonly >= 0);
    CUfileHandle_t wfh = NULL, rfh = NULL;
    descr = opaque_fd(wronly);
    EXPECT_OK(cuFileHandleRegister(&wfh, &descr));
    descr = opaque_fd(rdonly);
    EXPECT_OK(cuFileHandleRegister(&rfh, &descr));
    CHECK(cuFileRead(wfh, dev2, 4096, 0, 0) == -CU_FILE_INVALID_FILE_OPEN_FLAG);
    CHECK(cuFileWrite(rfh, dev2, 4096, 0, 0) == -CU_FILE_INVALID_FILE_OPEN_FLAG);
    CHECK(cuFileWrite(wfh, dev, 4096, 0, 0) == 4096 && cuFileRead(rfh, dev2, 4096, 0, 0) == 4096);
    size = 4096;
    EXPECT_ERR(cuFileReadAsync(wfh, dev2, &size, &file_offset, &buf_offset, &bytes, NULL),
               CU_FILE_INVALID_FILE_OPEN_FLAG);
    EXPECT_ERR(cuFileWriteAsync(rfh, dev2, &size, &file_offset, &buf_offset, &written, NULL),
               CU_FILE_INVALID_FILE_OPEN_FLAG);
    cuFileHandleDeregister(wfh);
    cuFileHandleDeregister(rfh);
    close(wronly);
    close(rdonly);

    EXPECT_OK(cuFileBufDeregister(dev));
    EXPECT_ERR(cuFileBufDeregister(dev), CU_FILE_MEMORY_NOT_REGISTERED);
    cuFileHandleDeregister(fh);
    CHECK(cuFileRead(fh, dev2, 4096, 0, 0) == -CU_FILE_HANDLE_NOT_REGISTERED);
    HIP_OK(hipFree(dev));
    HIP_OK(hipFree(dev2));
    free(host);
    free(back);
    close(fd);
    unlink(path);
}

static void closing(const char *dir) {
    /* cufile.h turns cuFileDriverClose into cuFileDriverClose_v2; the old name is exported
     * too, for programs built before it did. */
    CUfileError_t (*old_close)(void) = (CUfileError_t(*)(void))dlsym(RTLD_DEFAULT, "cuFileDriverClose");
    CHECK(old_close != NULL);
    EXPECT_OK(cuFileDriverOpen());
    CHECK(cuFileUseCount() == 2 && hipfile_use_count() == 2);
    /* A handle left registered goes with the last close, its access mode too: after a reopen
     * it is unknown, not refused for being write-only. */
    char path[4096];
    int wronly = scratch_file(path, sizeof path, dir, "cufile-close", O_WRONLY);
    CUfileDescr_t descr = opaque_fd(wronly);
    CUfileHandle_t left = NULL;
    EXPECT_OK(cuFileHandleRegister(&left, &descr));
    EXPECT_OK(old_close());
    EXPECT_OK(cuFileDriverClose());
    CHECK(cuFileUseCount() == 0 && hipfile_use_count() == 0);
    EXPECT_ERR(cuFileDriverClose(), CU_FILE_DRIVER_NOT_INITIALIZED);
    EXPECT_OK(cuFileDriverOpen());
    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, 4096));
    CHECK(cuFileRead(left, dev, 4096, 0, 0) == -CU_FILE_HANDLE_NOT_REGISTERED);
    HIP_OK(hipFree(dev));
    EXPECT_OK(cuFileDriverClose());
    close(wronly);
    unlink(path);
    CHECK(strcmp(CUFILE_ERRSTR(-CU_FILE_INVALID_VALUE), "invalid argument") == 0);
    CHECK(IS_CUFILE_ERR(-5022) && !IS_CUFILE_ERR(-22));
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    parameters_and_version();
    driver_and_io(argv[1]);
    closing(argv[1]);
    printf("ok\n");
    return 0;
}
