/* errors FILE: every error path of the C API, in the order a process meets them: before the
 * driver opens, while it is open, and after it closed again. FILE holds 64 KiB whose byte i is
 * (i * 7 + 3) & 0xff. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <unistd.h>

#include "common.h"

#define FILE_LEN (64 * 1024)
#define BUF_LEN (64 * 1024)

static hipFileDescr_t fd_descr(int fd)
{
    hipFileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = hipFileHandleTypeOpaqueFD;
    descr.handle.fd = fd;
    return descr;
}

/* A hipFileRead/Write result that must be -1 with this errno. */
#define EXPECT_ERRNO(call, expected_errno)                                              \
    do {                                                                                \
        errno = 0;                                                                      \
        ssize_t r_ = (call);                                                            \
        if (r_ != -1 || errno != (expected_errno)) {                                    \
            fprintf(stderr, "%s:%d: %s gave %zd errno %d, expected -1 errno %d\n",      \
                    __FILE__, __LINE__, #call, r_, errno, (expected_errno));             \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

#define EXPECT_SSIZE(call, expected)                                                    \
    do {                                                                                \
        ssize_t r_ = (call);                                                            \
        if (r_ != (ssize_t)(expected)) {                                                \
            fprintf(stderr, "%s:%d: %s gave %zd, expected %zd\n", __FILE__, __LINE__,   \
                    #call, r_, (ssize_t)(expected));                                    \
            exit(1);                                                                    \
        }                                                                               \
    } while (0)

static void strings_and_version(void)
{
    unsigned major = 99, minor = 99, patch = 99;
    EXPECT_OK(hipFileGetVersion(&major, &minor, &patch));
    CHECK(major == HIPFILE_VERSION_MAJOR && minor == HIPFILE_VERSION_MINOR &&
          patch == HIPFILE_VERSION_PATCH);
    EXPECT_OK(hipFileGetVersion(NULL, NULL, NULL));

    CHECK(strcmp(hipFileGetOpErrorString(hipFileSuccess), "hipFile success") == 0);
    CHECK(strcmp(hipFileGetOpErrorString(hipFileInvalidValue),
                 "One or more arguments have an invalid value") == 0);
    CHECK(strcmp(HIPFILE_ERRSTR(-hipFileInvalidValue), HIPFILE_ERRSTR(hipFileInvalidValue)) == 0);
    /* Values outside the enum are taken as ints and answered, never trusted. */
    const char *unknown = "Unknown hipFile error";
    CHECK(strcmp(hipFileGetOpErrorString((hipFileOpError_t)5021), unknown) == 0);
    CHECK(strcmp(hipFileGetOpErrorString((hipFileOpError_t)123456), unknown) == 0);
    CHECK(strcmp(hipFileGetOpErrorString((hipFileOpError_t)-7), unknown) == 0);
    CHECK(IS_HIPFILE_ERR(-hipFileHandleNotRegistered));
    CHECK(!IS_HIPFILE_ERR(-1));
    hipFileError_t e = {hipFileHipDriverError, hipErrorOutOfMemory};
    CHECK(IS_HIP_DRV_ERR(e) && HIP_DRV_ERR(e) == hipErrorOutOfMemory);
}

static void while_closed(int fd, void *dev)
{
    CHECK(hipFileUseCount() == 0);
    EXPECT_ERR(hipFileDriverClose(), hipFileDriverNotInitialized);
    /* I/O on a closed driver is -1/EINVAL, as cuFile. */
    EXPECT_ERRNO(hipFileRead((hipFileHandle_t)0xdeadbeef, dev, 4096, 0, 0), EINVAL);
    EXPECT_ERRNO(hipFileWrite((hipFileHandle_t)0xdeadbeef, dev, 4096, 0, 0), EINVAL);
    EXPECT_ERR(hipFileBufDeregister(dev), hipFileDriverClosing);
    hipFileHandleDeregister((hipFileHandle_t)0xdeadbeef);
    hipFileHandleDeregister(NULL);

    /* Null arguments to HandleRegister are refused without opening the driver. */
    hipFileDescr_t descr = fd_descr(fd);
    hipFileHandle_t fh = NULL;
    EXPECT_ERR(hipFileHandleRegister(NULL, &descr), hipFileInvalidValue);
    EXPECT_ERR(hipFileHandleRegister(&fh, NULL), hipFileInvalidValue);
    /* So are handle types outside the enum, and the types Linux cannot serve. */
    int bad_types[] = {0, 4, 42, -1};
    for (size_t i = 0; i < sizeof bad_types / sizeof bad_types[0]; i++) {
        descr.type = (hipFileFileHandleType_t)bad_types[i];
        EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileInvalidValue);
    }
    descr.type = hipFileHandleTypeOpaqueWin32;
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileIONotSupported);
    descr.type = hipFileHandleTypeUserspaceFS;
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileIONotSupported);
    CHECK(fh == NULL);
    CHECK(hipFileUseCount() == 0);

    /* BufRegister(NULL) opens the driver, then refuses (as upstream). */
    EXPECT_ERR(hipFileBufRegister(NULL, 4096, 0), hipFileInvalidValue);
    CHECK(hipFileUseCount() == 1);
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 0);
}

