/* host DIR: host memory as the buffer (hipFileParamPropertiesAllowSystemMemory). Refused by
 * default, as cuFile does; once the parameter allows it, hipFileRead/hipFileWrite, batches and
 * stream-ordered operations move bytes straight between the file and pinned (hipHostMalloc) or
 * pageable (malloc) memory, registered or not, aligned (O_DIRECT) or not; past the end of the
 * file a read returns what is there. After the close the default holds again. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common.h"

#define LEN (1 << 20)

static int fd;
static hipFileHandle_t fh;
static unsigned char want[LEN];

static void fill_file(unsigned seed)
{
    for (size_t i = 0; i < LEN; i++) {
        want[i] = byte_at(i, seed);
    }
    full_pwrite(fd, want, LEN, 0);
    CHECK(ftruncate(fd, LEN) == 0);
}

/* Reads [off, off + len) of the file into buf at boff, and writes it back at off + LEN/2
 * from there; both must match. */
static void round_trip(unsigned char *buf, size_t len, off_t off, off_t boff, unsigned seed)
{
    fill_file(seed);
    memset(buf, 0, (size_t)boff + len);
    CHECK(hipFileRead(fh, buf, len, off, boff) == (ssize_t)len);
    CHECK(memcmp(buf + boff, want + off, len) == 0);
    for (size_t i = 0; i < len; i++) {
        buf[boff + (off_t)i] ^= 0x5a;
    }
    CHECK(hipFileWrite(fh, buf, len, off, boff) == (ssize_t)len);
    static unsigned char got[LEN];
    full_pread(fd, got, len, off);
    CHECK(memcmp(got, buf + boff, len) == 0);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    gpu_init();
    char path[4096];
    snprintf(path, sizeof path, "%s/host-%d", argv[1], (int)getpid());
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(unlink(path) == 0);

    unsigned char *pageable = malloc(2 * LEN);
    unsigned char *aligned = NULL;
    CHECK(posix_memalign((void **)&aligned, 4096, LEN) == 0);
    void *pinned = NULL;
    HIP_OK(hipHostMalloc(&pinned, LEN, 0));

    /* The default: refused, as before. */
    bool allowed = true;
    EXPECT_OK(hipFileGetParameterBool(hipFileParamPropertiesAllowSystemMemory, &allowed));
    CHECK(!allowed);
    fh = register_fd(fd);
    EXPECT_ERR(hipFileBufRegister(pageable, LEN, 0), hipFileHipMemoryTypeInvalid);
    EXPECT_ERR(hipFileBufRegister(pinned, LEN, 0), hipFileHipMemoryTypeInvalid);
    CHECK(hipFileRead(fh, pageable, 4096, 0, 0) == -hipFileHipMemoryTypeInvalid);
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());

    EXPECT_OK(hipFileSetParameterBool(hipFileParamPropertiesAllowSystemMemory, true));
    EXPECT_OK(hipFileDriverOpen());
    fh = register_fd(fd);
    /* Unregistered pageable and pinned memory, aligned and not. */
    round_trip(pageable, LEN, 0, 0, 1);
    round_trip(pageable, LEN - 4097, 4097, 3, 2);
    round_trip(aligned, LEN, 0, 0, 3); /* aligned: the O_DIRECT descriptor */
    round_trip(pinned, LEN - 8192, 4096, 4096, 4);
    /* Registered. */
    EXPECT_OK(hipFileBufRegister(pageable, 2 * LEN, 0));
    EXPECT_OK(hipFileBufRegister(pinned, LEN, 0));
    round_trip(pageable, LEN, 0, LEN, 5);
    round_trip(pinned, LEN / 2, 12345, 100, 6);
    CHECK(hipFileRead(fh, pinned, LEN, 1, 0) == LEN - 1); /* past the end: what is there */
    CHECK(hipFileRead(fh, pinned, LEN, 0, 1) == -hipFileInvalidValue); /* beyond the registration */

    /* A batch and a stream-ordered read into host memory. */
    fill_file(7);
    memset(pageable, 0, 2 * LEN);
    hipFileIOEvents_t ev[4];
    unsigned nr = batch_read_pieces(fh, pageable, LEN / 4, 4, ev);
    CHECK(nr == 4);
    for (unsigned i = 0; i < nr; i++) {
        CHECK(ev[i].status == hipFileComplete && ev[i].ret == LEN / 4);
    }
    CHECK(memcmp(pageable, want, LEN) == 0);
    memset(pinned, 0, LEN);
    hipStream_t s;
    HIP_OK(hipStreamCreate(&s));
    size_t size = LEN;
    hoff_t zero = 0;
    ssize_t bytes = -1;
    EXPECT_OK(hipFileReadAsync(fh, pinned, &size, &zero, &zero, &bytes, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(bytes == LEN && memcmp(pinned, want, LEN) == 0);
    HIP_OK(hipStreamDestroy(s));

    EXPECT_OK(hipFileBufDeregister(pageable));
    EXPECT_OK(hipFileBufDeregister(pinned));
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());

    /* The close restored the default. */
    EXPECT_OK(hipFileGetParameterBool(hipFileParamPropertiesAllowSystemMemory, &allowed));
    CHECK(!allowed);
    fh = register_fd(fd);
    CHECK(hipFileRead(fh, pageable, 4096, 0, 0) == -hipFileHipMemoryTypeInvalid);
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());

    HIP_OK(hipHostFree(pinned));
    free(aligned);
    free(pageable);
    close(fd);
    printf("ok\n");
    return 0;
}
