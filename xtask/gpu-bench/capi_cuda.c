/* capi_cuda FILE: the C ABI on an NVIDIA GPU. The program puts CUDA's runtime in the process
 * (as a HIP program on NVIDIA has it), so libhipfile follows that runtime; then it registers a
 * file and real device memory, reads the file into the GPU, checks it there, writes it back
 * to FILE.out and checks that too. Built on the development machine (HIP headers only for
 * hipfile.h's types); CUDA functions are looked up at run time. */
#include <hipfile.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c) do { if (!(c)) { fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #c); return 1; } } while (0)

typedef int (*malloc_t)(void **, size_t);
typedef int (*memcpy_t)(void *, const void *, size_t, int);

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    void *cudart = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL);
    CHECK(cudart != NULL);
    malloc_t cuda_malloc = (malloc_t)dlsym(cudart, "cudaMalloc");
    memcpy_t cuda_memcpy = (memcpy_t)dlsym(cudart, "cudaMemcpy");
    CHECK(cuda_malloc && cuda_memcpy);

    const size_t len = 64u << 20;
    unsigned char *host = malloc(len), *back = malloc(len);
    CHECK(host && back);
    for (size_t i = 0; i < len; i++) host[i] = (unsigned char)(i * 2654435761u >> 13);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, host, len) == (ssize_t)len);

    void *dev = NULL;
    CHECK(cuda_malloc(&dev, len) == 0);
    hipFileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = hipFileHandleTypeOpaqueFD;
    descr.handle.fd = fd;
    hipFileHandle_t fh;
    hipFileError_t e = hipFileHandleRegister(&fh, &descr);
    CHECK(e.err == hipFileSuccess);
    e = hipFileBufRegister(dev, len, 0);
    CHECK(e.err == hipFileSuccess);

    /* Unaligned on purpose: 7 bytes in, into a buffer offset of 3. */
    ssize_t n = hipFileRead(fh, dev, len - 7, 7, 3);
    CHECK(n == (ssize_t)(len - 7));
    CHECK(cuda_memcpy(back, (char *)dev + 3, len - 7, 2 /* DeviceToHost */) == 0);
    CHECK(memcmp(back, host + 7, len - 7) == 0);

    n = hipFileRead(fh, dev, len, 0, 0);
    CHECK(n == (ssize_t)len);
    CHECK(ftruncate(fd, 0) == 0);
    n = hipFileWrite(fh, dev, len, 0, 0);
    CHECK(n == (ssize_t)len);
    CHECK(pread(fd, back, len, 0) == (ssize_t)len && memcmp(back, host, len) == 0);

    /* Pageable host memory is not device memory. */
    CHECK(hipFileRead(fh, host, 4096, 0, 0) == -hipFileHipMemoryTypeInvalid);

    CHECK(hipFileBufDeregister(dev).err == hipFileSuccess);
    hipFileHandleDeregister(fh);
    CHECK(hipFileDriverClose().err == hipFileSuccess && hipFileUseCount() == 0);
    printf("C ABI over CUDA: read, checked on the GPU, written back: ok\n");
    return 0;
}
