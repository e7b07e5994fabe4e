#!/usr/bin/env bash
# Runs on the two-GPU machine: warm 2 GiB reads into both GPUs at once (and device 0 alone) over
# staging chunk sizes and threads per device, best of 3 runs each (HIPFILE_BOUNCE_CHUNK_KIB,
# HIPFILE_BOUNCE_THREADS). CHUNKS, THREADS and DEVICES pick the grid.
set -uo pipefail
B=target/gpu-bench
D=${HIPFILE_BENCH_DIR:-/root/hf-bench}
mkdir -p "$D"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
H="$B/hipfile bench --file $D/data2g.bin --size 2G --mode read --no-verify --json"
$H --runs 1 > /dev/null 2>&1
g() { python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["run_gbps"])'; }
for devices in ${DEVICES:-0,1 0}; do
    for c in ${CHUNKS:-4096 2048 1024 512}; do
        for t in ${THREADS:-16 12 8 24}; do
            r=$(HIPFILE_BOUNCE_CHUNK_KIB=$c HIPFILE_BOUNCE_THREADS=$t $H --runs 3 --devices "$devices" 2>"$D/err" | g)
            echo "devices $devices chunk ${c}K threads $t: ${r:-failed: $(tail -1 "$D/err")}"
        done
    done
done
