// The C++ API's tests (include/hipfile.hpp), over the mock HIP runtime: RAII (use count,
// registrations, descriptors), exceptions and their fields, C and C++ calls mixed, moves,
// threads, batches and stream-ordered calls, and throwing constructors that leak nothing.
// Built twice by tests/cpp.rs, plainly and under AddressSanitizer. Prints "ok: N checks".
#include <hipfile.hpp>

#include <hip/hip_runtime_api.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

extern "C" void hipfileMockFailCopy(std::uint64_t nth, int error); // the mock HIP runtime's fault

static int checks = 0;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        ++checks;                                                                                  \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);          \
            std::exit(1);                                                                          \
        }                                                                                          \
    } while (0)

static const std::size_t LEN = 1 << 20;
static std::string dir;

static std::string path(const char *name) { return dir + "/" + name + "-" + std::to_string(getpid()); }

static unsigned char byte_at(std::size_t i) { return static_cast<unsigned char>((i * 2654435761u) >> 13); }

// A scratch file `name` of LEN bytes (byte_at); its path.
static std::string make_file(const char *name)
{
    const std::string p = path(name);
    std::vector<unsigned char> data(LEN);
    for (std::size_t i = 0; i < LEN; i++) {
        data[i] = byte_at(i);
    }
    FILE *f = std::fopen(p.c_str(), "wb");
    CHECK(f != nullptr && std::fwrite(data.data(), 1, LEN, f) == LEN && std::fclose(f) == 0);
    return p;
}

// How many of this process's descriptors are open on `p` (other threads of the library may
// open descriptors of their own meanwhile, so counting all of them would not tell).
static int fds_on(const std::string &p)
{
    char *want = realpath(p.c_str(), nullptr);
    CHECK(want != nullptr);
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    CHECK(d != nullptr);
    while (struct dirent *e = readdir(d)) {
        char link[4096];
        std::string entry = std::string("/proc/self/fd/") + e->d_name;
        ssize_t len = readlink(entry.c_str(), link, sizeof link - 1);
        if (len > 0) {
            link[len] = 0;
            n += std::strcmp(link, want) == 0;
        }
    }
    closedir(d);
    std::free(want);
    return n;
}

static bool device_matches(const void *dev, std::size_t len, std::size_t file_offset)
{
    std::vector<unsigned char> host(len);
    CHECK(hipMemcpy(host.data(), dev, len, hipMemcpyDeviceToHost) == hipSuccess);
    for (std::size_t i = 0; i < len; i++) {
        if (host[i] != byte_at(file_offset + i)) {
            return false;
        }
    }
    return true;
}

// Runs `f`, which must throw hipfile::Error; returns it.
template <class F> static hipfile::Error thrown(F &&f)
{
    try {
        f();
    }
    catch (const hipfile::Error &e) {
        return e;
    }
    std::fprintf(stderr, "no hipfile::Error thrown\n");
    std::exit(1);
}

static void driver_lifetime()
{
    CHECK(hipfile::Driver::use_count() == 0);
    {
        hipfile::Driver a;
        CHECK(hipfile::Driver::use_count() == 1);
        {
            hipfile::Driver b;
            CHECK(hipfile::Driver::use_count() == 2);
            hipfile::Driver c = std::move(b); // moved: still one use
            CHECK(hipfile::Driver::use_count() == 2);
        }
        CHECK(hipfile::Driver::use_count() == 1);
        CHECK(!hipfile::Driver::backends().empty());
        std::vector<hipfile::Capability> caps = hipfile::Driver::capabilities();
        CHECK(!caps.empty());
        for (const hipfile::Capability &c : caps) {
            CHECK(!c.backend.empty() && (c.available || !c.why_not.empty()));
        }
    }
    CHECK(hipfile::Driver::use_count() == 0);
    hipfile::Version v = hipfile::version();
    unsigned major = 99, minor = 99, patch = 99;
    CHECK(hipFileGetVersion(&major, &minor, &patch).err == hipFileSuccess);
    CHECK(v.major_version == major && v.minor_version == minor && v.patch_version == patch);
}

