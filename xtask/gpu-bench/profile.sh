#!/usr/bin/env bash
# A short profiled run of the cold and random comparisons beside KvikIO (same call, same file).
set -euo pipefail
B=target/gpu-bench
DATA=/root/hf-bench/data.bin
mkdir -p /root/hf-bench "$OUT"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/*.whl
export PYTHONPATH=$PWD/.pysite
python3 $B/kvikio_baseline.py --file "$DATA" --size-gib 4 --threads 4,16 --runs 2 --cold --random 128 --json "$OUT/peers.json" | grep -E "cold|randread"
H="$B/hipfile bench --file $DATA --size 4G --profile"
$H --mode read --cold --runs 2
$H --mode randread --io-size 1M --count 128 --threads 16 --runs 3
$H --mode read --runs 3
