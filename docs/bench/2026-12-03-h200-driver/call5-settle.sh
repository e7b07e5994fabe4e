#!/usr/bin/env bash
# Whether the futures' first measurements pay for staging still being set up after the driver
# opens: python_bench.py --futures-only with no wait (as before) and with 0.5 s between
# opening and the first timed run, alternated, the new wheel, beside KvikIO (16 threads).
set -u
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh target/gpu-run/drv2/hipfile
python3 -m pip install -q --no-index --no-deps --target /tmp/hf_new target/gpu-run/wheel-new/*.whl 2>&1 | tail -1
futures='import json,sys; d=json.load(open(sys.argv[1])); p="hipfile 128 random 1MiB futures"; k=d["kvikio t=16 128 random 1MiB futures"]; print(" | ".join("%s %.2f (%.2fx)" % (n[len(p):] or " one array", v, v / k) for n, v in d.items() if n.startswith(p)), "| kvikio", k)'
for r in 1 2 3 4; do for s in 0 0.5; do
  PYTHONPATH=/tmp/hf_new:/tmp/kv timeout 120 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 3 --kvikio --futures-only --settle $s > /tmp/f.json 2>&1
  echo "$r settle=$s: $(python3 -c "$futures" /tmp/f.json 2>&1 | tail -1)"
done; done 2>&1 | tee $OUT/settle.txt
