#!/usr/bin/env bash
# The futures measured in rotated turns (python_bench.py --rotate: one array, PyTorch slices,
# the array registered, KvikIO's 16 threads; one run each per round, the order rotated, best of
# 8 rounds), four processes: does the registered array's lead follow its place in the order?
set -u
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh target/gpu-run/drv2/hipfile
python3 -m pip install -q --no-index --no-deps --target /tmp/hf_new target/gpu-run/wheel-new/*.whl 2>&1 | tail -1
futures='import json,sys; d=json.load(open(sys.argv[1])); p="hipfile 128 random 1MiB futures"; k=d["kvikio t=16 128 random 1MiB futures"]; print(" | ".join("%s %.2f (%.2fx)" % (n[len(p):] or " one array", v, v / k) for n, v in d.items() if n.startswith(p)), "| kvikio", k)'
for r in 1 2 3 4; do
  PYTHONPATH=/tmp/hf_new:/tmp/kv timeout 100 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 8 --futures-only --rotate > /tmp/f.json 2>&1
  echo "$r: $(python3 -c "$futures" /tmp/f.json 2>&1 | tail -1)"
done 2>&1 | tee $OUT/rotate.txt