static void files_and_buffers(void *dev)
{
    hipfile::Driver driver;
    const std::string p = make_file("files");
    hipFileHandle_t old = nullptr;
    {
        hipfile::File file(p, O_RDONLY); // owns its descriptor
        CHECK(fds_on(p) >= 1);
        hipfile::Buffer buffer(dev, LEN);
        CHECK(buffer.data() == dev && buffer.size() == LEN);
        CHECK(file.read(dev, LEN, 0) == LEN);
        CHECK(device_matches(dev, LEN, 0));
        CHECK(file.read(dev, 4096, LEN - 100, 8192) == 100); // end of file: short
        old = file.handle();
        // Registered twice: a hipFile code.
        hipfile::Error e = thrown([&] { hipfile::Buffer again(dev, LEN); });
        CHECK(e.code() == hipFileMemoryAlreadyRegistered && e.sys_errno() == 0 && e.hip_error() == 0);
        CHECK(std::string(e.what()).rfind(hipFileGetOpErrorString(hipFileMemoryAlreadyRegistered), 0) == 0);
    }
    // Gone: deregistered, its descriptors closed, the buffer free to register again.
    CHECK(fds_on(p) == 0);
    CHECK(hipFileRead(old, dev, 4096, 0, 0) == -hipFileHandleNotRegistered);
    CHECK(hipFileBufRegister(dev, LEN, 0).err == hipFileSuccess);
    CHECK(hipFileBufDeregister(dev).err == hipFileSuccess);

    // A descriptor the caller keeps stays open after the File is gone.
    int fd = open(p.c_str(), O_RDONLY);
    CHECK(fd >= 0);
    {
        hipfile::File file(fd);
        CHECK(file.fd() == fd);
        hipfile::Error e = thrown([&] { hipfile::File twice(fd); });
        CHECK(e.code() == hipFileHandleAlreadyRegistered);
    }
    CHECK(fcntl(fd, F_GETFD) != -1);
    {
        hipfile::File again(fd); // deregistered, so it registers again
        CHECK(again.read(dev, 4096, 4096) == 4096 && device_matches(dev, 4096, 4096));
    }
    close(fd);
    unlink(p.c_str());
}

static void errors(void *dev)
{
    hipfile::Driver driver;
    // An operating-system error, from a constructor.
    hipfile::Error e = thrown([&] { hipfile::File missing(path("missing"), O_RDONLY); });
    CHECK(e.sys_errno() == ENOENT && e.code() != hipFileSuccess && e.hip_error() == 0);
    // Opened, then refused at registration (a directory): the descriptor is closed again.
    e = thrown([&] { hipfile::File directory(dir, O_RDONLY); });
    CHECK(e.code() != hipFileSuccess);
    CHECK(fds_on(dir) == 0);
    // Bad arguments: hipFileInvalidValue.
    const std::string p = make_file("errors");
    hipfile::File file(p, O_RDONLY);
    hipfile::Buffer buffer(dev, LEN);
    e = thrown([&] { file.read(dev, LEN + 1, 0); });
    CHECK(e.code() == hipFileInvalidValue && e.sys_errno() == 0);
    // Negative offsets: EINVAL, as upstream since 0.4.
    e = thrown([&] { file.read(dev, 16, -1); });
    CHECK(e.sys_errno() == EINVAL);
    // A write to a read-only file: EBADF from the system.
    e = thrown([&] { file.write(dev, 4096, 0); });
    CHECK(e.sys_errno() == EBADF);
    // The HIP runtime failing a copy: hipFileHipDriverError with its error.
    hipfileMockFailCopy(1, 999);
    e = thrown([&] { file.read(dev, LEN, 0); });
    CHECK(e.code() == hipFileHipDriverError && e.hip_error() == 999 && e.sys_errno() == 0);
    CHECK(file.read(dev, LEN, 0) == LEN); // and then it works
    // The bounce path (HIPFILE_BACKEND=bounce) served it.
    std::uint64_t staged = 0;
    for (const hipfile::Served &s : hipfile::Driver::served()) {
        staged += s.backend == "bounce" ? s.bytes : 0;
    }
    CHECK(staged >= LEN);
    // Not device memory.
    int local = 0;
    e = thrown([&] { file.read(&local, sizeof local, 0); });
    CHECK(e.code() != hipFileSuccess);
    CHECK(file.p2p_verdict().empty() || !file.p2p_verdict().empty()); // answers, either way
    unlink(p.c_str());
}

