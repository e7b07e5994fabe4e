/* faults PATH read|write aligned|unaligned EXPECT [copyfail=N] [fsize]: one call of about
 * 12 MiB under the fault the preloaded faultfs layer (FAULTFS) or the mock GPU injects, then
 * the same call again without it. PATH must contain "faulty".
 *
 * EXPECT is "ok" (the call moves every byte), "errno=N" (-1 with errno N) or "ret=N" (exactly
 * N). Whatever the outcome: no device byte outside the requested range changes, no file byte
 * outside it changes, a call that reports success moved exactly its bytes, and the next call
 * works. "fsize" sets RLIMIT_FSIZE half-way through the range (EFBIG), with the file ending
 * where the range starts. Prints "ok: ..." on success. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define MIB (1 << 20)
#define GUARD 8192
#define CANARY 0xA5
#define FILE_CANARY 0x5A

void hipfileMockFailCopy(uint64_t nth, int error);

static void (*faultfs_set)(int);
static unsigned long (*faultfs_injected)(void);

/* Whether `n` (with errno) is what EXPECT says. */
static int as_expected(const char *expect, ssize_t n, size_t len, int err)
{
    if (strcmp(expect, "ok") == 0) {
        return n == (ssize_t)len;
    }
    if (strncmp(expect, "errno=", 6) == 0) {
        return n == -1 && err == atoi(expect + 6);
    }
    if (strncmp(expect, "ret=", 4) == 0) {
        return n == atol(expect + 4);
    }
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 5 && strstr(argv[1], "faulty") != NULL);
    const char *path = argv[1], *expect = argv[4];
    int write_mode = strcmp(argv[2], "write") == 0, aligned = strcmp(argv[3], "aligned") == 0;
    unsigned long long copyfail = 0;
    int fsize = 0;
    for (int i = 5; i < argc; i++) {
        if (strncmp(argv[i], "copyfail=", 9) == 0) {
            copyfail = strtoull(argv[i] + 9, NULL, 10);
        } else if (strcmp(argv[i], "fsize") == 0) {
            fsize = 1;
        }
    }
    faultfs_set = (void (*)(int))dlsym(RTLD_DEFAULT, "faultfs_set");
    faultfs_injected = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "faultfs_injected");
    CHECK(faultfs_set != NULL && faultfs_injected != NULL); /* run with LD_PRELOAD=libfaultfs.so */
    signal(SIGXFSZ, SIG_IGN);

    const unsigned long long off = aligned ? 2 * MIB : MIB + 123;
    const size_t len = aligned ? 12 * MIB : 12 * MIB + 77, file_len = 20 * MIB;
    const size_t dev_len = len + 2 * GUARD;

    /* The file: data (reads) or the file canary (writes). */
    unsigned char *host = malloc(file_len), *check = malloc(file_len);
    CHECK(host != NULL && check != NULL);
    for (size_t i = 0; i < file_len; i++) {
        host[i] = write_mode ? FILE_CANARY : byte_at(i, 1);
    }
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    size_t initial_len = fsize ? off : file_len;
    full_pwrite(fd, host, initial_len, 0);
    CHECK(fsync(fd) == 0);
    CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0); /* cold: direct reads where aligned */

    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t fh = register_fd(fd);
    unsigned char *dev = NULL, *dev_host = malloc(dev_len);
    CHECK(dev_host != NULL);
    HIP_OK(hipMalloc((void **)&dev, dev_len));
    EXPECT_OK(hipFileBufRegister(dev, dev_len, 0));

    for (int attempt = 0; attempt < 2; attempt++) {
        /* Device: the canary around the range; for writes, the data to write inside it. */
        memset(dev_host, CANARY, dev_len);
        if (write_mode) {
            for (size_t i = 0; i < len; i++) {
                dev_host[GUARD + i] = byte_at(off + i, 2 + (unsigned)attempt);
            }
        }
        HIP_OK(hipMemcpy(dev, dev_host, dev_len, hipMemcpyHostToDevice));
        struct rlimit unlimited, limit;
        CHECK(getrlimit(RLIMIT_FSIZE, &unlimited) == 0);
        limit = unlimited;
        limit.rlim_cur = off + len / 2;
        int faulty = attempt == 0;
        if (faulty && fsize) {
            CHECK(setrlimit(RLIMIT_FSIZE, &limit) == 0);
        }
        if (faulty && copyfail) {
            hipfileMockFailCopy(copyfail, 999); /* hipErrorUnknown */
        }
        faultfs_set(faulty);
        errno = 0;
        ssize_t n = write_mode ? hipFileWrite(fh, dev, len, (hoff_t)off, GUARD)
                               : hipFileRead(fh, dev, len, (hoff_t)off, GUARD);
        int err = errno;
        faultfs_set(0);
        hipfileMockFailCopy(0, 0);
        CHECK(setrlimit(RLIMIT_FSIZE, &unlimited) == 0);
        const char *want = faulty ? expect : "ok";
        if (!as_expected(want, n, len, err)) {
            fprintf(stderr, "attempt %d: %s gave %zd (errno %d), expected %s\n", attempt, write_mode ? "write" : "read",
                    n, err, want);
            return 1;
        }

        /* Device memory outside the range never changes; inside, a success holds the file. */
        HIP_OK(hipMemcpy(dev_host, dev, dev_len, hipMemcpyDeviceToHost));
        for (size_t i = 0; i < dev_len; i++) {
            int inside = i >= GUARD && i < GUARD + len;
            if (!inside) {
                CHECK(dev_host[i] == CANARY);
            } else if (!write_mode && n == (ssize_t)len && dev_host[i] != byte_at(off + i - GUARD, 1)) {
                fprintf(stderr, "device byte %zu wrong after a successful read\n", i);
                return 1;
            }
        }
        /* The file outside the range never changes; inside, a success holds the data. */
        struct stat st;
        CHECK(fstat(fd, &st) == 0);
        size_t now_len = (size_t)st.st_size;
        CHECK(now_len <= (fsize ? off + len : file_len));
        full_pread(fd, check, now_len, 0);
        for (size_t i = 0; i < now_len; i++) {
            int inside = i >= off && i < off + len;
            if (!inside) {
                CHECK(check[i] == host[i]);
            } else if (write_mode && n == (ssize_t)len && check[i] != byte_at(i, 2 + (unsigned)attempt)) {
                fprintf(stderr, "file byte %zu wrong after a successful write\n", i);
                return 1;
            }
        }
        if (write_mode && n == (ssize_t)len) {
            CHECK(now_len >= off + len);
        }
    }
    unsigned long injected = faultfs_injected();
    EXPECT_OK(hipFileBufDeregister(dev));
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());
    HIP_OK(hipFree(dev));
    CHECK(close(fd) == 0);
    free(host);
    free(check);
    free(dev_host);
    printf("ok: %s %s gave %s with %lu faults injected, then worked\n", argv[3], argv[2], expect, injected);
    return 0;
}
