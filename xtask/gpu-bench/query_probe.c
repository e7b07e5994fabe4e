// What asking where a device pointer lies costs, alone and while 8 or 16 threads copy 1 MiB
// pieces to the device (the load a Python caller's futures put on it): the runtime's pointer query
// (cudaPointerGetAttributes), the current device (cudaGetDevice), the driver's range query
// (cuMemGetAddressRange), and everything at once from the driver in one call
// (cuPointerGetAttributes: memory type, device, range start and size, managed). An unregistered
// buffer costs the library the first three on every request.
//   gcc -O2 -I/usr/local/cuda/include query_probe.c -L/usr/local/cuda/lib64 \
//       -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread
//   ./a.out
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>

#include "probe.h"

#define LOADERS 16
#define QUERIES 20000
#define COPY (1 << 20)

static char *dev;
static atomic_int stop;
static atomic_long copies;

static void *load(void *arg) {
    long t = (long)arg;
    void *host;
    cudaStream_t s;
    CHECK(cudaSetDevice(0));
    CHECK(cudaHostAlloc(&host, COPY, cudaHostAllocDefault));
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    while (!atomic_load(&stop)) {
        CHECK(cudaMemcpyAsync(dev + t * COPY, host, COPY, cudaMemcpyHostToDevice, s));
        CHECK(cudaStreamSynchronize(s));
        atomic_fetch_add(&copies, 1);
    }
    CHECK(cudaStreamDestroy(s));
    CHECK(cudaFreeHost(host));
    return NULL;
}

// µs per query of kind `q` on a pointer inside the buffer.
static double query(int q) {
    double t0 = now();
    for (int i = 0; i < QUERIES; i++) {
        void *p = dev + (size_t)(i % 1024) * 4096;
        switch (q) {
        case 0: {
            struct cudaPointerAttributes a;
            CHECK(cudaPointerGetAttributes(&a, p));
            break;
        }
        case 1: {
            int d;
            CHECK(cudaGetDevice(&d));
            break;
        }
        case 2: {
            CUdeviceptr base;
            size_t size;
            if (cuMemGetAddressRange(&base, &size, (CUdeviceptr)p) != CUDA_SUCCESS)
                exit(1);
            break;
        }
        case 3: {
            unsigned type = 0, managed = 0;
            int ordinal = -1;
            CUdeviceptr start = 0;
            size_t size = 0;
            CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                           CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                           CU_POINTER_ATTRIBUTE_IS_MANAGED};
            void *data[] = {&type, &ordinal, &start, &size, &managed};
            if (cuPointerGetAttributes(5, attrs, data, (CUdeviceptr)p) != CUDA_SUCCESS || size == 0)
                exit(1);
            break;
        }
        }
    }
    return (now() - t0) / QUERIES * 1e6;
}

int main(void) {
    static const char *names[] = {"cudaPointerGetAttributes", "cudaGetDevice", "cuMemGetAddressRange",
                                  "cuPointerGetAttributes (5)"};
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc((void **)&dev, (size_t)LOADERS * COPY + (4 << 20)));
    for (int round = 0; round < 4; round++) {
        int loaders = round % 2 ? LOADERS : LOADERS / 2;
        for (int q = 0; q < 4; q++)
            printf("alone          %-28s %6.2f us\n", names[q], query(q));
        pthread_t th[LOADERS];
        atomic_store(&stop, 0);
        for (long t = 0; t < loaders; t++)
            pthread_create(&th[t], NULL, load, (void *)t);
        while (atomic_load(&copies) < 2000)
            ;
        for (int q = 0; q < 4; q++) {
            long before = atomic_load(&copies);
            double t0 = now(), us = query(q);
            printf("%2d copying     %-28s %6.2f us   (copies meanwhile %.1f GB/s)\n", loaders, names[q], us,
                   (atomic_load(&copies) - before) * (double)COPY / (now() - t0) / 1e9);
        }
        atomic_store(&stop, 1);
        for (int t = 0; t < loaders; t++)
            pthread_join(th[t], NULL);
        atomic_store(&copies, 0);
    }
    return 0;
}
