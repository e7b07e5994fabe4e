#!/usr/bin/env bash
# Runs on the GPU machine, from the project root: two `hipfile` binaries (say, before and after a
# change) on the same 4 GiB file, ROUNDS times, the order swapped every round: warm read, cold
# read, durable write and 128 random 1 MiB reads from 16 threads (MODES picks some), GB/s best of
# 3 runs each.
#   bash target/gpu-bench/ab.sh target/gpu-bench/hipfile-old target/gpu-bench/hipfile
set -euo pipefail
OLD=$1
NEW=$2
DATA=${HIPFILE_BENCH_DIR:-/root/hf-bench}/data.bin
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-"warm cold write randread"}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$(dirname "$DATA")"
best() {
    "$@" --file "$DATA" --size 4G --json --no-verify --runs 3 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'
}
measure() {
    local line="$2:"
    for mode in $MODES; do
        case $mode in
            warm) line="$line warm $(best "$1" bench --mode read)" ;;
            cold) line="$line cold $(best "$1" bench --mode read --cold)" ;;
            write) line="$line write $(best "$1" bench --mode write)" ;;
            randread) line="$line randread $(best "$1" bench --mode randread --io-size 1M --count 128 --threads 16)" ;;
        esac
    done
    echo "round $3 $line"
}
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
        measure "$OLD" old "$round"
        measure "$NEW" new "$round"
    else
        measure "$NEW" new "$round"
        measure "$OLD" old "$round"
    fi
done
