/* safety MODE ARGS...: what the library must hold when the process around it misbehaves or is
 * busy. Each mode prints one line starting with "ok" on success and exits 1 at the first
 * failed check.
 *
 *   signals FILE OUT HZ ROUNDS  48 MiB reads (cold page cache) and writes, aligned and not,
 *                               while SIGALRM arrives HZ times a second (no SA_RESTART)
 *   reuse A B                   the handle of fd N keeps reading and writing A after the caller
 *                               closes N and opens B as N, and while a write is in flight
 *   append FILE                 writes through an O_APPEND descriptor land at their offsets
 *   opath FILE                  an O_PATH descriptor is refused at registration
 *   fork FILE                   a forked child reads and writes; the parent keeps working
 *   quiet FILE                  with fd 2 closed and reused for a data file, nothing is
 *                               written there; I/O works with stderr a closed pipe
 *   resources FILE THREADS      closing the driver under load from THREADS threads, then
 *                               descriptors and threads are back to their starting counts
 *                               (run with HIPFILE_BOUNCE_CHUNK_KIB=64, so that every read
 *                               uses the worker pool)
 *
 * Built with -DTESTS_OVER_CUDA, its HIP calls go to CUDA's runtime (xtask/gpu-bench/safety.sh). */
#include <hipfile.h>
#include <hip/hip_runtime_api.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"


#define MIB (1 << 20)
#define BIG (48 * MIB)
#define GUARD 8192
#define CANARY 0xA5
#define FILE_CANARY 0x5A

static void fill(unsigned char *p, size_t len, unsigned long long offset, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = byte_at(offset + i, seed);
    }
}

static void make_file(const char *path, size_t len, unsigned seed)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    unsigned char *data = malloc(len);
    CHECK(data != NULL);
    fill(data, len, 0, seed);
    full_pwrite(fd, data, len, 0);
    CHECK(fsync(fd) == 0);
    free(data);
    CHECK(close(fd) == 0);
}

