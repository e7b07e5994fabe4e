/* cuFile's statistics as a program built against a given cufile.h reads them (NVIDIA's 1.15
 * header, whose level 1 is 512 bytes, or 1.20's, 624): each level read into a structure of the
 * header's size followed by guard bytes, which must stay untouched, with the counts of one
 * known read where the header puts them.
 *
 *   cufile_stats DIR   prints "version V l1 N" and exits 0, or names what went wrong (exit 1);
 *                      exit 3 where the library wrote past a structure. */
#include <cufile.h>
#include <fcntl.h>
#include <hip/hip_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define GUARD 256
#define SIZE (1u << 20)

/* Whether `n` bytes after a structure of `size` at `p` still hold the guard pattern. */
static int guard_intact(const unsigned char *p, size_t size) {
    for (size_t i = size; i < size + GUARD; i++)
        if (p[i] != 0xab)
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    char path[512];
    snprintf(path, sizeof path, "%s/stats-%d.bin", argv[1], (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    char *data = calloc(1, SIZE);
    CHECK(data && write(fd, data, SIZE) == SIZE);
    CHECK(cuFileDriverOpen().err == CU_FILE_SUCCESS);
    CHECK(cuFileSetStatsLevel(3).err == CU_FILE_SUCCESS);
    CUfileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = CU_FILE_HANDLE_TYPE_OPAQUE_FD;
    descr.handle.fd = fd;
    CUfileHandle_t fh;
    CHECK(cuFileHandleRegister(&fh, &descr).err == CU_FILE_SUCCESS);
    void *dev;
    CHECK(hipMalloc(&dev, SIZE) == hipSuccess);
    CHECK(cuFileRead(fh, dev, SIZE, 0, 0) == SIZE);

    unsigned char *l1 = malloc(sizeof(CUfileStatsLevel1_t) + GUARD);
    unsigned char *l2 = malloc(sizeof(CUfileStatsLevel2_t) + GUARD);
    unsigned char *l3 = malloc(sizeof(CUfileStatsLevel3_t) + GUARD);
    CHECK(l1 && l2 && l3);
    memset(l1, 0xab, sizeof(CUfileStatsLevel1_t) + GUARD);
    memset(l2, 0xab, sizeof(CUfileStatsLevel2_t) + GUARD);
    memset(l3, 0xab, sizeof(CUfileStatsLevel3_t) + GUARD);
    CHECK(cuFileGetStatsL1((CUfileStatsLevel1_t *)l1).err == CU_FILE_SUCCESS);
    CHECK(cuFileGetStatsL2((CUfileStatsLevel2_t *)l2).err == CU_FILE_SUCCESS);
    CHECK(cuFileGetStatsL3((CUfileStatsLevel3_t *)l3).err == CU_FILE_SUCCESS);
    if (!guard_intact(l1, sizeof(CUfileStatsLevel1_t)) || !guard_intact(l2, sizeof(CUfileStatsLevel2_t)) ||
        !guard_intact(l3, sizeof(CUfileStatsLevel3_t))) {
        fprintf(stderr, "written past a structure of this header's size\n");
        return 3;
    }
    const CUfileStatsLevel1_t *s1 = (const CUfileStatsLevel1_t *)l1;
    const CUfileStatsLevel2_t *s2 = (const CUfileStatsLevel2_t *)l2;
    const CUfileStatsLevel3_t *s3 = (const CUfileStatsLevel3_t *)l3;
    CHECK(s1->read_ops.ok == 1 && s1->read_bytes == SIZE && s1->last_batch_write_bytes == 0);
    /* The histogram counts the one 1 MiB read, where this header puts it. */
    unsigned long long reads = 0;
    for (int i = 0; i < 32; i++)
        reads += s2->read_size_kb_hist[i];
    CHECK(s2->basic.read_bytes == SIZE && reads == 1);
    CHECK(s3->detailed.basic.read_ops.ok == 1 && s3->num_gpus >= 1 && s3->num_gpus <= 16);
    CHECK(s3->per_gpu_stats[0].read_bytes == SIZE && s3->per_gpu_stats[0].n_total_reads == 1);
    int version = 0;
    CHECK(cuFileGetVersion(&version).err == CU_FILE_SUCCESS);
    printf("version %d l1 %zu\n", version, sizeof(CUfileStatsLevel1_t));
    cuFileHandleDeregister(fh);
    CHECK(hipFree(dev) == hipSuccess);
    CHECK(cuFileDriverClose().err == CU_FILE_SUCCESS);
    close(fd);
    unlink(path);
    return 0;
}
