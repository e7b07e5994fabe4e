/* copy SRC DST: copies a file through GPU memory (file -> GPU -> file) in 1 MiB chunks placed
 * at an offset inside a registered buffer, checks each chunk in GPU memory against the source,
 * then checks DST against SRC byte for byte. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

#define CHUNK (1 << 20)
#define BUF_OFFSET 4096

static unsigned char *read_whole(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    CHECK(fseek(f, 0, SEEK_END) == 0);
    long n = ftell(f);
    CHECK(n >= 0);
    rewind(f);
    unsigned char *data = malloc((size_t)n + 1);
    CHECK(data != NULL);
    CHECK(fread(data, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return data;
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    int src = open(argv[1], O_RDONLY);
    int dst = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(src >= 0 && dst >= 0);

    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t in = register_fd(src);
    hipFileHandle_t out = register_fd(dst);

    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, BUF_OFFSET + CHUNK));
    EXPECT_OK(hipFileBufRegister(dev, BUF_OFFSET + CHUNK, 0));

    unsigned char *expected = malloc(CHUNK);
    unsigned char *on_gpu = malloc(CHUNK);
    CHECK(expected != NULL && on_gpu != NULL);

    hoff_t offset = 0;
    for (;;) {
        ssize_t n = hipFileRead(in, dev, CHUNK, offset, BUF_OFFSET);
        if (n < 0) {
            fprintf(stderr, "hipFileRead at %lld: %zd (%s)\n", (long long)offset, n,
                    n == -1 ? strerror(errno) : HIPFILE_ERRSTR(n));
            return 1;
        }
        if (n == 0) {
            break;
        }
        CHECK(pread(src, expected, (size_t)n, offset) == n);
        HIP_OK(hipMemcpy(on_gpu, (char *)dev + BUF_OFFSET, (size_t)n, hipMemcpyDeviceToHost));
        CHECK(memcmp(expected, on_gpu, (size_t)n) == 0);

        ssize_t m = hipFileWrite(out, dev, (size_t)n, offset, BUF_OFFSET);
        if (m != n) {
            fprintf(stderr, "hipFileWrite at %lld: %zd of %zd\n", (long long)offset, m, n);
            return 1;
        }
        offset += n;
    }

    EXPECT_OK(hipFileBufDeregister(dev));
    hipFileHandleDeregister(in);
    hipFileHandleDeregister(out);
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 0);
    HIP_OK(hipFree(dev));
    CHECK(close(src) == 0 && close(dst) == 0);

    size_t src_len, dst_len;
    unsigned char *a = read_whole(argv[1], &src_len);
    unsigned char *b = read_whole(argv[2], &dst_len);
    CHECK(src_len == dst_len && (hoff_t)src_len == offset);
    CHECK(memcmp(a, b, src_len) == 0);
    printf("copied %zu bytes\n", src_len);
    free(a);
    free(b);
    free(expected);
    free(on_gpu);
    return 0;
}
