#!/usr/bin/env bash
# What a pointer query costs alone and while 8 or 16 threads copy (query_probe.c); then Python
# futures into one array and into slices beside KvikIO (16 threads), paired rounds alternating
# the wheel without (old) and with (new) one query per allocation per batch submission.
set -u
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh target/gpu-run/drv2/hipfile
gcc -O2 -I/usr/local/cuda/include -o /tmp/query xtask/gpu-bench/query_probe.c -L/usr/local/cuda/lib64 \
    -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread || exit 1
timeout 120 /tmp/query 2>&1 | tee $OUT/query.txt
for w in old new; do python3 -m pip install -q --no-index --no-deps --target /tmp/hf_$w target/gpu-run/wheel-$w/*.whl 2>&1 | tail -1; done
futures='import json,sys; d=json.load(open(sys.argv[1])); p="hipfile 128 random 1MiB futures"; k=d["kvikio t=16 128 random 1MiB futures"]; print(" | ".join("%s %.2f (%.2fx)" % (n[len(p):] or " one array", v, v / k) for n, v in d.items() if n.startswith(p)), "| kvikio", k)'
for r in 1 2 3 4 5; do for w in old new; do
  PYTHONPATH=/tmp/hf_$w:/tmp/kv timeout 120 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 3 --kvikio --futures-only > $OUT/futures-$w-$r.json 2>&1
  echo "$r $w: $(python3 -c "$futures" $OUT/futures-$w-$r.json 2>&1 | tail -1)"
done; done 2>&1 | tee $OUT/futures.txt
