// Reads a file into GPU memory, checks it against the file, and writes it back to FILE.copy.
#include <hipfile.hpp>
#include <hip/hip_runtime_api.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s FILE\n", argv[0]);
        return 2;
    }
    const std::string path = argv[1];
    try {
        hipfile::Driver driver;           // hipFileDriverOpen now, hipFileDriverClose at the end
        hipfile::File in(path, O_RDONLY); // opened and registered; deregistered and closed at the end
        struct stat st;
        if (fstat(in.fd(), &st) != 0) {
            std::perror("fstat");
            return 1;
        }
        const std::size_t size = static_cast<std::size_t>(st.st_size);
        void *dev = nullptr;
        if (hipMalloc(&dev, size) != hipSuccess) {
            std::fprintf(stderr, "hipMalloc failed\n");
            return 1;
        }
        {
            hipfile::Buffer buffer(dev, size); // registered; deregistered at the end of this block
            std::size_t done = 0;
            while (done < size) { // one call moves at most about 2 GiB
                std::size_t n = in.read(dev, size - done, static_cast<off_t>(done), static_cast<off_t>(done));
                if (n == 0) {
                    break;
                }
                done += n;
            }
            std::vector<char> got(size);
            std::ifstream file(path, std::ios::binary);
            std::vector<char> want((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
            if (hipMemcpy(got.data(), dev, size, hipMemcpyDeviceToHost) != hipSuccess || done != size || got != want) {
                std::fprintf(stderr, "the GPU's copy differs from the file\n");
                return 1;
            }
            hipfile::File out(path + ".copy", O_CREAT | O_TRUNC | O_WRONLY, 0644);
            for (std::size_t written = 0; written < size;) {
                written += out.write(dev, size - written, static_cast<off_t>(written), static_cast<off_t>(written));
            }
        }
        if (hipFree(dev) != hipSuccess) {
            return 1;
        }
        std::printf("ok: %zu bytes read, verified and written back\n", size);
    }
    catch (const hipfile::Error &e) {
        std::fprintf(stderr, "hipfile: %s (code %d, errno %d, HIP error %d)\n", e.what(), e.code(), e.sys_errno(),
                     e.hip_error());
        return 1;
    }
    return 0;
}