static void mixed_with_c(void *dev)
{
    CHECK(hipFileDriverOpen().err == hipFileSuccess);
    {
        hipfile::Driver driver;
        CHECK(hipFileUseCount() == 2);
        const std::string p = make_file("mixed");
        hipfile::File file(p, O_RDWR);
        // C reads through the C++ file's handle into a buffer C++ registered...
        hipfile::Buffer buffer(dev, LEN);
        CHECK(hipFileRead(file.handle(), dev, 8192, 0, 0) == 8192 && device_matches(dev, 8192, 0));
        // ...and C++ writes what C registered.
        void *dev2 = static_cast<char *>(dev) + LEN;
        CHECK(hipFileBufRegister(dev2, LEN, 0).err == hipFileSuccess);
        CHECK(hipMemcpy(dev2, dev, 8192, hipMemcpyDeviceToDevice) == hipSuccess);
        CHECK(file.write(dev2, 8192, LEN) == 8192);
        CHECK(hipFileBufDeregister(dev2).err == hipFileSuccess);
        // A C++ buffer deregistered by C: its destructor then finds nothing, quietly.
        CHECK(hipFileBufDeregister(dev).err == hipFileSuccess);
        unlink(p.c_str());
    }
    CHECK(hipFileUseCount() == 1);
    CHECK(hipFileDriverClose().err == hipFileSuccess);
    CHECK(hipFileUseCount() == 0);
}

static void moves(void *dev)
{
    hipfile::Driver driver;
    const std::string p = make_file("moves");
    {
        std::vector<hipfile::File> files;
        for (int i = 0; i < 20; i++) { // the vector grows: its files move
            files.emplace_back(p, O_RDONLY);
        }
        hipfile::File moved = std::move(files[3]);
        hipfile::File assigned(p, O_RDONLY);
        assigned = std::move(files[4]); // the old one is deregistered and closed
        CHECK(moved.read(dev, 4096, 0) == 4096 && assigned.read(dev, 4096, 0) == 4096);
        hipfile::Buffer b1(dev, 4096);
        hipfile::Buffer b2 = std::move(b1);
        CHECK(b2.data() == dev);
    }
    CHECK(fds_on(p) == 0);
    CHECK(hipFileBufRegister(dev, 4096, 0).err == hipFileSuccess); // b2 deregistered it once
    CHECK(hipFileBufDeregister(dev).err == hipFileSuccess);
    unlink(p.c_str());
}

static void threads(void *dev)
{
    hipfile::Driver driver;
    const std::string p = make_file("threads");
    hipfile::Buffer buffer(dev, 2 * LEN);
    std::vector<std::thread> pool;
    std::vector<int> ok(8, 0);
    for (int t = 0; t < 8; t++) {
        pool.emplace_back([&, t] {
            hipfile::Driver mine; // one driver, counted per use
            hipfile::File file(p, O_RDONLY);
            char *at = static_cast<char *>(dev) + t * (2 * LEN / 8);
            for (int i = 0; i < 50; i++) {
                std::size_t off = static_cast<std::size_t>((t * 7 + i) % 16) * 4096;
                if (file.read(at, 4096, static_cast<off_t>(off)) != 4096 || !device_matches(at, 4096, off)) {
                    return;
                }
            }
            ok[t] = 1;
        });
    }
    for (std::thread &t : pool) {
        t.join();
    }
    for (int t = 0; t < 8; t++) {
        CHECK(ok[t] == 1);
    }
    CHECK(hipfile::Driver::use_count() == 1);
    unlink(p.c_str());
}

