/* threads FILE: 64 threads register a handle each at the same moment (a barrier releases
 * them) on a closed driver. The process-wide driver must open exactly once (use count 1), every
 * registration must succeed with a distinct handle, and every handle must then read. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include "common.h"

#define THREADS 64

static pthread_barrier_t start;
static const char *path;

struct slot {
    int fd;
    hipFileHandle_t fh;
    hipFileError_t result;
};

static void *register_one(void *arg)
{
    struct slot *slot = arg;
    hipFileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = hipFileHandleTypeOpaqueFD;
    descr.handle.fd = slot->fd;
    int rc = pthread_barrier_wait(&start);
    CHECK(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
    slot->result = hipFileHandleRegister(&slot->fh, &descr);
    return NULL;
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    path = argv[1];
    static struct slot slots[THREADS];
    pthread_t threads[THREADS];
    CHECK(pthread_barrier_init(&start, NULL, THREADS) == 0);
    CHECK(hipFileUseCount() == 0);

    for (int i = 0; i < THREADS; i++) {
        slots[i].fd = open(path, O_RDONLY);
        CHECK(slots[i].fd >= 0);
        CHECK(pthread_create(&threads[i], NULL, register_one, &slots[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK(pthread_join(threads[i], NULL) == 0);
    }
    CHECK(hipFileUseCount() == 1);

    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, 4096));
    for (int i = 0; i < THREADS; i++) {
        EXPECT_OK(slots[i].result);
        for (int j = 0; j < i; j++) {
            CHECK(slots[i].fh != slots[j].fh);
        }
        CHECK(hipFileRead(slots[i].fh, dev, 4096, 0, 0) == 4096);
    }
    for (int i = 0; i < THREADS; i++) {
        hipFileHandleDeregister(slots[i].fh);
        CHECK(hipFileRead(slots[i].fh, dev, 4096, 0, 0) == -hipFileHandleNotRegistered);
        CHECK(close(slots[i].fd) == 0);
    }
    EXPECT_OK(hipFileDriverClose());
    CHECK(hipFileUseCount() == 0);
    HIP_OK(hipFree(dev));
    CHECK(pthread_barrier_destroy(&start) == 0);
    printf("%d threads opened the driver once\n", THREADS);
    return 0;
}
