/* logging DIR FILE: the logging parameters steer the library's messages. With the level set to
 * INFO and the log directory to DIR, what the library decides goes to a hipfile_<pid>.log there
 * (created for its owner only): a p2p path that is not available at the open, or one that
 * declines an unaligned read of FILE, which the bounce path then serves. Nothing goes to stderr
 * (the test runner checks). */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "common.h"

int main(int argc, char **argv)
{
    CHECK(argc == 3);
    gpu_init();
    EXPECT_OK(hipFileSetParameterString(hipFileParamLoggingLevel, "INFO"));
    EXPECT_OK(hipFileSetParameterString(hipFileParamLogDir, argv[1]));
    EXPECT_OK(hipFileDriverOpen());
    int fd = open(argv[2], O_RDONLY);
    CHECK(fd >= 0);
    hipFileHandle_t fh = register_fd(fd);
    void *dev;
    HIP_OK(hipMalloc(&dev, 1 << 20));
    CHECK(hipFileRead(fh, dev, 4096, 1, 0) == 4096); /* unaligned: the bounce path serves it */
    hipFileHandleDeregister(fh);
    HIP_OK(hipFree(dev));
    close(fd);
    EXPECT_OK(hipFileDriverClose());

    char path[4096];
    snprintf(path, sizeof path, "%s/hipfile_%d.log", argv[1], (int)getpid());
    struct stat st;
    CHECK(lstat(path, &st) == 0);
    CHECK(S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    CHECK(st.st_size > 0);
    printf("ok\n");
    return 0;
}
