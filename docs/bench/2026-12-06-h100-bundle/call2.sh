#!/usr/bin/env bash
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --target /tmp/hf target/wheels/hipfile-*.whl 2>&1 | tail -1
mkdir -p /root/hf-bench
[ -e /root/hf-bench/data.bin ] || target/gpu-bench/hipfile bench --file /root/hf-bench/data.bin --size 4G --mode read --runs 1 --no-verify > /dev/null
echo "== cold sweep"
timeout 220 bash .run/coldsweep.sh
bash .run/callers.sh
