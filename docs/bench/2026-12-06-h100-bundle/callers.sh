#!/usr/bin/env bash
# Call 2: many callers from Python threads and futures, hipfile (HEAD's wheel, built on a fresh
# clone) beside KvikIO in the same process / paired rounds.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --target /tmp/hf target/wheels/hipfile-*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/hf:/tmp/kv
B=target/gpu-bench
F=/root/hf-bench/data.bin
mkdir -p /root/hf-bench
[ -e $F ] || $B/hipfile bench --file $F --size 4G --mode read --runs 1 --no-verify > /dev/null
H="python3 $B/harness.py --record $OUT/harness.jsonl"
echo "== small: 4 KiB from 1 and 16 threads, 64 KiB from 16, KvikIO beside"
timeout 200 $H small --hipfile $B/hipfile --file $F --rounds 2 --kvikio 2>&1 | tail -5
echo "== futures: 128 random 1 MiB reads, rotated turns with KvikIO's"
timeout 120 $H python $F --kvikio --futures-only --rotate --runs 3 2>&1 | tail -5
