/* async DIR: stream-ordered I/O case by case, as upstream's system tests (test/system/async.cpp)
 * have it: stream registration, every invalid argument, reads and writes under every
 * combination of FIXED flags (offsets zero and unaligned, sizes unaligned, zero), several
 * operations in sequence on one stream, a read past the end of the file, values changed
 * between submission and execution (size shrunk, grown, offsets moved) on a stream held by a
 * host function, FIXED values that such changes do not touch, a GPU-side dependency between
 * operations, the null stream, and a write the file size limit fails. Files go in DIR. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <unistd.h>

#include "common.h"

#define KIB 1024
#define MIB (1024 * 1024)
#define SIZE MIB

typedef hipFileError_t (*async_fn)(hipFileHandle_t, void *, size_t *, hoff_t *, hoff_t *, ssize_t *, hipStream_t);

static int fd;
static hipFileHandle_t fh;
static void *dev;
static char path[4096];
static unsigned seed = 1;
static unsigned char file_mirror[2 * SIZE], dev_mirror[SIZE], got[2 * SIZE];

/* The file's [0, len) to fresh bytes (kept in file_mirror), the device's to zero. */
static void file_fresh(size_t len)
{
    seed++;
    for (size_t i = 0; i < len; i++) {
        file_mirror[i] = byte_at(i, seed);
    }
    full_pwrite(fd, file_mirror, len, 0);
    HIP_OK(hipMemset(dev, 0, SIZE));
}

/* The device's [0, SIZE) to fresh bytes (kept in dev_mirror), the file's to zero. */
static void device_fresh(void)
{
    seed++;
    for (size_t i = 0; i < SIZE; i++) {
        dev_mirror[i] = byte_at(i, seed);
    }
    HIP_OK(hipMemcpy(dev, dev_mirror, SIZE, hipMemcpyHostToDevice));
    memset(file_mirror, 0, SIZE);
    full_pwrite(fd, file_mirror, SIZE, 0);
    CHECK(ftruncate(fd, SIZE) == 0);
}

/* `got` (SIZE bytes read back from where the operation wrote, `what`) holds src [src_off, +len)
 * at dst_off and zeros elsewhere. */
static void check_got(const char *what, const unsigned char *src, size_t src_off, size_t dst_off, size_t len)
{
    for (size_t i = 0; i < SIZE; i++) {
        unsigned char want = (i >= dst_off && i < dst_off + len) ? src[src_off + i - dst_off] : 0;
        if (got[i] != want) {
            fprintf(stderr, "%s byte %zu: %u, expected %u\n", what, i, got[i], want);
            exit(1);
        }
    }
}

/* After a read: the device holds file [file_off, +len) at buf_off and zeros elsewhere. */
static void check_read(size_t file_off, size_t buf_off, size_t len)
{
    HIP_OK(hipMemcpy(got, dev, SIZE, hipMemcpyDeviceToHost));
    check_got("device", file_mirror, file_off, buf_off, len);
}

/* After a write: the file holds device [buf_off, +len) at file_off and zeros elsewhere. */
static void check_write(size_t file_off, size_t buf_off, size_t len)
{
    full_pread(fd, got, SIZE, 0);
    check_got("file", dev_mirror, buf_off, file_off, len);
}

/* After a read or a write of file [file_off, +len) to or from the device at buf_off. */
static void check_moved(int reading, size_t file_off, size_t buf_off, size_t len)
{
    if (reading) {
        check_read(file_off, buf_off, len);
    } else {
        check_write(file_off, buf_off, len);
    }
}

static hipStream_t new_stream(unsigned flags)
{
    hipStream_t s;
    HIP_OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    EXPECT_OK(hipFileStreamRegister(s, flags));
    return s;
}

static void drop_stream(hipStream_t s)
{
    EXPECT_OK(hipFileStreamDeregister(s));
    HIP_OK(hipStreamDestroy(s));
}

