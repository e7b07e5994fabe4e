/* managed DIR: managed memory (hipMallocManaged) as the buffer, whichever HIP ABI the runtime
 * answers in (HIP 5 reports it as device memory with isManaged, HIP 6 as managed; both know its
 * allocation): hipFileWrite and hipFileRead move its bytes through the bounce path (the p2p path
 * declines it), a pointer inside it works on the rest of the allocation, and a request past its
 * end is refused like one past device memory; registering it is hipFileHipMemoryTypeInvalid, as
 * upstream (docs/compat.md, "Managed memory"). IOR's hipFile backend with managed buffers. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>

#include "common.h"

#define LEN (1 << 20)

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    char path[4096];
    snprintf(path, sizeof path, "%s/managed-%d", argv[1], (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0);
    CHECK(unlink(path) == 0);
    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t fh = register_fd(fd);

    unsigned char *src = NULL, *dst = NULL;
    HIP_OK(hipMallocManaged((void **)&src, LEN, hipMemAttachGlobal));
    HIP_OK(hipMallocManaged((void **)&dst, LEN, hipMemAttachGlobal));
    for (size_t i = 0; i < LEN; i++) {
        src[i] = byte_at(i, 3);
    }
    memset(dst, 0, LEN);
    ssize_t wrote = hipFileWrite(fh, src, LEN, 0, 0);
    ssize_t read = hipFileRead(fh, dst, LEN, 0, 0);
    if (wrote != LEN || read != LEN) {
        fprintf(stderr, "hipFileWrite gave %zd, hipFileRead %zd\n", wrote, read);
    }
    CHECK(wrote == LEN && read == LEN);
    CHECK(memcmp(src, dst, LEN) == 0);
    static unsigned char file[LEN];
    full_pread(fd, file, LEN, 0);
    CHECK(memcmp(file, src, LEN) == 0);
    /* A pointer inside it, and a request past its end. */
    memset(dst, 0, LEN);
    CHECK(hipFileRead(fh, dst + 4096, LEN - 4096, 4096, 0) == LEN - 4096);
    CHECK(memcmp(dst + 4096, src + 4096, LEN - 4096) == 0);
    CHECK(hipFileRead(fh, dst + 4096, LEN, 0, 0) == -hipFileInvalidValue);
    EXPECT_ERR(hipFileBufRegister(src, LEN, 0), hipFileHipMemoryTypeInvalid);
    HIP_OK(hipFree(src));
    HIP_OK(hipFree(dst));
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());
    close(fd);
    printf("ok\n");
    return 0;
}
