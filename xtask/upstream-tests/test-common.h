/* Upstream hipFile system tests harness (xtask/upstream-tests/run.sh), our own: the helpers the system tests use, written for this harness. */
#pragma once
#include "hipfile.h"
#include <cerrno>
#include <cstring>
#include <ostream>
#include <stdexcept>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

constexpr hipFileError_t HipFileOpError(hipFileOpError_t err) { return {err, hipSuccess}; }
inline bool operator==(const hipFileError_t &a, const hipFileError_t &b)
{
    return a.err == b.err && a.hip_drv_err == b.hip_drv_err;
}
inline std::ostream &operator<<(std::ostream &os, const hipFileError_t &e)
{
    return os << "{" << e.err << ", " << e.hip_drv_err << "}";
}
inline constexpr hipFileError_t HIPFILE_SUCCESS{hipFileSuccess, hipSuccess};

/* An unlinked temporary file in `dir`. */
struct Tmpfile {
    int fd;
    std::string path;
    explicit Tmpfile(std::string dir = ".") : path{std::move(dir) + "/hipfile-test.XXXXXX"}
    {
        fd = mkstemp(path.data());
        if (fd == -1) {
            throw std::runtime_error("mkstemp " + path + ": " + std::strerror(errno));
        }
        unlink(path.c_str());
    }
    ~Tmpfile() { close(fd); }
};
