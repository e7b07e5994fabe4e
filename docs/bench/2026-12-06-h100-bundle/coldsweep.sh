#!/usr/bin/env bash
# Cold 4 GiB reads: hipfile bench under several bounce settings beside KvikIO (16 threads, its
# best cold count in call 1), each run after the page cache is dropped, 2 rounds in turned order.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export PYTHONPATH=/tmp/hf:/tmp/kv
B=target/gpu-bench
F=/root/hf-bench/data.bin
settings=("default" "HIPFILE_BOUNCE_THREADS=16" "HIPFILE_BOUNCE_THREADS=32" "HIPFILE_BOUNCE_CHUNK_KIB=8192"
          "HIPFILE_PAGE_CACHE=bypass" "HIPFILE_PAGE_CACHE=bypass HIPFILE_BOUNCE_DIRECT_STREAMS=16"
          "HIPFILE_PAGE_CACHE=bypass HIPFILE_BOUNCE_DIRECT_STREAMS=32" "HIPFILE_BOUNCE_DEMOTE=false")
kv() {
  sync; echo 3 > /proc/sys/vm/drop_caches
  python3 - "$F" <<'PY'
import sys, time, os, cupy as cp, kvikio, kvikio.defaults
kvikio.defaults.set("num_threads", 16)
f = sys.argv[1]; n = os.path.getsize(f); dev = cp.empty(n, dtype=cp.uint8)
t = time.perf_counter()
with kvikio.CuFile(f, "r") as h: assert h.read(dev) == n
cp.cuda.runtime.deviceSynchronize(); print(f"{n / (time.perf_counter() - t) / 1e9:.2f}")
PY
}
ours() { env $1 $B/hipfile bench --file $F --size 4G --mode read --cold --runs 1 --no-verify --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
for r in 1 2; do
  echo "round $r kvikio16: $(KVIKIO_COMPAT_MODE=ON kv)"
  if [ $r = 1 ]; then order=$(seq 0 $((${#settings[@]}-1))); else order=$(seq $((${#settings[@]}-1)) -1 0); fi
  for i in $order; do s=${settings[$i]}; [ "$s" = default ] && s="X=1"; echo "round $r ${settings[$i]}: $(ours "$s")"; done
  echo "round $r kvikio16: $(KVIKIO_COMPAT_MODE=ON kv)"
done
