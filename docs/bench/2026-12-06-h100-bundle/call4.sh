#!/usr/bin/env bash
# Call 4: the cold paired rounds as the harness now pairs them (each side the best of three
# cold runs), and the random rounds again, on the bundle's hipfile.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/kv
B=target/gpu-bench
F=/root/hf-bench/data.bin
mkdir -p /root/hf-bench
[ -e $F ] || $B/hipfile bench --file $F --size 4G --mode read --runs 1 --no-verify > /dev/null
H="python3 xtask/gpu-bench/harness.py --record $OUT/harness.jsonl"
timeout 400 $H cold --hipfile $B/hipfile --file $F --rounds 5 --profile 2>&1 | cut -c1-200
