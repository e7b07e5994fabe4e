/* faultfs: a fault-injecting file layer, preloaded (LD_PRELOAD) into a test program. It wraps
 * pread, pwrite (and their 64-bit names), fsync and fdatasync for descriptors of files whose
 * path contains "faulty", while the program has switched it on with faultfs_set(), and does
 * what FAULTFS says:
 *
 *   eintr          every other call fails with EINTR
 *   eagain         every other call fails with EAGAIN
 *   short:N        each call moves at most N bytes
 *   eio_at:OFF     a call whose range covers byte OFF fails with EIO
 *   enospc_at:OFF  writes store bytes before OFF, then fail with ENOSPC (a full disk)
 *   slow:USEC      each call sleeps USEC microseconds first
 *
 * io_uring requests bypass it: tests turn io_uring off where they need every call seen. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*rw_fn)(int, void *, size_t, off_t);
typedef int (*sync_fn)(int);

static atomic_int active;
static atomic_ulong calls, injected;

void faultfs_set(int on) { atomic_store(&active, on); }
unsigned long faultfs_injected(void) { return atomic_load(&injected); }

static int faulty(int fd)
{
    if (!atomic_load(&active)) {
        return 0;
    }
    char link[64], path[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) {
        return 0;
    }
    path[n] = 0;
    return strstr(path, "faulty") != NULL;
}

static const char *mode(unsigned long long *arg)
{
    const char *m = getenv("FAULTFS");
    if (m == NULL) {
        return "";
    }
    const char *colon = strchr(m, ':');
    *arg = colon ? strtoull(colon + 1, NULL, 10) : 0;
    return m;
}

static int is(const char *m, const char *name) { return strncmp(m, name, strlen(name)) == 0; }

/* Decides the fate of one call of `len` bytes at `offset`: -1 with errno set, or the bytes
 * it may move. */
static ssize_t decide(int write, size_t len, off_t offset)
{
    unsigned long long arg;
    const char *m = mode(&arg);
    unsigned long n = atomic_fetch_add(&calls, 1);
    if (is(m, "slow")) {
        usleep((useconds_t)arg);
    } else if ((is(m, "eintr") || is(m, "eagain")) && n % 2 == 0) {
        atomic_fetch_add(&injected, 1);
        errno = is(m, "eintr") ? EINTR : EAGAIN;
        return -1;
    } else if (is(m, "short") && len > arg) {
        atomic_fetch_add(&injected, 1);
        return (ssize_t)arg;
    } else if (is(m, "eio_at") && (unsigned long long)offset <= arg && arg < (unsigned long long)offset + len) {
        atomic_fetch_add(&injected, 1);
        errno = EIO;
        return -1;
    } else if (is(m, "enospc_at") && write && (unsigned long long)offset + len > arg) {
        atomic_fetch_add(&injected, 1);
        if ((unsigned long long)offset >= arg) {
            errno = ENOSPC;
            return -1;
        }
        return (ssize_t)(arg - (unsigned long long)offset);
    }
    return (ssize_t)len;
}

static ssize_t wrap(const char *name, int write, int fd, void *buf, size_t len, off_t offset)
{
    rw_fn real = (rw_fn)dlsym(RTLD_NEXT, name);
    if (!faulty(fd)) {
        return real(fd, buf, len, offset);
    }
    ssize_t allowed = decide(write, len, offset);
    if (allowed < 0) {
        return -1;
    }
    if ((size_t)allowed < len && (fcntl(fd, F_GETFL) & O_DIRECT)) {
        /* O_DIRECT moves whole blocks: a short transfer there is a multiple of them. */
        allowed = allowed / 4096 * 4096;
        allowed = allowed == 0 ? (len < 4096 ? (ssize_t)len : 4096) : allowed;
    }
    return real(fd, buf, (size_t)allowed, offset);
}

ssize_t pread(int fd, void *buf, size_t len, off_t offset) { return wrap("pread", 0, fd, buf, len, offset); }
ssize_t pread64(int fd, void *buf, size_t len, off_t offset) { return wrap("pread64", 0, fd, buf, len, offset); }
ssize_t pwrite(int fd, const void *buf, size_t len, off_t offset)
{
    return wrap("pwrite", 1, fd, (void *)buf, len, offset);
}
ssize_t pwrite64(int fd, const void *buf, size_t len, off_t offset)
{
    return wrap("pwrite64", 1, fd, (void *)buf, len, offset);
}

static int wrap_sync(const char *name, int fd)
{
    sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);
    unsigned long long arg;
    const char *m = mode(&arg);
    if (faulty(fd) && is(m, "eintr") && atomic_fetch_add(&calls, 1) % 2 == 0) {
        atomic_fetch_add(&injected, 1);
        errno = EINTR;
        return -1;
    }
    return real(fd);
}

int fsync(int fd) { return wrap_sync("fsync", fd); }
int fdatasync(int fd) { return wrap_sync("fdatasync", fd); }