/* Fresh bytes where an operation takes them from (the file for a read, the device for a
 * write), and a new stream with `flags` for it. */
static hipStream_t fresh_stream(int reading, unsigned flags)
{
    if (reading) {
        file_fresh(SIZE);
    } else {
        device_fresh();
    }
    return new_stream(flags);
}

/* A stream held by a host function until `release_gate`: values changed meanwhile are what
 * an operation queued behind it sees when it runs. */
static volatile int gate_open;

static void gate(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&gate_open, __ATOMIC_ACQUIRE)) {
        usleep(100);
    }
}

static void hold(hipStream_t s)
{
    __atomic_store_n(&gate_open, 0, __ATOMIC_RELEASE);
    HIP_OK(hipLaunchHostFunc(s, gate, NULL));
}

static void release_gate(void)
{
    __atomic_store_n(&gate_open, 1, __ATOMIC_RELEASE);
}

static void registration(void)
{
    hipStream_t s;
    HIP_OK(hipStreamCreateWithFlags(&s, hipStreamNonBlocking));
    EXPECT_ERR(hipFileStreamRegister(s, 0x10), hipFileInvalidValue);
    EXPECT_ERR(hipFileStreamRegister(s, 0xffffffffu), hipFileInvalidValue);
    EXPECT_ERR(hipFileStreamDeregister(s), hipFileInvalidValue);
    EXPECT_OK(hipFileStreamRegister(s, HIPFILE_STREAM_FLAGS_MASK));
    EXPECT_ERR(hipFileStreamRegister(s, 0), hipFileInvalidValue);
    EXPECT_OK(hipFileStreamDeregister(s));
    EXPECT_ERR(hipFileStreamDeregister(s), hipFileInvalidValue);
    EXPECT_OK(hipFileStreamRegister(s, 0)); /* registered again after deregistering */
    EXPECT_OK(hipFileStreamDeregister(s));
    EXPECT_OK(hipFileStreamRegister(NULL, HIPFILE_STREAM_FIXED_FILE_SIZE)); /* the null stream */
    EXPECT_OK(hipFileStreamDeregister(NULL));
    HIP_OK(hipStreamDestroy(s));
}

static void invalid_arguments(async_fn io)
{
    hipStream_t s = new_stream(HIPFILE_STREAM_FLAGS_MASK);
    size_t size = SIZE;
    hoff_t foff = 0, boff = 0;
    ssize_t bytes = 7;
    EXPECT_ERR(io(fh, NULL, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    EXPECT_ERR(io(fh, dev, NULL, &foff, &boff, &bytes, s), hipFileInvalidValue);
    EXPECT_ERR(io(fh, dev, &size, NULL, &boff, &bytes, s), hipFileInvalidValue);
    EXPECT_ERR(io(fh, dev, &size, &foff, NULL, &bytes, s), hipFileInvalidValue);
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, NULL, s), hipFileInvalidValue);
    size = SIZE + 4 * KIB; /* larger than the buffer */
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    size = SIZE;
    foff = -4096;
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    foff = INT64_MAX - 10; /* past the largest file offset */
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    foff = 0;
    boff = -4096;
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    boff = SIZE + 4096;
    EXPECT_ERR(io(fh, dev, &size, &foff, &boff, &bytes, s), hipFileInvalidValue);
    boff = 0;
    EXPECT_ERR(io((hipFileHandle_t)0x1234, dev, &size, &foff, &boff, &bytes, s), hipFileHandleNotRegistered);
    char host[64];
    EXPECT_ERR(io(fh, host, &size, &foff, &boff, &bytes, s), hipFileHipMemoryTypeInvalid);
    HIP_OK(hipStreamSynchronize(s));
    CHECK(bytes == 7); /* nothing ran */
    drop_stream(s);
#ifndef TESTS_OVER_CUDA /* CUDA does not check stream handles: a garbage one crashes it */
    /* A stream the runtime refuses: the call fails, and leaves the caller's values alone. */
    hipFileError_t e = io(fh, dev, &size, &foff, &boff, &bytes, (hipStream_t)(uintptr_t)0xdead0);
    CHECK(e.err == hipFileHipDriverError && e.hip_drv_err != hipSuccess);
    CHECK(bytes == 7);
#endif
}