/* Checks that `len` bytes of device memory at `dev` hold file bytes from `offset` (seed). */
static void expect_device(const void *dev, size_t len, unsigned long long offset, unsigned seed)
{
    unsigned char *host = malloc(len);
    CHECK(host != NULL);
    HIP_OK(hipMemcpy(host, dev, len, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++) {
        if (host[i] != byte_at(offset + i, seed)) {
            fprintf(stderr, "device byte %zu (file offset %llu) is %d, expected %d\n", i, offset + i,
                    host[i], byte_at(offset + i, seed));
            exit(1);
        }
    }
    free(host);
}

static void expect_device_canary(const unsigned char *dev, size_t len)
{
    unsigned char *host = malloc(len);
    CHECK(host != NULL);
    HIP_OK(hipMemcpy(host, dev, len, hipMemcpyDeviceToHost));
    for (size_t i = 0; i < len; i++) {
        CHECK(host[i] == CANARY);
    }
    free(host);
}

/* Checks that [offset, offset + len) of `fd` holds the data of `seed` and that `guard` bytes
 * on either side (within `file_len`) still hold the file canary. */
static void expect_file(int fd, unsigned long long offset, size_t len, unsigned seed, size_t file_len)
{
    unsigned char *host = malloc(len);
    CHECK(host != NULL);
    full_pread(fd, host, len, (off_t)offset);
    for (size_t i = 0; i < len; i++) {
        if (host[i] != byte_at(offset + i, seed)) {
            fprintf(stderr, "file byte %llu is %d, expected %d\n", offset + i, host[i], byte_at(offset + i, seed));
            exit(1);
        }
    }
    free(host);
    unsigned char edge[GUARD];
    size_t before = offset < GUARD ? offset : GUARD;
    full_pread(fd, edge, before, (off_t)(offset - before));
    for (size_t i = 0; i < before; i++) {
        CHECK(edge[i] == FILE_CANARY);
    }
    size_t end = offset + len, after = file_len - end < GUARD ? file_len - end : GUARD;
    full_pread(fd, edge, after, (off_t)end);
    for (size_t i = 0; i < after; i++) {
        CHECK(edge[i] == FILE_CANARY);
    }
}

static void fill_file_canary(int fd, size_t len)
{
    CHECK(ftruncate(fd, 0) == 0);
    unsigned char *c = malloc(MIB);
    CHECK(c != NULL);
    memset(c, FILE_CANARY, MIB);
    for (size_t at = 0; at < len; at += MIB) {
        full_pwrite(fd, c, len - at < MIB ? len - at : MIB, (off_t)at);
    }
    free(c);
    CHECK(fdatasync(fd) == 0);
}

/* ------------------------------------------------------------------ signals */

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void timer(long hz)
{
    struct itimerval it;
    memset(&it, 0, sizeof it);
    if (hz > 0) {
        it.it_interval.tv_usec = 1000000 / hz;
        it.it_value.tv_usec = 1000000 / hz;
    }
    CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
}

static int signals(int argc, char **argv)
{
    CHECK(argc == 6);
    const char *path = argv[2], *out_path = argv[3];
    long hz = atol(argv[4]);
    int rounds = atoi(argv[5]);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm; /* no SA_RESTART */
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGALRM, &sa, NULL) == 0);

    const size_t file_len = BIG + 3 * MIB;
    make_file(path, file_len, 1);
    int fd = open(path, O_RDONLY);
    int out = open(out_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && out >= 0);
    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t in = register_fd(fd), wr = register_fd(out);
    unsigned char *dev = NULL;
    const size_t dev_len = BIG + 2 * GUARD + 64;
    HIP_OK(hipMalloc((void **)&dev, dev_len));
    unsigned char *source = malloc(dev_len);
    CHECK(source != NULL);

    int reads = 0, writes = 0;
    for (int r = 0; r < rounds; r++) {
        for (int aligned = 0; aligned < 2; aligned++) {
            size_t boff = aligned ? GUARD : GUARD + 13 + (size_t)r;
            unsigned long long foff = aligned ? (unsigned long long)r * MIB : 4097ull + (unsigned long long)r * 4099;
            size_t len = aligned ? BIG : BIG - 4096 - (size_t)r * 7;

            /* Read, from a cold page cache. */
            HIP_OK(hipMemset(dev, CANARY, dev_len));
            CHECK(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0);
            timer(hz);
            ssize_t n = hipFileRead(in, dev, len, (hoff_t)foff, (hoff_t)boff);
            timer(0);
            if (n != (ssize_t)len) {
                fprintf(stderr, "read %d: %zd of %zu (%s)\n", r, n, len,
                        n == -1 ? strerror(errno) : HIPFILE_ERRSTR(n));
                return 1;
            }
            expect_device(dev + boff, len, foff, 1);
            expect_device_canary(dev, boff);
            expect_device_canary(dev + boff + len, dev_len - boff - len);
            reads++;

            /* Write other data, then read the file back. */
            unsigned seed = 100 + (unsigned)(r * 2 + aligned);
            fill(source, len, foff, seed);
            HIP_OK(hipMemcpy(dev + boff, source, len, hipMemcpyHostToDevice));
            fill_file_canary(out, file_len);
            timer(hz);
            n = hipFileWrite(wr, dev, len, (hoff_t)foff, (hoff_t)boff);
            timer(0);
            if (n != (ssize_t)len) {
                fprintf(stderr, "write %d: %zd of %zu (%s)\n", r, n, len,
                        n == -1 ? strerror(errno) : HIPFILE_ERRSTR(n));
                return 1;
            }
            expect_file(out, foff, len, seed, file_len);
            writes++;
        }
    }
    CHECK(alarms > 0);
    hipFileHandleDeregister(in);
    hipFileHandleDeregister(wr);
    EXPECT_OK(hipFileDriverClose());
    HIP_OK(hipFree(dev));
    free(source);
    printf("ok: %d reads and %d writes of ~48 MiB intact under %d signals at %ld Hz\n", reads, writes,
           (int)alarms, hz);
    return 0;
}

/* -------------------------------------------------------------------- reuse */

