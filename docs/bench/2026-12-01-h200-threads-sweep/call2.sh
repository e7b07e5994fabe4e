# One caller's reads of a warm 4 GiB file in calls of one size, against the staging chunk
# (HIPFILE_BOUNCE_CHUNK_KIB caps the chunk a request alone is cut into; default 4096, a 16 MiB
# call alone is cut into 512 KiB chunks, 64 MiB into 2 MiB), 16 threads, 612ecf4's `hipfile
# bench`. One call on the H200.
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
for io in 16M 64M; do for c in 128 256 512 1024 4096; do
  echo -n "read io $io chunk ${c}K: "; HIPFILE_BOUNCE_CHUNK_KIB=$c p --mode read --io-size $io
done; done
for c in 256 512 1024; do
  echo -n "batch 128 x 1M chunk ${c}K: "; HIPFILE_BOUNCE_CHUNK_KIB=$c p --mode randread --io-size 1M --count 128 --batch 128
done
