# One caller's reads of a warm 4 GiB file in calls of one size, against the threads a request
# uses (HIPFILE_BOUNCE_THREADS), 612ecf4's `hipfile bench` (release); GB/s best of 5, with the
# bounce profile's split of lane time. One call on the H200.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=target/devbin/old/hipfile
F=/root/hb.bin
p() { $B bench --file $F --size 4G --json --no-verify --runs 5 --profile "$@" 2>/dev/null > $OUT/tmp.json
  python3 - "$OUT/tmp.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
b = r["profile"]["bounce"]
lane = b["file_ns"] + b["copy_wait_ns"] + b["lane_wait_ns"]
print("%7.2f GB/s  file %4.1f%%  copy wait %4.1f%%  chunks/run %d" % (r["best_gbps"], 100 * b["file_ns"] / lane, 100 * b["copy_wait_ns"] / lane, b["chunks"] // len(r["run_gbps"])))
PY
}
for io in 4M 16M 64M; do for t in 4 8 12 16; do
  echo -n "read io $io threads $t: "; HIPFILE_BOUNCE_THREADS=$t p --mode read --io-size $io
done; done
for t in 8 12 16; do
  echo -n "batch 128 x 1M threads $t: "; HIPFILE_BOUNCE_THREADS=$t p --mode randread --io-size 1M --count 128 --batch 128
done