struct write_job {
    hipFileHandle_t fh;
    void *dev;
    size_t len;
    ssize_t result;
    atomic_int started;
};

static void *write_thread(void *arg)
{
    struct write_job *job = arg;
    atomic_store(&job->started, 1);
    job->result = hipFileWrite(job->fh, job->dev, job->len, 0, 0);
    return NULL;
}

static int reuse(int argc, char **argv)
{
    CHECK(argc == 4);
    const size_t len = 16 * MIB;
    make_file(argv[2], len, 2);
    make_file(argv[3], len, 3);
    int fd = open(argv[2], O_RDWR);
    CHECK(fd >= 0);
    hipFileHandle_t fh = register_fd(fd);
    CHECK(close(fd) == 0);
    int other = open(argv[3], O_RDWR);
    CHECK(other == fd); /* the caller's number now names B */

    unsigned char *dev = NULL;
    HIP_OK(hipMalloc((void **)&dev, len));
    /* Unaligned and aligned reads both come from A. */
    CHECK(hipFileRead(fh, dev, 100000, 12345, 7) == 100000);
    expect_device(dev + 7, 100000, 12345, 2);
    CHECK(hipFileRead(fh, dev, 4 * MIB, 4 * MIB, 0) == 4 * MIB);
    expect_device(dev, 4 * MIB, 4 * MIB, 2);
    /* Writes go to A, and B is untouched. */
    unsigned char *host = malloc(len);
    CHECK(host != NULL);
    fill(host, len, 0, 4);
    HIP_OK(hipMemcpy(dev, host, len, hipMemcpyHostToDevice));
    CHECK(hipFileWrite(fh, dev, 5000, 333, 333) == 5000);
    CHECK(hipFileWrite(fh, dev, 4 * MIB, 8 * MIB, 0) == 4 * MIB);
    unsigned char *check = malloc(len);
    CHECK(check != NULL);
    full_pread(other, check, len, 0);
    for (size_t i = 0; i < len; i++) {
        CHECK(check[i] == byte_at(i, 3));
    }
    int a = open(argv[2], O_RDONLY);
    CHECK(a >= 0);
    full_pread(a, check, len, 0);
    for (size_t i = 0; i < len; i++) {
        unsigned char want = (i >= 333 && i < 5333) ? byte_at(i, 4)
                             : (i >= 8 * MIB && i < 12 * MIB) ? byte_at(i - 8 * MIB, 4)
                                                               : byte_at(i, 2);
        CHECK(check[i] == want);
    }
    hipFileHandleDeregister(fh);
    CHECK(close(other) == 0);

    /* Deregistering while a large write is in flight, then reusing the number. */
    fd = open(argv[2], O_RDWR);
    CHECK(fd >= 0);
    fh = register_fd(fd);
    struct write_job job = {.fh = fh, .dev = dev, .len = len, .result = 0, .started = 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, write_thread, &job) == 0);
    while (!atomic_load(&job.started)) {
    }
    usleep(1000);
    hipFileHandleDeregister(fh);
    CHECK(close(fd) == 0);
    other = open(argv[3], O_RDWR);
    CHECK(other == fd);
    CHECK(pthread_join(t, NULL) == 0);
    /* The write either finished in A or failed; B never sees a byte of it. */
    CHECK(job.result == (ssize_t)len || job.result < 0);
    full_pread(other, check, len, 0);
    for (size_t i = 0; i < len; i++) {
        CHECK(check[i] == byte_at(i, 3));
    }
    if (job.result == (ssize_t)len) {
        full_pread(a, check, len, 0);
        CHECK(memcmp(check, host, len) == 0);
    }
    CHECK(close(other) == 0 && close(a) == 0);
    EXPECT_OK(hipFileDriverClose());
    HIP_OK(hipFree(dev));
    free(host);
    free(check);
    printf("ok: one handle, one file (in-flight write %s)\n", job.result == (ssize_t)len ? "finished" : "failed");
    return 0;
}

/* ------------------------------------------------------------ append, O_PATH */

