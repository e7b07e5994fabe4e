"""How fast buffered writes fill the page cache: THREADS threads each writing PER_MIB MiB with
pwrite, into one file (each its own range) or into a file each (GB/s over all; the page cache
written back and dropped before each; files removed after):

    python3 write_probe.py DIR [--threads 1,4,16] [--per-mib 256]
"""

import argparse
import json
import os
import threading
import time

from save_bench import drop  # the page cache written back and dropped (as root)


def run(directory, threads, per, one_file):
    drop()
    block = os.urandom(4 << 20)
    paths = [os.path.join(directory, "probe.bin" if one_file else f"probe{i}.bin") for i in range(threads)]
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for p in dict.fromkeys(paths)]
    fd_of = (lambda i: fds[0]) if one_file else (lambda i: fds[i])

    def writer(i):
        base = i * per if one_file else 0
        for at in range(0, per, len(block)):
            os.pwrite(fd_of(i), block, base + at)

    start = time.perf_counter()
    workers = [threading.Thread(target=writer, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    seconds = time.perf_counter() - start
    for fd in fds:
        os.close(fd)
    for p in dict.fromkeys(paths):
        os.unlink(p)
    return round(threads * per / seconds / 1e9, 2)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--threads", default="1,4,16")
    p.add_argument("--per-mib", type=int, default=256)
    a = p.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    for n in (int(x) for x in a.threads.split(",")):
        one = run(a.dir, n, a.per_mib << 20, True)
        many = run(a.dir, n, a.per_mib << 20, False)
        print(json.dumps({"threads": n, "one file GB/s": one, "a file each GB/s": many}), flush=True)


if __name__ == "__main__":
    main()
