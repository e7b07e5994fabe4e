/* stats DIR p2p|bounce [wait]: statistics after a known sequence of calls
 * (HIPFILE_STATS_LEVEL=3): registrations, reads of 4 KiB, 1 MiB and 100 unaligned bytes, a
 * write, a write that fails in the backend, a batch of two reads. "p2p": aligned requests
 * go to a p2p backend (the unaligned one to the bounce path); "bounce": all to the bounce
 * path. With "wait", prints "ready PID" and waits for a line on stdin before closing, so that
 * another process can read the same figures live. Also: NULL pointers, and counters that keep
 * counting across a close and open. */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "common.h"

#define LEN (1 << 20)
#define MIB (1 << 20)

/* Threads of this process whose name starts with "hipfile" (the library names its own). */
static int library_threads(void)
{
    int n = 0;
    DIR *tasks = opendir("/proc/self/task");
    CHECK(tasks != NULL);
    struct dirent *t;
    while ((t = readdir(tasks)) != NULL) {
        char path[512], name[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", t->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            continue;
        }
        if (fgets(name, sizeof name, f) != NULL && strncmp(name, "hipfile", 7) == 0) {
            fprintf(stderr, "a library thread is left: %s", name);
            n++;
        }
        fclose(f);
    }
    closedir(tasks);
    return n;
}

