/*
 * hipfile.hpp: the C++ API of hipfile-rs (C++17), over the same process-wide driver as the C API
 * of hipfile.h, which it includes: C and C++ calls in one program share one use count and one
 * registry. Link libhipfile_cxx.a, which carries both (README, "C++").
 *
 * - hipfile::Driver: a use of the driver, opened by the constructor and closed by the destructor.
 * - hipfile::File: a registered file, from a descriptor the caller keeps or from a path (then it
 *   owns the descriptor); deregistered (and the descriptor closed) by the destructor.
 * - hipfile::Buffer: registered device memory, deregistered by the destructor.
 * - hipfile::Batch: a batch, destroyed (its entries canceled and waited for) by the destructor.
 * - hipfile::Future: a read or write on the library's threads (File::pread, File::pwrite); the
 *   requests of many callers are gathered into the driver's batches, and one waited for (get)
 *   while queued alone runs on the waiting thread as one call (docs/semantics.md, §11).
 * - Objects move and never copy; a moved-from object holds nothing and destroys nothing.
 * - Every failure throws hipfile::Error: hipFile's code (code()), the errno of a system error
 *   (sys_errno(), else 0), the HIP runtime's error (hip_error(), else 0), and a message that
 *   starts with hipFileGetOpErrorString's text for the code.
 */
#ifndef HIPFILE_HPP
#define HIPFILE_HPP

#include <hipfile.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <sys/types.h>
#include <utility>
#include <vector>

#include "hipfile-cxx/src/lib.rs.h"
#include "rust/cxx.h"

namespace hipfile {

/* A failed call: what hipFileError_t, errno and the HIP runtime said. */
class Error : public std::runtime_error {
public:
    Error(int code, int sys_errno, int hip_error, const std::string &what)
        : std::runtime_error(what), code_(code), sys_errno_(sys_errno), hip_error_(hip_error)
    {
    }
    /* hipFile's code (hipFileOpError_t); for a system error, the code hipFileError_t would carry. */
    int code() const noexcept { return code_; }
    /* The errno of a system error, else 0. */
    int sys_errno() const noexcept { return sys_errno_; }
    /* The HIP runtime's error (with code() == hipFileHipDriverError), else 0. */
    int hip_error() const noexcept { return hip_error_; }

private:
    int code_, sys_errno_, hip_error_;
};

namespace detail {
/* Runs a bridge call; its failure becomes hipfile::Error. */
template <class F> auto call(F &&f) -> decltype(f())
{
    try {
        return f();
    }
    catch (const rust::Error &) {
        bridge::Failure failure = bridge::last_failure();
        std::string what = hipFileGetOpErrorString(static_cast<hipFileOpError_t>(failure.code));
        what += ": ";
        what += std::string(failure.what);
        throw Error(failure.code, failure.sys_errno, failure.hip, what);
    }
}
} // namespace detail

struct Version {
    unsigned major_version, minor_version, patch_version;
};

/* The library's version (hipFileGetVersion's). */
inline Version version()
{
    bridge::Version v = bridge::version();
    return Version{v.major_version, v.minor_version, v.patch_version};
}

/* One backend the platform knows of: available, or why not. */
struct Capability {
    std::string backend;
    bool p2p;
    bool available;
    std::string why_not;
};

/* What one open backend has served since the driver opened. */
struct Served {
    std::string backend;
    std::uint64_t requests;
    std::uint64_t bytes;
};

/* A use of the driver: hipFileDriverOpen when made, hipFileDriverClose when destroyed. */
class Driver {
public:
    Driver() : use_(detail::call([] { return bridge::open_driver(); })) {}
    Driver(Driver &&) noexcept = default;
    Driver &operator=(Driver &&) noexcept = default;