/* One operation with the given values on a stream with `flags`; checks bytes and data. */
static void one(async_fn io, int reading, unsigned flags, size_t size, hoff_t foff, hoff_t boff)
{
    hipStream_t s = fresh_stream(reading, flags);
    ssize_t bytes = -77;
    EXPECT_OK(io(fh, dev, &size, &foff, &boff, &bytes, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(bytes == (ssize_t)size);
    check_moved(reading, (size_t)foff, (size_t)boff, size);
    drop_stream(s);
}

static void zero_size(async_fn io, unsigned flags)
{
    hipStream_t s = new_stream(flags);
    size_t size = 0;
    hoff_t foff = 0, boff = 0;
    ssize_t bytes = 1;
    EXPECT_OK(io(fh, dev, &size, &foff, &boff, &bytes, s));
    CHECK(bytes == 0); /* at once, before any synchronisation */
    drop_stream(s);
}

/* (SIZE / 8 KiB) - 1 operations of 16 KiB, each at the next 8 KiB: each overwrites half of the
 * one before, so only running in order leaves the expected bytes. */
static void in_sequence(async_fn io, int reading, unsigned flags)
{
    enum { N = SIZE / (8 * KIB) - 1 };
    static ssize_t bytes[N];
    static hoff_t offsets[N];
    size_t size = 16 * KIB;
    hoff_t zero = 0;
    hipStream_t s = fresh_stream(reading, flags);
    for (size_t i = 0; i < N; i++) {
        offsets[i] = (hoff_t)(i * 8 * KIB);
        bytes[i] = -77;
        if (reading) {
            EXPECT_OK(io(fh, dev, &size, &zero, &offsets[i], &bytes[i], s));
        } else {
            EXPECT_OK(io(fh, dev, &size, &offsets[i], &zero, &bytes[i], s));
        }
    }
    HIP_OK(hipStreamSynchronize(s));
    for (size_t i = 0; i < N; i++) {
        CHECK(bytes[i] == (ssize_t)size);
    }
    if (reading) {
        HIP_OK(hipMemcpy(got, dev, SIZE, hipMemcpyDeviceToHost));
        for (size_t i = 0; i < N; i++) {
            size_t len = i == N - 1 ? 16 * KIB : 8 * KIB;
            CHECK(memcmp(got + i * 8 * KIB, file_mirror, len) == 0);
        }
    } else {
        full_pread(fd, got, SIZE, 0);
        for (size_t i = 0; i < N; i++) {
            size_t len = i == N - 1 ? 16 * KIB : 8 * KIB;
            CHECK(memcmp(got + i * 8 * KIB, dev_mirror, len) == 0);
        }
    }
    drop_stream(s);
}

static void past_end_of_file(void)
{
    file_fresh(SIZE);
    hipStream_t s = new_stream(HIPFILE_STREAM_FLAGS_MASK);
    size_t size = SIZE;
    hoff_t foff = 4 * KIB, boff = 0;
    ssize_t bytes = -77;
    EXPECT_OK(hipFileReadAsync(fh, dev, &size, &foff, &boff, &bytes, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(bytes == SIZE - 4 * KIB);
    check_read(4 * KIB, 0, SIZE - 4 * KIB);
    drop_stream(s);
}

/* Values changed after submission, before the stream reaches the operation. `dsize`, `dfoff`
 * and `dboff` are added to size and offsets meanwhile; `flags` fixes some of them. */
static void changed(async_fn io, int reading, unsigned flags, long dsize, long dfoff, long dboff)
{
    hipStream_t s = fresh_stream(reading, flags);
    size_t size = SIZE;
    hoff_t foff = 0, boff = 0;
    ssize_t bytes = -77;
    hold(s);
    EXPECT_OK(io(fh, dev, &size, &foff, &boff, &bytes, s));
    usleep(2000);
    CHECK(bytes == -77); /* held */
    size_t run_size = (flags & HIPFILE_STREAM_FIXED_FILE_SIZE) ? size : (size_t)((long)size + dsize);
    hoff_t run_foff = (flags & HIPFILE_STREAM_FIXED_FILE_OFFSET) ? foff : foff + dfoff;
    hoff_t run_boff = (flags & HIPFILE_STREAM_FIXED_BUF_OFFSET) ? boff : boff + dboff;
    size = (size_t)((long)size + dsize);
    foff += dfoff;
    boff += dboff;
    release_gate();
    HIP_OK(hipStreamSynchronize(s));
    if (run_size > SIZE || (size_t)run_boff + run_size > SIZE) {
        CHECK(bytes == -hipFileInvalidValue);
        check_moved(reading, 0, 0, 0); /* nothing moved */
    } else {
        if (reading && (size_t)run_foff + run_size > SIZE) {
            run_size = SIZE - (size_t)run_foff; /* stops at the end of the file */
        }
        CHECK(bytes == (ssize_t)run_size);
        check_moved(reading, (size_t)run_foff, (size_t)run_boff, run_size);
    }
    drop_stream(s);
}

/* Read file [0, 64 KiB) into the buffer, copy it on the GPU to the buffer's second half, write
 * that to the file at 512 KiB; repeated with the next 64 KiB: each step needs the one before. */
static void gpu_dependency(hipStream_t s)
{
    file_fresh(SIZE);
    enum { STEPS = 4, PART = 64 * KIB };
    static size_t sizes[STEPS];
    static hoff_t reads[STEPS], writes[STEPS], zero, half = SIZE / 2;
    static ssize_t read_bytes[STEPS], written_bytes[STEPS];
    for (size_t i = 0; i < STEPS; i++) {
        sizes[i] = PART;
        reads[i] = (hoff_t)(i * PART);
        writes[i] = (hoff_t)(SIZE / 2 + i * PART);
        EXPECT_OK(hipFileReadAsync(fh, dev, &sizes[i], &reads[i], &zero, &read_bytes[i], s));
        HIP_OK(hipMemcpyAsync((char *)dev + SIZE / 2, dev, PART, hipMemcpyDeviceToDevice, s));
        EXPECT_OK(hipFileWriteAsync(fh, dev, &sizes[i], &writes[i], &half, &written_bytes[i], s));
    }
    HIP_OK(hipStreamSynchronize(s));
    full_pread(fd, got, SIZE, 0);
    for (size_t i = 0; i < STEPS; i++) {
        CHECK(read_bytes[i] == PART && written_bytes[i] == PART);
        CHECK(memcmp(got + SIZE / 2 + i * PART, file_mirror + i * PART, PART) == 0);
    }
}

/* A write past RLIMIT_FSIZE: the call succeeds, the result is -EFBIG. Only the soft limit is
 * lowered, and raised again afterwards (no fork: CUDA does not work in a forked child). */
static void file_size_limit(void)
{
    struct rlimit saved;
    CHECK(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    signal(SIGXFSZ, SIG_IGN);
    CHECK(ftruncate(fd, 0) == 0);
    struct rlimit limit = {SIZE / 2, saved.rlim_max};
    CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
    hipStream_t s = new_stream(0);
    size_t size = SIZE;
    hoff_t foff = SIZE / 2, boff = 0;
    ssize_t bytes = -77;
    EXPECT_OK(hipFileWriteAsync(fh, dev, &size, &foff, &boff, &bytes, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(setrlimit(RLIMIT_FSIZE, &saved) == 0);
    CHECK(bytes == -EFBIG);
    drop_stream(s);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    gpu_init();
    snprintf(path, sizeof path, "%s/async-%d", argv[1], (int)getpid());

    /* Stream calls need no open driver and do not open it; a stream-ordered call does. */
    registration();
    CHECK(hipFileUseCount() == 0);
    {
        size_t size = 4096;
        hoff_t off = 0;
        ssize_t bytes = 0;
        int x;
        EXPECT_ERR(hipFileReadAsync((hipFileHandle_t)0x1234, &x, &size, &off, &off, &bytes, NULL),
                   hipFileHandleNotRegistered);
        CHECK(hipFileUseCount() == 1);
        EXPECT_OK(hipFileDriverClose());
    }
    /* Upstream's DriverInit.hipFileReadAsync/WriteAsync: every argument null still opens the
     * driver (use count 1), then the arguments are refused. */
    EXPECT_ERR(hipFileReadAsync(NULL, NULL, NULL, NULL, NULL, NULL, NULL), hipFileInvalidValue);
    CHECK(hipFileUseCount() == 1);
    EXPECT_OK(hipFileDriverClose());
    EXPECT_ERR(hipFileWriteAsync(NULL, NULL, NULL, NULL, NULL, NULL, NULL), hipFileInvalidValue);
    CHECK(hipFileUseCount() == 1);
    EXPECT_OK(hipFileDriverClose());

    EXPECT_OK(hipFileDriverOpen());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(unlink(path) == 0);
    fh = register_fd(fd);
    HIP_OK(hipMalloc(&dev, SIZE));
    EXPECT_OK(hipFileBufRegister(dev, SIZE, 0));

    async_fn fns[2] = {hipFileReadAsync, hipFileWriteAsync};
    for (int f = 0; f < 2; f++) {
        int reading = f == 0;
        invalid_arguments(fns[f]);
        for (unsigned flags = 0; flags < 8; flags++) {
            one(fns[f], reading, flags, SIZE, 0, 0);
            one(fns[f], reading, flags, SIZE - 1, 0, 0);
            one(fns[f], reading, flags, SIZE - 1, 1, 0);
            one(fns[f], reading, flags, SIZE - 1, 0, 1);
            one(fns[f], reading, flags, SIZE - 8 * KIB, 4 * KIB, 4 * KIB);
            zero_size(fns[f], flags);
            in_sequence(fns[f], reading, flags);
        }
        /* Unfixed: what the operation finds when it runs. */
        changed(fns[f], reading, 0, -4 * KIB, 0, 0);       /* shrunk: valid */
        changed(fns[f], reading, 0, +4 * KIB, 0, 0);       /* grown: -hipFileInvalidValue */
        changed(fns[f], reading, 0, 0, 0, +4 * KIB);       /* past the buffer: invalid */
        changed(fns[f], reading, 0, -4 * KIB, 4 * KIB, 0); /* size and file offset */
        changed(fns[f], reading, 0, -4 * KIB, 0, 4 * KIB); /* size and buffer offset */
        changed(fns[f], reading, 0, -4 * KIB, 4 * KIB, 4 * KIB);
        /* FIXED values are the ones given at submission, whatever happens after. */
        for (unsigned flags = 1; flags < 8; flags++) {
            changed(fns[f], reading, flags, -4 * KIB, 4 * KIB, 4 * KIB);
        }
        changed(fns[f], reading, HIPFILE_STREAM_FIXED_FILE_SIZE, +4 * KIB, 0, 0); /* fixed: fine */
    }
    past_end_of_file();
    hipStream_t s = new_stream(0);
    gpu_dependency(s);
    drop_stream(s);
    gpu_dependency(NULL); /* the null stream, not registered */
    file_size_limit();

    EXPECT_OK(hipFileBufDeregister(dev));
    hipFileHandleDeregister(fh);
    HIP_OK(hipFree(dev));
    close(fd);
    EXPECT_OK(hipFileDriverClose());
    printf("ok\n");
    return 0;
}
