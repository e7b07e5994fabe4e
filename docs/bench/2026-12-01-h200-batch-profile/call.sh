# Where a batch of random 1 MiB reads spends its time, against other shapes of the same
# reads (612ecf4's `hipfile bench`, release, --profile: the bounce counters' growth over the
# runs). One call on the H200, the 4 GiB file warm.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=target/devbin/old/hipfile
F=/root/hb.bin
p() { echo "== $*"; $B bench --file $F --size 4G --json --no-verify --runs 5 --profile "$@" 2>/dev/null > $OUT/tmp.json
  python3 - "$OUT/tmp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["results"][0]
b = r["profile"]["bounce"]
runs = len(r["run_gbps"])
moved = r["bytes_per_run"] * runs
print("best", r["best_gbps"], "runs", r["run_gbps"])
print("bounce", json.dumps(b))
if b["file_ns"]:
    print("per lane: file GB/s %.2f; file %.1f%% copy wait %.1f%% lane wait %.1f%% of lane time; chunks/run %d" % (
        moved / b["file_ns"], 100 * b["file_ns"] / (b["file_ns"] + b["copy_wait_ns"] + b["lane_wait_ns"]),
        100 * b["copy_wait_ns"] / (b["file_ns"] + b["copy_wait_ns"] + b["lane_wait_ns"]),
        100 * b["lane_wait_ns"] / (b["file_ns"] + b["copy_wait_ns"] + b["lane_wait_ns"]), b["chunks"] // runs))
PY
}
cat /proc/cpuinfo | grep -m1 "model name"; numactl -H 2>/dev/null | head -3; lscpu | grep -i "numa\|socket\|thread" ; df -T /root | tail -1
p --mode randread --io-size 1M --count 128 --batch 128
p --mode randread --io-size 4M --count 32 --batch 32
p --mode randread --io-size 256K --count 128 --batch 128
p --mode randread --io-size 1M --count 128 --threads 16
p --mode read
p --mode read --io-size 16M
# The page cache alone: 16 threads preading into their own host buffers (no GPU), random 1 MiB
# reads at 1 MiB multiples against 4 MiB reads in file order, the same file.
python3 - $F <<'PY'
import os, random, sys, threading, time
path = sys.argv[1]
fd = os.open(path, os.O_RDONLY)
size = os.fstat(fd).st_size
def run(io, per_thread, rand, threads=16, reps=5):
    best = 0
    for rep in range(reps):
        rng = random.Random(rep)
        plans = [[(rng.randrange(size // io) * io) if rand else ((t * per_thread + i) * io) % size for i in range(per_thread)] for t in range(threads)]
        bufs = [bytearray(io) for _ in range(threads)]
        def go(t):
            for off in plans[t]:
                os.preadv(fd, [bufs[t]], off)
        ths = [threading.Thread(target=go, args=(t,)) for t in range(threads)]
        t0 = time.perf_counter()
        [x.start() for x in ths]; [x.join() for x in ths]
        dt = time.perf_counter() - t0
        best = max(best, threads * per_thread * io / dt / 1e9)
    return round(best, 2)
print("page cache, 16 threads: random 1M x8 each", run(1 << 20, 8, True),
      "| random 1M x64 each", run(1 << 20, 64, True),
      "| in order 4M x64 each", run(4 << 20, 64, False),
      "| 1 thread random 1M x128", run(1 << 20, 128, True, threads=1),
      "| 1 thread in order 4M x64", run(4 << 20, 64, False, threads=1))
PY
