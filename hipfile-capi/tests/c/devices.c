/* devices IN OUT: memory of every device, whatever device is current. With two devices (the mock
 * HIP runtime with HIPFILE_MOCK_DEVICES=2, or a machine with two GPUs), for each pair (current,
 * other): buffers on `other` are registered and read into while `current` is current, an
 * unregistered allocation on `other` is read into and written from, the bytes are checked, and
 * the current device is still `current` after every call. IN must hold at least 2 MiB.
 * Built with -DTESTS_OVER_CUDA (`cargo xtask gpu-bench`), its HIP calls go to CUDA's runtime. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <unistd.h>

#include "common.h"

#define LEN (1 << 20)
#define OFFSET 8192

static int current(void)
{
    int d = -1;
    HIP_OK(hipGetDevice(&d));
    return d;
}

/* Device memory [dev, dev + LEN) equals IN's bytes at `offset`. */
static void check_device(int in, const void *dev, off_t offset)
{
    static unsigned char want[LEN], got[LEN];
    full_pread(in, want, LEN, offset);
    HIP_OK(hipMemcpy(got, dev, LEN, hipMemcpyDeviceToHost));
    CHECK(memcmp(want, got, LEN) == 0);
}

static void pair(int in, int out, hipFileHandle_t fin, hipFileHandle_t fout, int cur, int other)
{
    void *registered = NULL, *plain = NULL;
    HIP_OK(hipSetDevice(other));
    HIP_OK(hipMalloc(&registered, LEN));
    HIP_OK(hipMalloc(&plain, LEN));
    HIP_OK(hipSetDevice(cur));

    EXPECT_OK(hipFileBufRegister(registered, LEN, 0));
    CHECK(current() == cur);
    CHECK(hipFileRead(fin, registered, LEN, OFFSET, 0) == LEN);
    CHECK(current() == cur);
    check_device(in, registered, OFFSET);

    /* Unregistered: the runtime is asked where the memory lies on every call. */
    CHECK(hipFileRead(fin, plain, LEN, 3 * OFFSET, 0) == LEN);
    CHECK(current() == cur);
    check_device(in, plain, 3 * OFFSET);
    CHECK(hipFileWrite(fout, plain, LEN, (off_t)other * LEN, 0) == LEN);
    CHECK(current() == cur);
    static unsigned char want[LEN], got[LEN];
    full_pread(in, want, LEN, 3 * OFFSET);
    full_pread(out, got, LEN, (off_t)other * LEN);
    CHECK(memcmp(want, got, LEN) == 0);

    EXPECT_OK(hipFileBufDeregister(registered));
    CHECK(current() == cur);
    HIP_OK(hipFree(registered));
    HIP_OK(hipFree(plain));
}

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    gpu_init();
    int in = open(argv[1], O_RDONLY);
    int out = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(in >= 0 && out >= 0);
    int count = 0;
    HIP_OK(hipGetDeviceCount(&count));
    CHECK(count >= 2);

    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t fin = register_fd(in), fout = register_fd(out);
    for (int cur = 0; cur < 2; cur++) {
        HIP_OK(hipSetDevice(cur));
        pair(in, out, fin, fout, cur, 1 - cur);
        pair(in, out, fin, fout, cur, cur);
    }
    hipFileHandleDeregister(fin);
    hipFileHandleDeregister(fout);
    EXPECT_OK(hipFileDriverClose());
    close(in);
    close(out);
    printf("ok\n");
    return 0;
}
