/* hipcalls: the HIP calls programs around file I/O make besides hipFile's, over the mock HIP
 * runtime, with HIP's codes for each misuse: the device's description and attributes, device
 * memory the host cannot touch (managed memory it can), pointer attributes in HIP 5's ABI or
 * HIP 6's (HIPFILE_MOCK_HIP_ABI=6), the memset forms, the memcpy forms, memory
 * information and prefetching, stream queries, waits and priorities, and hipGetLastError's
 * per-thread rule. Prints "ok". */
#include "common.h"

#include <hip/hip_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXPECT_HIP(call, code) CHECK((call) == (code))

static void sleep_50ms(void *arg)
{
    (void)arg;
    usleep(50 * 1000);
}

static void *other_thread(void *arg)
{
    (void)arg;
    /* Another thread's error is not this one's. */
    CHECK(hipGetLastError() == hipSuccess);
    return NULL;
}

int main(void)
{
    enum { N = 1 << 20 };
    unsigned char *host = malloc(N);
    CHECK(host != NULL);
    void *dev = NULL, *dev2 = NULL;

    /* The device's description, and each attribute as the description has it. */
    hipDeviceProp_t prop;
    memset(&prop, 0xff, sizeof prop);
    HIP_OK(hipGetDeviceProperties(&prop, 0));
    CHECK(strcmp(prop.name, "hipfile mock GPU") == 0 && prop.totalGlobalMem == (size_t)64 << 30);
    CHECK(prop.warpSize == 64 && prop.major == 9 && prop.minor == 0 && prop.multiProcessorCount > 0);
    CHECK(strncmp(prop.gcnArchName, "gfx90a", 6) == 0 && prop.pageableMemoryAccessUsesHostPageTables == 0);
    char bus[32];
    HIP_OK(hipDeviceGetPCIBusId(bus, sizeof bus, 0));
    unsigned domain = 0, bus_id = 0, dev_id = 0;
    CHECK(sscanf(bus, "%x:%x:%x", &domain, &bus_id, &dev_id) == 3);
    CHECK(prop.pciDomainID == (int)domain && prop.pciBusID == (int)bus_id && prop.pciDeviceID == (int)dev_id);
    struct { hipDeviceAttribute_t attr; int expected; } attrs[] = {
        {hipDeviceAttributeWarpSize, prop.warpSize},
        {hipDeviceAttributeMaxThreadsPerBlock, prop.maxThreadsPerBlock},
        {hipDeviceAttributeMaxBlockDimZ, prop.maxThreadsDim[2]},
        {hipDeviceAttributeMaxGridDimY, prop.maxGridSize[1]},
        {hipDeviceAttributeComputeCapabilityMajor, prop.major},
        {hipDeviceAttributeComputeCapabilityMinor, prop.minor},
        {hipDeviceAttributeMultiprocessorCount, prop.multiProcessorCount},
        {hipDeviceAttributePciBusId, prop.pciBusID},
        {hipDeviceAttributePciDeviceId, prop.pciDeviceID},
        {hipDeviceAttributePciDomainID, prop.pciDomainID},
        {hipDeviceAttributeManagedMemory, prop.managedMemory},
        {hipDeviceAttributeCanMapHostMemory, prop.canMapHostMemory},
        {hipDeviceAttributeL2CacheSize, prop.l2CacheSize},
        {hipDeviceAttributeMaxSharedMemoryPerBlock, (int)prop.sharedMemPerBlock},
        {hipDeviceAttributeIsLargeBar, prop.isLargeBar},
        {hipDeviceAttributeGcnArch, prop.gcnArch},
    };
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
        int v = -12345;
        HIP_OK(hipDeviceGetAttribute(&v, attrs[i].attr, 0));
        CHECK(v == attrs[i].expected);
    }
    /* The same device as HIP 6's headers ask for it: hipGetDeviceProperties is
     * hipGetDevicePropertiesR0600 there, filling hipDeviceProp_tR0600 (1472 bytes; read here at
     * that layout's offsets: name 0, totalGlobalMem 288, warpSize 308, gcnArchName 1160). */
    extern hipError_t hipGetDevicePropertiesR0600(void *prop, int device);
    static unsigned char r0600[1472 + 64];
    memset(r0600, 0xee, sizeof r0600);
    HIP_OK(hipGetDevicePropertiesR0600(r0600, 0));
    size_t total_r0600;
    int warp_r0600;
    memcpy(&total_r0600, r0600 + 288, sizeof total_r0600);
    memcpy(&warp_r0600, r0600 + 308, sizeof warp_r0600);
    CHECK(strcmp((const char *)r0600, prop.name) == 0 && total_r0600 == prop.totalGlobalMem);
    CHECK(warp_r0600 == prop.warpSize && strcmp((const char *)r0600 + 1160, prop.gcnArchName) == 0);
    CHECK(r0600[1472] == 0xee); /* nothing written past the structure */
    EXPECT_HIP(hipGetDevicePropertiesR0600(r0600, 99), hipErrorInvalidDevice);
    EXPECT_HIP(hipGetDevicePropertiesR0600(NULL, 0), hipErrorInvalidValue);
    int unused = 0;
    EXPECT_HIP(hipGetDeviceProperties(&prop, 99), hipErrorInvalidDevice);
    EXPECT_HIP(hipGetDeviceProperties(&prop, -1), hipErrorInvalidDevice);
    EXPECT_HIP(hipGetDeviceProperties(NULL, 0), hipErrorInvalidValue);
    EXPECT_HIP(hipDeviceGetAttribute(&unused, hipDeviceAttributeWarpSize, 99), hipErrorInvalidDevice);
    EXPECT_HIP(hipDeviceGetAttribute(NULL, hipDeviceAttributeWarpSize, 0), hipErrorInvalidValue);
    EXPECT_HIP(hipDeviceGetAttribute(&unused, hipDeviceAttributeLuid, 0), hipErrorInvalidValue); /* not answered */
    EXPECT_HIP(hipDeviceGetAttribute(&unused, (hipDeviceAttribute_t)123456, 0), hipErrorInvalidValue);

    size_t free0 = 0, total = 0;
    HIP_OK(hipMemGetInfo(&free0, &total));
    CHECK(total == (size_t)64 << 30 && free0 <= total);
    HIP_OK(hipMalloc(&dev, N));
    HIP_OK(hipMalloc(&dev2, N));
    size_t free1 = 0;
    HIP_OK(hipMemGetInfo(&free1, &total));
    CHECK(free0 - free1 == 2 * (size_t)N);
    EXPECT_HIP(hipMemGetInfo(NULL, &total), hipErrorInvalidValue);

    /* The memset forms. */
    HIP_OK(hipMemsetD32(dev, 0x01020304, N / 4));
    HIP_OK(hipMemcpyDtoH(host, dev, N));
    for (size_t i = 0; i < N / 4; i++) {
        uint32_t v;
        memcpy(&v, host + 4 * i, 4);
        CHECK(v == 0x01020304u);
    }
    HIP_OK(hipMemsetD16(dev, 0xabcd, 8));
    HIP_OK(hipMemsetD8((char *)dev + 16, 0x5a, 4));
    HIP_OK(hipMemcpyDtoH(host, dev, 32));
    uint16_t h16;
    memcpy(&h16, host + 14, 2);
    CHECK(h16 == 0xabcd && host[16] == 0x5a && host[19] == 0x5a && host[20] == 0x04);
    EXPECT_HIP(hipMemsetD32(dev, 0, N / 4 + 1), hipErrorInvalidValue);            /* past the end */
    EXPECT_HIP(hipMemsetD8(host, 0, 16), hipErrorInvalidValue);                   /* host memory */
    EXPECT_HIP(hipMemsetD8(NULL, 0, 16), hipErrorInvalidValue);
    HIP_OK(hipMemsetD8(NULL, 0, 0));                                              /* nothing to do */

    hipStream_t s, t;
    HIP_OK(hipStreamCreate(&s));
    HIP_OK(hipStreamCreate(&t));
    HIP_OK(hipMemsetAsync(dev, 0x11, N, s));
    HIP_OK(hipMemsetD32Async(dev2, 7, N / 4, s));
    HIP_OK(hipMemsetD16Async(dev2, 9, 2, s));
    HIP_OK(hipMemsetD8Async(dev2, 3, 1, s));
    HIP_OK(hipStreamSynchronize(s));
    HIP_OK(hipMemcpyDtoH(host, dev, N));
    CHECK(host[0] == 0x11 && host[N - 1] == 0x11);

    /* The memcpy forms, in order on a stream. */
    for (size_t i = 0; i < N; i++) {
        host[i] = (unsigned char)(i * 7);
    }
    HIP_OK(hipMemcpyHtoD(dev, host, N));
    HIP_OK(hipMemcpyDtoD(dev2, dev, N));
    memset(host, 0, N);
    HIP_OK(hipMemcpyDtoH(host, dev2, N));
    CHECK(host[1] == 7 && host[N - 1] == (unsigned char)((N - 1) * 7));
    HIP_OK(hipMemcpyHtoDAsync(dev, host, N / 2, s));
    HIP_OK(hipMemcpyDtoDAsync(dev2, dev, N / 2, s));
    HIP_OK(hipMemcpyDtoHAsync(host + N / 2, dev2, N / 2, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(memcmp(host, host + N / 2, N / 2) == 0);
    EXPECT_HIP(hipMemcpyDtoD(dev2, host, 16), hipErrorInvalidValue);              /* host as device */
    EXPECT_HIP(hipMemcpyHtoD(dev, host, N + 1), hipErrorInvalidValue);            /* past the end */

    /* 2D copies: 4 rows of 100 bytes, pitches 128 on the device and 100 on the host. */
    for (size_t i = 0; i < 400; i++) {
        host[i] = (unsigned char)(i + 1);
    }
    HIP_OK(hipMemset(dev, 0, 512));
    HIP_OK(hipMemcpy2D(dev, 128, host, 100, 100, 4, hipMemcpyHostToDevice));
    HIP_OK(hipMemcpy2DAsync(host + 1000, 100, dev, 128, 100, 4, hipMemcpyDeviceToHost, s));
    HIP_OK(hipStreamSynchronize(s));
    CHECK(memcmp(host, host + 1000, 400) == 0);
    HIP_OK(hipMemcpyDtoH(host + 2000, dev, 512));
    CHECK(host[2000 + 128] == 101 && host[2000 + 100] == 0); /* the pitch's gap is untouched */
    EXPECT_HIP(hipMemcpy2D(dev, 64, host, 100, 100, 4, hipMemcpyHostToDevice), hipErrorInvalidPitchValue);
    EXPECT_HIP(hipMemcpy2D(dev, 128, host, 100, 100, 8193, hipMemcpyHostToDevice), hipErrorInvalidValue);
    EXPECT_HIP(hipMemcpy2D(dev, 128, host, 100, 100, 4, (hipMemcpyKind)77), hipErrorInvalidMemcpyDirection);

    /* Prefetching: a no-op on device memory, checked. */
    HIP_OK(hipMemPrefetchAsync(dev, N, 0, s));
    EXPECT_HIP(hipMemPrefetchAsync(dev, N + 1, 0, s), hipErrorInvalidValue);
    EXPECT_HIP(hipMemPrefetchAsync(host, 16, 0, s), hipErrorInvalidValue);
    EXPECT_HIP(hipMemPrefetchAsync(dev, N, 99, s), hipErrorInvalidDevice);

    /* Stream queries and waits. */
    HIP_OK(hipStreamQuery(s));
    HIP_OK(hipLaunchHostFunc(s, sleep_50ms, NULL));
    EXPECT_HIP(hipStreamQuery(s), hipErrorNotReady);
    hipEvent_t e;
    HIP_OK(hipEventCreate(&e));
    HIP_OK(hipEventRecord(e, s));
    HIP_OK(hipStreamWaitEvent(t, e, 0));
    HIP_OK(hipEventQuery(e)); /* the wait lets t's later work follow s's */
    EXPECT_HIP(hipStreamWaitEvent(t, e, 1), hipErrorInvalidValue);
    HIP_OK(hipStreamSynchronize(s));
    HIP_OK(hipStreamQuery(s));
    HIP_OK(hipEventDestroy(e));

    /* Elapsed time between two events around 50 ms of work. */
    hipEvent_t a, b;
    HIP_OK(hipEventCreate(&a));
    HIP_OK(hipEventCreate(&b));
    float ms = -1;
    EXPECT_HIP(hipEventElapsedTime(&ms, a, b), hipErrorInvalidHandle); /* never recorded */
    HIP_OK(hipEventRecord(a, s));
    HIP_OK(hipLaunchHostFunc(s, sleep_50ms, NULL));
    HIP_OK(hipEventRecord(b, s));
    EXPECT_HIP(hipEventElapsedTime(&ms, a, b), hipErrorNotReady);
    HIP_OK(hipEventSynchronize(b));
    HIP_OK(hipEventElapsedTime(&ms, a, b));
    CHECK(ms >= 45.0f && ms < 5000.0f);
    EXPECT_HIP(hipEventElapsedTime(NULL, a, b), hipErrorInvalidValue);
    HIP_OK(hipEventDestroy(a));
    HIP_OK(hipEventDestroy(b));

    /* Pointer attributes, by the ABI the mock answers with (HIPFILE_MOCK_HIP_ABI=6: HIP 6's
     * numbering, and plain host memory succeeds as unregistered; else HIP 5's, where it is an
     * invalid value). The numbers are compared raw: this program is built with HIP 5's header. */
    const char *abi = getenv("HIPFILE_MOCK_HIP_ABI");
    int hip6 = abi != NULL && strcmp(abi, "6") == 0;
    int version = 0;
    HIP_OK(hipRuntimeGetVersion(&version));
    CHECK(hip6 ? version / 10000000 == 6 : version / 10000000 == 5);
    hipPointerAttribute_t pa;
    HIP_OK(hipPointerGetAttributes(&pa, (char *)dev + 10));
    CHECK((int)pa.memoryType == (hip6 ? 2 : 1) && pa.device == 0);
    void *pinned = NULL;
    /* Flags: HIP's set, not both coherent and not; unknown ones refused. */
    void *flagged = NULL;
    HIP_OK(hipHostMalloc(&flagged, 64, hipHostMallocPortable | hipHostMallocMapped | hipHostMallocCoherent));
    HIP_OK(hipHostFree(flagged));
    EXPECT_HIP(hipHostMalloc(&flagged, 64, hipHostMallocCoherent | hipHostMallocNonCoherent), hipErrorInvalidValue);
    EXPECT_HIP(hipHostMalloc(&flagged, 64, 0x100), hipErrorInvalidValue);
    static char registrable[8192];
    EXPECT_HIP(hipHostRegister(registrable, sizeof registrable, 0x100), hipErrorInvalidValue);
    HIP_OK(hipHostRegister(registrable, sizeof registrable, hipHostRegisterPortable | hipHostRegisterMapped));
    EXPECT_HIP(hipHostRegister(registrable, sizeof registrable, 0), hipErrorHostMemoryAlreadyRegistered);
    HIP_OK(hipHostUnregister(registrable));
    EXPECT_HIP(hipHostUnregister(registrable), hipErrorHostMemoryNotRegistered);
    HIP_OK(hipHostMalloc(&pinned, 64, 0));
    HIP_OK(hipPointerGetAttributes(&pa, pinned));
    CHECK((int)pa.memoryType == (hip6 ? 1 : 0) && pa.hostPointer == pinned);
    HIP_OK(hipHostFree(pinned));
    if (hip6) {
        memset(&pa, 0x55, sizeof pa);
        HIP_OK(hipPointerGetAttributes(&pa, host));
        CHECK((int)pa.memoryType == 0 && pa.device == -1 && pa.devicePointer == NULL && pa.hostPointer == NULL);
    } else {
        EXPECT_HIP(hipPointerGetAttributes(&pa, host), hipErrorInvalidValue);
        CHECK(hipGetLastError() == hipErrorInvalidValue);
    }
    EXPECT_HIP(hipPointerGetAttributes(&pa, NULL), hipErrorInvalidValue);
    EXPECT_HIP(hipPointerGetAttributes(NULL, dev), hipErrorInvalidValue);
    (void)hipGetLastError();

    /* Managed memory: reachable from the host and the device. */
    /* Device memory is out of the host's reach, as on a GPU: a child that writes to it dies
     * (by SIGSEGV, or through the sanitizer's report of it) instead of finishing. */
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        ((volatile unsigned char *)dev)[0] = 1;
        _exit(0);
    }
    int wstatus = 0;
    CHECK(waitpid(child, &wstatus, 0) == child);
    CHECK(!(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0));

    int *managed = NULL;
    HIP_OK(hipMallocManaged((void **)&managed, 4096, hipMemAttachGlobal));
    HIP_OK(hipMemsetD32(managed, 42, 1024));
    CHECK(managed[1023] == 42);
    managed[0] = 7;
    HIP_OK(hipMemcpyDtoH(host, managed, 4));
    CHECK(host[0] == 7);
    /* Its attributes: HIP 6 says managed (3) in the type, HIP 5 device memory; both isManaged,
     * one address for both sides. */
    HIP_OK(hipPointerGetAttributes(&pa, managed + 10));
    CHECK((int)pa.memoryType == (hip6 ? 3 : 1) && pa.isManaged == 1 && pa.device == 0);
    CHECK(pa.devicePointer == (void *)(managed + 10) && pa.hostPointer == (void *)(managed + 10));
    HIP_OK(hipMemPrefetchAsync(managed, 4096, 0, NULL)); /* what prefetching is for */
    EXPECT_HIP(hipMallocManaged((void **)&managed, 4096, 4), hipErrorInvalidValue);
    HIP_OK(hipFree(managed));

    /* Priorities. */
    int least = 1, greatest = 1;
    HIP_OK(hipDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK(least == 0 && greatest == -1);
    HIP_OK(hipDeviceGetStreamPriorityRange(NULL, NULL));
    hipStream_t p;
    HIP_OK(hipStreamCreateWithPriority(&p, hipStreamNonBlocking, greatest));
    EXPECT_HIP(hipStreamCreateWithPriority(&p, 0, 5), hipErrorInvalidValue);
    HIP_OK(hipStreamDestroy(p));

    /* hipGetLastError: the last error of this thread, then reset. */
    EXPECT_HIP(hipMemsetD8(NULL, 0, 1), hipErrorInvalidValue);
    pthread_t other;
    CHECK(pthread_create(&other, NULL, other_thread, NULL) == 0);
    CHECK(pthread_join(other, NULL) == 0);
    CHECK(hipPeekAtLastError() == hipErrorInvalidValue);
    CHECK(hipGetLastError() == hipErrorInvalidValue);
    CHECK(hipGetLastError() == hipSuccess);

    HIP_OK(hipDeviceReset());
    HIP_OK(hipStreamDestroy(s));
    HIP_OK(hipStreamDestroy(t));
    HIP_OK(hipFree(dev));
    HIP_OK(hipFree(dev2));
    free(host);
    printf("ok\n");
    return 0;
}