static void registration(int fd, int dir_fd, hipFileHandle_t *out)
{
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_OK(hipFileDriverOpen());
    CHECK(hipFileUseCount() == 2);
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 1);

    hipFileHandle_t fh = NULL;
    hipFileDescr_t descr = fd_descr(-1);
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileInvalidValue);
    int closed = dup(fd);
    CHECK(closed >= 0 && close(closed) == 0);
    descr = fd_descr(closed);
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileInvalidValue);
    descr = fd_descr(dir_fd);
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileInvalidFileType);
    CHECK(fh == NULL);

    descr = fd_descr(fd);
    EXPECT_OK(hipFileHandleRegister(&fh, &descr));
    CHECK(fh != NULL);
    hipFileHandle_t again = NULL;
    EXPECT_ERR(hipFileHandleRegister(&again, &descr), hipFileHandleAlreadyRegistered);
    CHECK(hipFileUseCount() == 1);
    *out = fh;
}

static void buffers(void *dev)
{
    EXPECT_ERR(hipFileBufRegister(dev, BUF_LEN + 1, 0), hipFileHipPointerRangeError);
    EXPECT_ERR(hipFileBufRegister(dev, 0, 0), hipFileInvalidValue);
    char *host = malloc(4096);
    CHECK(host != NULL);
    EXPECT_ERR(hipFileBufRegister(host, 4096, 0), hipFileHipMemoryTypeInvalid);
    void *pinned = NULL;
    HIP_OK(hipHostMalloc(&pinned, 4096, 0));
    EXPECT_ERR(hipFileBufRegister(pinned, 4096, 0), hipFileHipMemoryTypeInvalid);
    HIP_OK(hipHostFree(pinned));
    free(host);

    EXPECT_OK(hipFileBufRegister(dev, BUF_LEN, 0));
    EXPECT_ERR(hipFileBufRegister(dev, BUF_LEN, 0), hipFileMemoryAlreadyRegistered);
    EXPECT_ERR(hipFileBufDeregister((char *)dev + 4096), hipFileMemoryNotRegistered);
    EXPECT_ERR(hipFileBufDeregister(NULL), hipFileMemoryNotRegistered);
}