    /* hipFileUseCount. */
    static std::int64_t use_count() { return bridge::use_count(); }
    /* The backends the driver opened with, in the order it tries them. */
    static std::vector<std::string> backends()
    {
        std::vector<std::string> names;
        for (const rust::String &name : bridge::backends()) {
            names.emplace_back(name);
        }
        return names;
    }
    /* Each open backend and what it served (which backend serves a process's requests). */
    static std::vector<Served> served()
    {
        std::vector<Served> out;
        for (const bridge::Served &s : bridge::served()) {
            out.push_back(Served{std::string(s.backend), s.requests, s.bytes});
        }
        return out;
    }
    /* Every backend the platform knows of, available or not and why not. */
    static std::vector<Capability> capabilities()
    {
        std::vector<Capability> out;
        for (const bridge::Capability &c : detail::call([] { return bridge::capabilities(); })) {
            out.push_back(Capability{std::string(c.backend), c.p2p, c.available, std::string(c.why_not)});
        }
        return out;
    }

private:
    rust::Box<bridge::DriverUse> use_;
};

/* Registered device memory (hipFileBufRegister), deregistered when destroyed. */
class Buffer {
public:
    Buffer(void *base, std::size_t length, int flags = 0)
        : buffer_(detail::call(
              [&] { return bridge::register_buffer(static_cast<std::uint8_t *>(base), length, flags); }))
    {
    }
    Buffer(Buffer &&) noexcept = default;
    Buffer &operator=(Buffer &&) noexcept = default;

    void *data() const { return reinterpret_cast<void *>(buffer_->base()); }
    std::size_t size() const { return buffer_->len(); }

private:
    rust::Box<bridge::Buffer> buffer_;
};

/* A read or write running on the library's threads (File::pread, File::pwrite). Its memory
 * must stay valid until the result is in; destroying the Future does not cancel it. */
class Future {
public:
    explicit Future(rust::Box<bridge::Pending> pending) : pending_(std::move(pending)) {}
    Future(Future &&) noexcept = default;
    Future &operator=(Future &&) noexcept = default;

    /* Whether the transfer has ended (asking starts its round if it is still gathering). */
    bool done() const { return pending_->done(); }
    /* Waits for the transfer: the bytes moved (fewer at the end of the file), or its failure
     * thrown as hipfile::Error. */
    std::size_t get() const { return static_cast<std::size_t>(detail::call([&] { return pending_->wait(-1); })); }
    /* Waits at most `timeout`: false when the time ran out (a failure is thrown). */
    bool wait_for(std::chrono::nanoseconds timeout) const
    {
        const auto ns = static_cast<std::int64_t>(timeout.count() < 0 ? 0 : timeout.count());
        return detail::call([&] { return pending_->wait(ns); }) >= 0;
    }

private:
    rust::Box<bridge::Pending> pending_;
};

/* A registered file (hipFileHandleRegister), deregistered when destroyed. */
class File {
public:
    /* Registers `fd`, which the caller keeps (and closes after this object is gone). */
    explicit File(int fd) : file_(detail::call([&] { return bridge::register_fd(fd); })) {}
    /* Opens `path` with `flags` (O_CLOEXEC added) and registers it; the descriptor is closed
     * with this object. */
    File(const std::string &path, int flags, mode_t mode = 0644)
        : file_(detail::call([&] { return bridge::open_file(path, flags, static_cast<std::uint32_t>(mode)); }))
    {
    }
    File(File &&) noexcept = default;
    File &operator=(File &&) noexcept = default;

    int fd() const { return file_->fd(); }
    /* The handle C calls take (hipFileRead(file.handle(), ...)). */
    hipFileHandle_t handle() const { return reinterpret_cast<hipFileHandle_t>(file_->handle()); }
    /* "" when a p2p (storage to GPU) backend would serve this file, else why none would. */
    std::string p2p_verdict() const
    {
        return std::string(detail::call([&] { return file_->p2p_verdict(); }));
    }

