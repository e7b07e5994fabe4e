#!/usr/bin/env bash
# Slots for as many callers as the device has CPUs, whatever a request's threads: the landed
# build (old: threads + 8 slots) against the new, alternated, 16 callers with one thread a
# request (HIPFILE_BOUNCE_THREADS=1, what parallel I/O off gives) and with the default; then
# Python futures into slices beside KvikIO.
set -u
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh target/gpu-run/drv2/hipfile
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print("best", r["best_gbps"], "mean", r["mean_gbps"], "cpu_s/GB", r["cpu_s_per_gb"])'
for r in 1 2 3; do for b in drv drv2; do
  for s in "1 1M 128" "1 4K 64000" "1 64K 32000" "0 1M 128"; do set -- $s
    echo "$r $b threads=$1 $2 x 16: $(HIPFILE_BOUNCE_THREADS=$1 timeout 60 target/gpu-run/$b/hipfile bench --file $F --size 4G --mode randread --threads 16 --io-size $2 --count $3 --runs 5 --no-verify --json | python3 -c "$summary")"
  done
done; done 2>&1 | tee $OUT/slots.txt
# Python futures into slices, paired rounds beside KvikIO (16 threads), the new build's wheel.
python3 -m pip install -q --no-index --no-deps --target /tmp/hf_new target/gpu-run/wheel/*.whl 2>&1 | tail -1
futures='import json,sys; d=json.load(open(sys.argv[1])); p="hipfile 128 random 1MiB futures"; k=d["kvikio t=16 128 random 1MiB futures"]; print(" | ".join("%s %.2f (%.2fx)" % (n[len(p):] or " one array", v, v / k) for n, v in d.items() if n.startswith(p)), "| kvikio", k)'
for r in 1 2 3 4 5; do
  PYTHONPATH=/tmp/hf_new:/tmp/kv timeout 120 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 3 --kvikio --futures-only > $OUT/futures-$r.json 2>&1
  echo "$r: $(python3 -c "$futures" $OUT/futures-$r.json 2>&1 | tail -1)"
done 2>&1 | tee $OUT/futures.txt
