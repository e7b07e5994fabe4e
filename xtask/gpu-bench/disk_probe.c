// Measures how a file is read from a cold page cache, the ways a bounce path could read it:
// O_DIRECT into buffers of 4 KiB pages or of transparent huge pages, with several request sizes
// and thread counts, and buffered reads (with the kernel's readahead). Each line drops the page
// cache first (root) and reads the whole file once; threads take requests in file order.
//
//   disk_probe FILE [SECONDS_PER_CASE]
//
// Prints one line per case: "<how> <threads>x<request> <GB/s>" (1 GB = 1e9 bytes).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"

enum how { DIRECT_4K, DIRECT_HUGE, BUFFERED };
static const char *names[] = {"direct-4k-pages", "direct-huge-pages", "buffered"};

struct run {
    int fd;
    off_t size;
    size_t request;
    atomic_llong next;
    enum how how;
};

static void *worker(void *arg) {
    struct run *r = arg;
    size_t len = r->request;
    void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    // Huge pages need 2 MiB-aligned ranges: mmap the request with room, then advise.
    if (r->how == DIRECT_HUGE) {
        munmap(buf, len);
        size_t huge = 2u << 20;
        char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        buf = (void *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
        if (madvise(buf, len, MADV_HUGEPAGE) != 0) perror("madvise");
    }
    memset(buf, 1, len); // fault the pages in before timing matters
    for (;;) {
        long long off = atomic_fetch_add(&r->next, (long long)len);
        if (off >= r->size) break;
        ssize_t n = pread(r->fd, buf, len, off);
        if (n < 0) {
            perror("pread");
            exit(1);
        }
    }
    return NULL;
}

static void drop_caches(void) {
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0 || write(fd, "3\n", 2) != 2) {
        perror("drop_caches (needs root)");
        exit(1);
    }
    close(fd);
}

static void measure(const char *path, enum how how, int threads, size_t request) {
    drop_caches();
    struct run r = {.request = request, .how = how};
    r.fd = open(path, O_RDONLY | (how == BUFFERED ? 0 : O_DIRECT));
    if (r.fd < 0) {
        perror(path);
        exit(1);
    }
    struct stat st;
    fstat(r.fd, &st);
    r.size = st.st_size;
    atomic_init(&r.next, 0);
    pthread_t t[64];
    double start = now();
    for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, worker, &r);
    for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
    double secs = now() - start;
    close(r.fd);
    printf("%s %dx%zuKiB %.2f\n", names[how], threads, request >> 10, r.size / secs / 1e9);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const char *path = argv[1];
    struct { enum how how; int threads; size_t kib; } cases[] = {
        {DIRECT_4K, 8, 4096},   {DIRECT_HUGE, 8, 4096},  {BUFFERED, 16, 4096},
        {DIRECT_4K, 16, 4096},  {DIRECT_HUGE, 16, 4096}, {DIRECT_HUGE, 8, 8192},
        {DIRECT_HUGE, 16, 2048}, {DIRECT_HUGE, 32, 4096}, {DIRECT_4K, 32, 1024},
        {BUFFERED, 8, 4096},    {DIRECT_4K, 8, 4096},    {DIRECT_HUGE, 8, 4096},
        {BUFFERED, 16, 4096},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        measure(path, cases[i].how, cases[i].threads, cases[i].kib << 10);
    return 0;
}