static void batches_and_streams(void *dev)
{
    hipfile::Driver driver;
    const std::string p = make_file("batch");
    hipfile::File file(p, O_RDONLY);
    hipfile::Buffer buffer(dev, LEN);
    {
        hipfile::Batch batch(4);
        std::vector<hipfile::BatchIo> ios;
        for (std::size_t i = 0; i < 3; i++) {
            ios.push_back(hipfile::BatchIo{false, &file, dev, static_cast<off_t>(i * 8192),
                                           static_cast<off_t>(i * 8192), 8192, 100 + i});
        }
        batch.submit(ios);
        std::vector<hipfile::BatchDone> done = batch.status(3, 4);
        CHECK(done.size() == 3);
        for (const hipfile::BatchDone &d : done) {
            CHECK(d.cookie >= 100 && d.cookie < 103 && d.result == 8192);
        }
        CHECK(device_matches(dev, 3 * 8192, 0));
        hipfile::Error e = thrown([&] { batch.submit(std::vector<hipfile::BatchIo>(5, ios[0])); });
        CHECK(e.code() == hipFileBatchFull);
        hipfile::Error e2 = thrown([] { hipfile::Batch too_big(100000); });
        CHECK(e2.code() == hipFileInvalidValue);
    }
    hipStream_t stream = nullptr;
    CHECK(hipStreamCreate(&stream) == hipSuccess);
    hipfile::register_stream(stream, 0);
    std::size_t size = 4096;
    off_t file_offset = 12288, buffer_offset = 0;
    ssize_t bytes = -12345;
    CHECK(hipMemset(dev, 0, 4096) == hipSuccess);
    file.read_async(dev, &size, &file_offset, &buffer_offset, &bytes, stream);
    CHECK(hipStreamSynchronize(stream) == hipSuccess);
    CHECK(bytes == 4096 && device_matches(dev, 4096, 12288));
    hipfile::deregister_stream(stream);
    hipfile::Error e = thrown([&] { hipfile::deregister_stream(stream); });
    CHECK(e.code() == hipFileInvalidValue);
    CHECK(hipStreamDestroy(stream) == hipSuccess);
    unlink(p.c_str());
}

static void futures(void *dev)
{
    hipfile::Driver driver;
    const std::string p = make_file("futures");
    hipfile::File file(p, O_RDONLY);
    CHECK(hipMemset(dev, 0, LEN) == hipSuccess);
    std::vector<hipfile::Future> pending;
    for (std::size_t i = 0; i < 16; i++) {
        const off_t at = static_cast<off_t>(i * (LEN / 16));
        pending.push_back(file.pread(dev, LEN / 16, at, at));
    }
    std::size_t total = 0;
    for (const hipfile::Future &f : pending) {
        CHECK(f.wait_for(std::chrono::seconds(10)));
        CHECK(f.done());
        total += f.get();
    }
    CHECK(total == LEN && device_matches(dev, LEN, 0));
    CHECK(file.pread(dev, 4096, LEN - 100).get() == 100); // end of file: short
    CHECK(file.pread(dev, 0, 0).get() == 0);
    // A write to a file opened read-only: the failure comes out of get().
    hipfile::Future w = file.pwrite(dev, 4096, 0);
    hipfile::Error e = thrown([&] { w.get(); });
    CHECK(e.sys_errno() == EBADF);
    unlink(p.c_str());
}

int main(int argc, char **argv)
{
    CHECK(argc == 2);
    dir = argv[1];
    void *dev = nullptr;
    CHECK(hipMalloc(&dev, 2 * LEN) == hipSuccess);
    driver_lifetime();
    files_and_buffers(dev);
    errors(dev);
    mixed_with_c(dev);
    moves(dev);
    threads(dev);
    batches_and_streams(dev);
    futures(dev);
    CHECK(hipfile::Driver::use_count() == 0);
    CHECK(hipFree(dev) == hipSuccess);
    std::printf("ok: %d checks\n", checks);
    return 0;
}