/* Whether something listens on this process's statistics socket. */
static bool stats_socket_listens(void)
{
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    int len = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "hipfile-rs-stats.%d", (int)getpid());
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(s >= 0);
    bool listens = connect(s, (struct sockaddr *)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) == 0;
    close(s);
    return listens;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 3);
    gpu_init();
    bool p2p = strcmp(argv[2], "p2p") == 0;
    bool wait = argc > 3 && strcmp(argv[3], "wait") == 0;

    EXPECT_ERR(hipFileGetStatsL1(NULL), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetStatsL2(NULL), hipFileInvalidValue);
    EXPECT_ERR(hipFileGetStatsL3(NULL), hipFileInvalidValue);
    /* Before any open: every byte of each structure is written (zero), padding included, whatever
     * the caller's memory held. */
    {
        static hipFileStatsLevel3_t l3;
        memset(&l3, 0xAB, sizeof l3);
        EXPECT_OK(hipFileGetStatsL3(&l3));
        const unsigned char *bytes = (const unsigned char *)&l3;
        for (size_t i = 0; i < sizeof l3; i++) {
            CHECK(bytes[i] == 0);
        }
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/stats-%d", argv[1], (int)getpid());
    int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
    CHECK(fd >= 0);
    static unsigned char data[2 * LEN];
    for (size_t i = 0; i < sizeof data; i++) {
        data[i] = byte_at(i, 7);
    }
    full_pwrite(fd, data, sizeof data, 0);
    int ro = open(path, O_RDONLY);
    CHECK(ro >= 0);

    EXPECT_OK(hipFileDriverOpen());
    hipFileStatsLevel1_t before;
    EXPECT_OK(hipFileGetStatsL1(&before));
    CHECK(before.read_ops.ok == 0 && before.write_ops.ok == 0 && before.hdl_register_ops.ok == 0);

    hipFileHandle_t fh = register_fd(fd);
    hipFileHandle_t fro = register_fd(ro);
    hipFileDescr_t bad;
    memset(&bad, 0, sizeof bad);
    bad.type = hipFileHandleTypeOpaqueFD;
    bad.handle.fd = fd; /* already registered */
    hipFileHandle_t unused;
    EXPECT_ERR(hipFileHandleRegister(&unused, &bad), hipFileHandleAlreadyRegistered);
    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, 2 * LEN));
    EXPECT_OK(hipFileBufRegister(dev, LEN, 0));

    CHECK(hipFileRead(fh, dev, 4096, 0, 0) == 4096);
    CHECK(hipFileRead(fh, dev, 4096, 4096, 4096) == 4096);
    CHECK(hipFileRead(fh, dev, 4096, 8192, 8192) == 4096);
    CHECK(hipFileRead(fh, dev, LEN, 0, 0) == LEN);
    CHECK(hipFileRead(fh, dev, 100, 10, 0) == 100);       /* unaligned */
    CHECK(hipFileWrite(fh, dev, 8192, LEN, 0) == 8192);
    CHECK(hipFileWrite(fro, dev, 8192, 0, 0) == -1);      /* EBADF from the backend */
    CHECK(errno == EBADF);
    CHECK(hipFileRead(fh, dev, 4096, -1, 0) == -1);       /* refused before any backend */

    hipFileIOEvents_t events[2];
    unsigned nr = batch_read_pieces(fh, dev, 4096, 2, events);
    CHECK(nr == 2);

    hipFileStatsLevel3_t s;
    memset(&s, 0xff, sizeof s);
    EXPECT_OK(hipFileGetStatsL3(&s));
    const hipFileStatsLevel1_t *l1 = &s.detailed.basic;
    uint64_t reads = 5 + 2, read_bytes = 3 * 4096 + LEN + 100 + 2 * 4096;
    CHECK(l1->read_ops.ok == reads && l1->read_ops.err == 0 && l1->read_bytes == read_bytes);
    CHECK(l1->write_ops.ok == 1 && l1->write_ops.err == 1 && l1->write_bytes == 8192);
    CHECK(l1->hdl_register_ops.ok == 2 && l1->hdl_register_ops.err == 1);
    CHECK(l1->buf_register_ops.ok == 1 && l1->buf_register_ops.err == 0);
    CHECK(l1->read_lat_sum_us > 0 && l1->read_lat_avg_us == l1->read_lat_sum_us / reads);
    CHECK(l1->read_bw_bytes_per_sec > 0 && l1->read_ops_per_sec > 0);
    CHECK(l1->batch_setup_ops.ok == 1 && l1->batch_submit_ops.ok == 1 && l1->batch_destroy_ops.ok == 1);
    CHECK(l1->batch_complete_ops.ok == 2 && l1->batch_read_bytes == 2 * 4096);
    CHECK(l1->batch_enqueued_ops.ok == 2 && l1->last_batch_read_bytes == 2 * 4096 && l1->last_batch_write_bytes == 0);
    CHECK(l1->batch_posix_enqueued_ops.ok + l1->batch_nvfs_submit_ops.ok == 2);
    /* Size classes: 0 = under 1 KiB, i = 2^(i-1) up to 2^i KiB. */
    const uint64_t *rh = s.detailed.read_size_kb_hist, *wh = s.detailed.write_size_kb_hist;
    CHECK(rh[0] == 1 && rh[3] == 5 && rh[11] == 1 && wh[4] == 2);
    uint64_t total = 0;
    for (int i = 0; i < 32; i++) {
        total += rh[i];
    }
    CHECK(total == reads);
    CHECK(s.num_gpus == 1);
    const hipFilePerGpuStats_t *g = &s.per_gpu_stats[0];
    CHECK(g->n_total_reads == reads && g->read_bytes == read_bytes && g->n_unaligned_reads == 1);
    CHECK(g->n_total_writes == 1 && g->n_writes_err == 1 && g->reg_bytes == LEN);
    if (p2p) {
        CHECK(g->n_nvfs_reads == reads - 1 && g->n_posix_reads == 1);
    } else {
        CHECK(g->n_nvfs_reads == 0 && g->n_posix_reads == reads);
    }
    CHECK(s.per_gpu_stats[1].n_total_reads == 0);

    if (wait) {
        printf("ready %d %llu %llu\n", (int)getpid(), (unsigned long long)l1->read_ops.ok,
               (unsigned long long)l1->read_bytes);
        fflush(stdout);
        char line[16];
        CHECK(fgets(line, sizeof line, stdin) != NULL);
    }

    EXPECT_OK(hipFileBufDeregister(dev));
    hipFileHandleDeregister(fh);
    hipFileHandleDeregister(fro);
    EXPECT_OK(hipFileDriverClose());
    /* Counting goes on across a close and open (since the process started). */
    EXPECT_OK(hipFileDriverOpen());
    hipFileStatsLevel1_t after;
    EXPECT_OK(hipFileGetStatsL1(&after));
    CHECK(after.read_ops.ok == reads && after.buf_deregister_ops.ok == 1 && after.hdl_deregister_ops.ok == 2);
    hipFileStatsLevel3_t l3;
    EXPECT_OK(hipFileGetStatsL3(&l3));
    CHECK(l3.per_gpu_stats[0].reg_bytes == 0);
    EXPECT_OK(hipFileDriverClose());
    /* After the last close no thread of the library is left (statistics server, batch and
     * stream threads), and nobody listens for statistics readers; the counters stay. */
    CHECK(library_threads() == 0);
    CHECK(!stats_socket_listens());
    EXPECT_OK(hipFileGetStatsL1(&after));
    CHECK(after.read_ops.ok == reads);

    HIP_OK(hipFree(dev));
    close(ro);
    close(fd);
    unlink(path);
    printf("ok: statistics (%s)\n", argv[2]);
    return 0;
}