static int append(int argc, char **argv)
{
    CHECK(argc == 3);
    const size_t file_len = 24 * MIB, len = 17 * MIB + 5;
    const unsigned long long offset = MIB + 3;
    int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    fill_file_canary(fd, file_len);
    CHECK(close(fd) == 0);
    fd = open(argv[2], O_RDWR | O_APPEND);
    CHECK(fd >= 0);
    hipFileHandle_t fh = register_fd(fd);
    unsigned char *dev = NULL, *host = malloc(len);
    CHECK(host != NULL);
    HIP_OK(hipMalloc((void **)&dev, len));
    fill(host, len, offset, 5);
    HIP_OK(hipMemcpy(dev, host, len, hipMemcpyHostToDevice));
    ssize_t n = hipFileWrite(fh, dev, len, (hoff_t)offset, 0);
    CHECK(n == (ssize_t)len);
    struct stat st;
    CHECK(fstat(fd, &st) == 0 && st.st_size == (off_t)file_len);
    expect_file(fd, offset, len, 5, file_len);
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());
    HIP_OK(hipFree(dev));
    free(host);
    printf("ok: an O_APPEND write landed at its offset\n");
    return 0;
}

static int opath(int argc, char **argv)
{
    CHECK(argc == 3);
    make_file(argv[2], 8192, 6);
    int fd = open(argv[2], O_PATH);
    CHECK(fd >= 0);
    hipFileDescr_t descr;
    memset(&descr, 0, sizeof descr);
    descr.type = hipFileHandleTypeOpaqueFD;
    descr.handle.fd = fd;
    hipFileHandle_t fh = NULL;
    EXPECT_ERR(hipFileHandleRegister(&fh, &descr), hipFileInvalidFileOpenFlag);
    EXPECT_OK(hipFileDriverClose()); /* registration opened it */
    printf("ok: O_PATH refused\n");
    return 0;
}

/* --------------------------------------------------------------------- fork */

static void read_and_check(hipFileHandle_t fh, void *dev, size_t len, unsigned seed)
{
    HIP_OK(hipMemset(dev, CANARY, len));
    ssize_t n = hipFileRead(fh, dev, len, 0, 0);
    if (n != (ssize_t)len) {
        fprintf(stderr, "[%d] read: %zd (%s)\n", (int)getpid(), n, n == -1 ? strerror(errno) : HIPFILE_ERRSTR(n));
        exit(1);
    }
    expect_device(dev, len, 0, seed);
}

static int forked(int argc, char **argv)
{
    CHECK(argc == 3);
    const size_t len = 24 * MIB;
    make_file(argv[2], len, 7);
    int fd = open(argv[2], O_RDWR);
    CHECK(fd >= 0);
    hipFileHandle_t fh = register_fd(fd);
    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, len));
    read_and_check(fh, dev, len, 7);

    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        alarm(60); /* a hang fails the test instead of stalling it */
        read_and_check(fh, dev, len, 7);
        /* Write the first half back at the second half's place, and read it again. */
        CHECK(hipFileWrite(fh, dev, len / 2, (hoff_t)(len / 2), 0) == (ssize_t)(len / 2));
        HIP_OK(hipMemset(dev, CANARY, len));
        CHECK(hipFileRead(fh, dev, len / 2, (hoff_t)(len / 2), 0) == (ssize_t)(len / 2));
        expect_device(dev, len / 2, 0, 7);
        hipFileHandleDeregister(fh);
        EXPECT_OK(hipFileDriverClose());
        _exit(0);
    }
    /* The parent keeps working while the child runs, and after. */
    read_and_check(fh, dev, len / 2, 7);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "child failed: status %#x\n", status);
        return 1;
    }
    HIP_OK(hipMemset(dev, CANARY, len));
    CHECK(hipFileRead(fh, dev, len / 2, (hoff_t)(len / 2), 0) == (ssize_t)(len / 2));
    expect_device(dev, len / 2, 0, 7); /* what the child wrote */
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());
    HIP_OK(hipFree(dev));
    printf("ok: the child read and wrote, the parent kept working\n");
    return 0;
}

/* -------------------------------------------------------------------- quiet */