static void check_device(const void *dev, size_t len, hoff_t file_offset)
{
    unsigned char *host = malloc(len);
    CHECK(host != NULL);
    HIP_OK(hipMemcpy(host, dev, len, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++) {
        CHECK(host[i] == (unsigned char)(((size_t)file_offset + i) * 7 + 3));
    }
    free(host);
}

static void io(hipFileHandle_t fh, void *dev)
{
    /* Garbage and null handles. */
    EXPECT_SSIZE(hipFileRead((hipFileHandle_t)0xdeadbeef, dev, 4096, 0, 0), -hipFileHandleNotRegistered);
    EXPECT_SSIZE(hipFileRead(NULL, dev, 4096, 0, 0), -hipFileHandleNotRegistered);
    EXPECT_SSIZE(hipFileWrite((hipFileHandle_t)1, dev, 4096, 0, 0), -hipFileHandleNotRegistered);

    /* Buffer offsets and sizes out of range. */
    EXPECT_SSIZE(hipFileRead(fh, dev, 4096, 0, BUF_LEN), -hipFileInvalidValue);
    EXPECT_SSIZE(hipFileRead(fh, dev, 4097, 0, BUF_LEN - 4096), -hipFileInvalidValue);
    EXPECT_SSIZE(hipFileRead(fh, dev, BUF_LEN + 1, 0, 0), -hipFileInvalidValue);
    /* Negative offsets are EINVAL (upstream since 0.4.0). */
    EXPECT_ERRNO(hipFileRead(fh, dev, 4096, -1, 0), EINVAL);
    EXPECT_ERRNO(hipFileRead(fh, dev, 4096, 0, -4096), EINVAL);
    /* Memory that is not device memory, and a null buffer. */
    char host[4096];
    EXPECT_SSIZE(hipFileRead(fh, host, sizeof host, 0, 0), -hipFileHipMemoryTypeInvalid);
    EXPECT_SSIZE(hipFileRead(fh, NULL, 4096, 0, 0), -hipFileInvalidValue);

    /* What does work: reads at an offset, into a registered buffer and into a pointer inside
     * it (an unregistered buffer whose length is the rest of the allocation). */
    EXPECT_SSIZE(hipFileRead(fh, dev, 8192, 4096, 512), 8192);
    check_device((char *)dev + 512, 8192, 4096);
    char *inner = (char *)dev + 4096;
    EXPECT_SSIZE(hipFileRead(fh, inner, BUF_LEN - 4096, 0, 0), BUF_LEN - 4096);
    check_device(inner, BUF_LEN - 4096, 0);
    EXPECT_SSIZE(hipFileRead(fh, inner, BUF_LEN - 4096 + 1, 0, 0), -hipFileInvalidValue);
    /* End of file: short, then zero; zero-size I/O. */
    EXPECT_SSIZE(hipFileRead(fh, dev, 4096, FILE_LEN - 1000, 0), 1000);
    EXPECT_SSIZE(hipFileRead(fh, dev, 4096, FILE_LEN, 0), 0);
    EXPECT_SSIZE(hipFileRead(fh, dev, 0, 0, 0), 0);
    /* Writing through a read-only descriptor is the OS's EBADF. */
    EXPECT_ERRNO(hipFileWrite(fh, dev, 4096, 0, 0), EBADF);
}

static void after_close(hipFileHandle_t fh, void *dev)
{
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 0);
    EXPECT_ERRNO(hipFileRead(fh, dev, 4096, 0, 0), EINVAL);
    /* Closing to zero dropped every registration. */
    EXPECT_OK(hipFileDriverOpen());
    EXPECT_SSIZE(hipFileRead(fh, dev, 4096, 0, 0), -hipFileHandleNotRegistered);
    EXPECT_ERR(hipFileBufDeregister(dev), hipFileMemoryNotRegistered);
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 0);
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    int fd = open(argv[1], O_RDONLY);
    int dir_fd = open(".", O_RDONLY);
    CHECK(fd >= 0 && dir_fd >= 0);
    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, BUF_LEN));

    strings_and_version();
    while_closed(fd, dev);
    hipFileHandle_t fh = NULL;
    registration(fd, dir_fd, &fh);
    buffers(dev);
    io(fh, dev);
    after_close(fh, dev);

    HIP_OK(hipFree(dev));
    CHECK(close(fd) == 0 && close(dir_fd) == 0);
    printf("all error paths behave\n");
    return 0;
}