    /* hipFileRead: the bytes read (fewer at the end of the file). */
    std::size_t read(void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset = 0) const
    {
        return transfer(false, buffer, size, file_offset, buffer_offset);
    }
    /* hipFileWrite: the bytes written. */
    std::size_t write(const void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset = 0) const
    {
        return transfer(true, const_cast<void *>(buffer), size, file_offset, buffer_offset);
    }
    /* hipFileRead on the library's threads: a Future at once. `buffer` must stay valid until its
     * result is in. */
    Future pread(void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset = 0) const
    {
        return submit(false, buffer, size, file_offset, buffer_offset);
    }
    /* hipFileWrite on the library's threads, as pread. */
    Future pwrite(const void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset = 0) const
    {
        return submit(true, const_cast<void *>(buffer), size, file_offset, buffer_offset);
    }
    /* hipFileReadAsync: queued on `stream`; the pointed-to values are read when the stream gets
     * there and must live until then; *bytes_read receives the result. */
    void read_async(void *buffer, std::size_t *size, off_t *file_offset, off_t *buffer_offset, ssize_t *bytes_read,
                    hipStream_t stream) const
    {
        transfer_async(false, buffer, size, file_offset, buffer_offset, bytes_read, stream);
    }
    /* hipFileWriteAsync, as read_async. */
    void write_async(void *buffer, std::size_t *size, off_t *file_offset, off_t *buffer_offset, ssize_t *bytes_written,
                     hipStream_t stream) const
    {
        transfer_async(true, buffer, size, file_offset, buffer_offset, bytes_written, stream);
    }

private:
    Future submit(bool write, void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset) const
    {
        return Future(detail::call([&] {
            return file_->submit(write, static_cast<std::uint8_t *>(buffer), size, file_offset, buffer_offset);
        }));
    }
    std::size_t transfer(bool write, void *buffer, std::size_t size, off_t file_offset, off_t buffer_offset) const
    {
        return detail::call([&] {
            return file_->transfer(write, static_cast<std::uint8_t *>(buffer), size, file_offset, buffer_offset);
        });
    }
    void transfer_async(bool write, void *buffer, std::size_t *size, off_t *file_offset, off_t *buffer_offset,
                        ssize_t *bytes, hipStream_t stream) const
    {
        detail::call([&] {
            file_->transfer_async(write, static_cast<std::uint8_t *>(buffer), size,
                                  reinterpret_cast<std::int64_t *>(file_offset),
                                  reinterpret_cast<std::int64_t *>(buffer_offset), reinterpret_cast<rust::isize *>(bytes),
                                  reinterpret_cast<std::size_t>(stream));
        });
    }

    rust::Box<bridge::File> file_;
};

/* hipFileStreamRegister / hipFileStreamDeregister. */
inline void register_stream(hipStream_t stream, unsigned flags)
{
    detail::call([&] { bridge::register_stream(reinterpret_cast<std::size_t>(stream), flags); });
}
inline void deregister_stream(hipStream_t stream)
{
    detail::call([&] { bridge::deregister_stream(reinterpret_cast<std::size_t>(stream)); });
}

/* One entry of a batch, and a finished one. */
struct BatchIo {
    bool write;
    const File *file;
    void *buffer;
    off_t buffer_offset;
    off_t file_offset;
    std::size_t size;
    std::size_t cookie;
};
struct BatchDone {
    std::size_t cookie;
    /* Bytes moved, or a negative errno or hipFile code. */
    std::int64_t result;
};

/* A batch (hipFileBatchIOSetUp), destroyed when this object is. */
class Batch {
public:
    explicit Batch(unsigned capacity) : batch_(detail::call([&] { return bridge::batch_setup(capacity); })) {}
    Batch(Batch &&) noexcept = default;
    Batch &operator=(Batch &&) noexcept = default;

    /* hipFileBatchIOSubmit: all entries are checked before any runs. */
    void submit(const std::vector<BatchIo> &ios) const
    {
        std::vector<bridge::BatchIo> entries;
        for (const BatchIo &io : ios) {
            entries.push_back(bridge::BatchIo{io.write, reinterpret_cast<std::size_t>(io.file->handle()),
                                              reinterpret_cast<std::size_t>(io.buffer), io.buffer_offset,
                                              io.file_offset, io.size, io.cookie});
        }
        detail::call([&] { batch_->submit(rust::Slice<const bridge::BatchIo>(entries.data(), entries.size())); });
    }
    /* hipFileBatchIOGetStatus: waits for `min` entries (at most `timeout_ns`; negative: no
     * limit), returns up to `max`. */
    std::vector<BatchDone> status(unsigned min, unsigned max, std::int64_t timeout_ns = -1) const
    {
        std::vector<BatchDone> out;
        for (const bridge::BatchDone &d : detail::call([&] { return batch_->status(min, max, timeout_ns); })) {
            out.push_back(BatchDone{d.cookie, d.result});
        }
        return out;
    }
    /* hipFileBatchIOCancel. */
    void cancel() const
    {
        detail::call([&] { batch_->cancel(); });
    }

private:
    rust::Box<bridge::Batch> batch_;
};

} // namespace hipfile

#endif