static int quiet(int argc, char **argv)
{
    CHECK(argc == 3);
    signal(SIGPIPE, SIG_IGN);
    const size_t len = 8 * MIB;
    make_file(argv[2], len, 8);
    /* fd 2 now belongs to a data file (the application closed stderr). */
    char data_path[4096];
    snprintf(data_path, sizeof data_path, "%s.fd2", argv[2]);
    CHECK(close(2) == 0);
    int data = open(data_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (data != 2) {
        printf("fd 2 was not reused (%d)\n", data);
        return 1;
    }
    CHECK(write(data, "data", 4) == 4);

    int fd = open(argv[2], O_RDONLY);
    CHECK(fd >= 0);
    /* Unaligned reads under auto: the p2p path declines them, which the library notes. */
    hipFileHandle_t fh = register_fd(fd);
    void *dev = NULL;
    HIP_OK(hipMalloc(&dev, len));
    for (int i = 0; i < 3; i++) {
        ssize_t n = hipFileRead(fh, dev, len - 4096 - 1, 4097, 1);
        if (n != (ssize_t)(len - 4096 - 1)) {
            printf("read: %zd\n", n);
            return 1;
        }
    }
    expect_device((char *)dev + 1, len - 4097, 4097, 8);
    hipFileHandleDeregister(fh);
    EXPECT_OK(hipFileDriverClose());
    struct stat st;
    CHECK(fstat(data, &st) == 0);
    if (st.st_size != 4) {
        printf("the library wrote %lld bytes into the application's fd 2\n", (long long)st.st_size - 4);
        return 1;
    }
    printf("ok: nothing written to a descriptor the library does not own\n");
    return 0;
}

/* ---------------------------------------------------------------- resources */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the directory's own descriptor */
}

/* Threads the library started: those not named like the program's main thread (threads the
 * program starts inherit that name). */
static int count_library_threads(void)
{
    char main_name[64] = {0}, name[64];
    FILE *f = fopen("/proc/self/comm", "r");
    CHECK(f != NULL && fgets(main_name, sizeof main_name, f) != NULL);
    fclose(f);
    DIR *d = opendir("/proc/self/task");
    CHECK(d != NULL);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.') {
            continue;
        }
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *c = fopen(path, "r");
        if (c == NULL) {
            continue; /* the thread ended */
        }
        if (fgets(name, sizeof name, c) != NULL && strcmp(name, main_name) != 0) {
            n++;
        }
        fclose(c);
    }
    closedir(d);
    return n;
}

/* The count of count_library_threads once it has not changed for 50 ms (waiting 2 s at most). */
static int settled_library_threads(void)
{
    int n = count_library_threads();
    for (int tries = 0, same = 0; tries < 400 && same < 10; tries++) {
        usleep(5000);
        int now = count_library_threads();
        same = now == n ? same + 1 : 0;
        n = now;
    }
    return n;
}

static int count_threads(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    CHECK(f != NULL);
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Threads: %d", &n) == 1) {
            break;
        }
    }
    fclose(f);
    return n;
}

#define PER_THREAD (256 * 1024)

struct load {
    hipFileHandle_t fh;
    unsigned char *dev;
    int index;
    atomic_int *stop;
    atomic_long *ok_reads;
};

static void *load_thread(void *arg)
{
    struct load *l = arg;
    unsigned char *dev = l->dev + (size_t)l->index * PER_THREAD;
    unsigned long long offset = (unsigned long long)(l->index % 16) * PER_THREAD + 512;
    while (!atomic_load(l->stop)) {
        ssize_t n = hipFileRead(l->fh, dev, PER_THREAD, (hoff_t)offset, 0);
        if (n == PER_THREAD) {
            atomic_fetch_add(l->ok_reads, 1);
            continue;
        }
        /* Once the driver closed: not open (-1/EINVAL) or the handle is gone (-5027). */
        if (!((n == -1 && errno == EINVAL) || n == -hipFileHandleNotRegistered)) {
            fprintf(stderr, "thread %d: read gave %zd (errno %d)\n", l->index, n, errno);
            exit(1);
        }
        break;
    }
    return NULL;
}

