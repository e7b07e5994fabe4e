#!/bin/bash
# Statistics on the GPU machine: what counting costs on its CPU (the criterion bench
# hipfile/benches/stats.rs, 8 threads over the mock GPU), for each bench binary placed in the
# bundle as stats-NAME (for example the code before statistics and after), in turns; then the
# statistics C program over CUDA's runtime on the bounce path.
#   bash target/gpu-bench/stats.sh [ROUNDS]
set -u
B=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${1:-2}
cd "${OUT:-/tmp}"
for round in $(seq "$ROUNDS"); do
    for bin in "$B"/stats-*; do
        echo "== $(basename "$bin") (round $round)"
        "$bin" --bench --warm-up-time 1 --measurement-time 3 2>&1 | grep -E "paired|time:|^read" | grep -v "%"
    done
done
mkdir -p /root/hf-bench
for backend in bounce auto; do
    echo "== stats_cuda, HIPFILE_BACKEND=$backend"
    HIPFILE_BACKEND=$backend HIPFILE_STATS_LEVEL=3 "$B/stats_cuda" /root/hf-bench bounce
done