static int resources(int argc, char **argv)
{
    CHECK(argc == 4);
    int threads = atoi(argv[3]);
    const size_t file_len = 16 * PER_THREAD + 4096;
    make_file(argv[2], file_len, 9);
    unsigned char *dev = NULL;
    HIP_OK(hipMalloc((void **)&dev, (size_t)threads * PER_THREAD));
    int fd = open(argv[2], O_RDONLY);
    CHECK(fd >= 0);
    /* One cycle first: a GPU runtime starts threads and opens descriptors of its own the first
     * time it is used (CUDA does at its first stream), and keeps them for the process. */
    EXPECT_OK(hipFileDriverOpen());
    hipFileHandle_t warm = register_fd(fd);
    CHECK(hipFileRead(warm, dev, PER_THREAD, 0, 0) == PER_THREAD);
    EXPECT_OK(hipFileDriverClose());
    /* The baseline once the first cycle's threads have gone: a pool's workers end after the
     * close returns, and a joined thread lingers a moment in /proc. */
    int library0 = settled_library_threads();
    int fds0 = count_fds(), threads0 = count_threads();

    for (int round = 0; round < 2; round++) {
        EXPECT_OK(hipFileDriverOpen());
        hipFileHandle_t fh = register_fd(fd);
        atomic_int stop = 0;
        atomic_long ok_reads = 0;
        pthread_t *t = calloc((size_t)threads, sizeof *t);
        struct load *l = calloc((size_t)threads, sizeof *l);
        CHECK(t != NULL && l != NULL);
        for (int i = 0; i < threads; i++) {
            l[i] = (struct load){.fh = fh, .dev = dev, .index = i, .stop = &stop, .ok_reads = &ok_reads};
            CHECK(pthread_create(&t[i], NULL, load_thread, &l[i]) == 0);
        }
        while (atomic_load(&ok_reads) < threads) {
            usleep(1000);
        }
        CHECK(count_library_threads() > library0); /* the load is real: workers are running */
        EXPECT_OK(hipFileDriverClose()); /* to zero, under load */
        CHECK(hipFileUseCount() == 0);
        /* Released when the close returns, with the load threads still calling. */
        int fds_closed = count_fds(), library_threads = count_library_threads();
        for (int tries = 0; tries < 200 && library_threads > library0; tries++) {
            usleep(5000);
            library_threads = count_library_threads();
        }
        if (fds_closed != fds0 || library_threads != library0) {
            printf("round %d, at close: descriptors %d -> %d, threads other than the program's %d -> %d\n", round,
                   fds0, fds_closed, library0, library_threads);
            return 1;
        }
        atomic_store(&stop, 1);
        for (int i = 0; i < threads; i++) {
            CHECK(pthread_join(t[i], NULL) == 0);
        }
        for (int i = 0; i < threads; i++) {
            expect_device(dev + (size_t)i * PER_THREAD, PER_THREAD, (unsigned long long)(i % 16) * PER_THREAD + 512, 9);
        }
        free(t);
        free(l);
        /* A joined thread leaves the kernel's count a moment after pthread_join returns. */
        int fds = count_fds(), nthreads = count_threads();
        for (int tries = 0; tries < 200 && nthreads != threads0; tries++) {
            usleep(5000);
            nthreads = count_threads();
        }
        if (fds != fds0 || nthreads != threads0) {
            printf("round %d: descriptors %d -> %d, threads %d -> %d\n", round, fds0, fds, threads0, nthreads);
            return 1;
        }
    }
    CHECK(close(fd) == 0);
    HIP_OK(hipFree(dev));
    printf("ok: %d descriptors and %d threads before and after closing under load\n", fds0, threads0);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(argc >= 2);
    gpu_init();
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } modes[] = {
        {"signals", signals}, {"reuse", reuse}, {"append", append}, {"opath", opath},
        {"fork", forked}, {"quiet", quiet}, {"resources", resources},
    };
    const char *mode = argv[1];
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        if (strcmp(mode, modes[i].name) == 0) {
            return modes[i].run(argc, argv);
        }
    }
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
}
