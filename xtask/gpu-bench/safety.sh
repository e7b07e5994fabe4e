#!/usr/bin/env bash
# Runs on the GPU machine, from the project root (after `cargo xtask gpu-bench`): the data-safety
# program of the C tests over CUDA: 48 MiB reads (cold page cache) and writes under SIGALRM at
# 1 and 10 kHz, a handle that keeps its file when the caller reuses the descriptor number,
# O_APPEND, nothing written to a reused fd 2, and closing the driver under load from 256 threads.
# (fork is left out: CUDA does not work in a child of a process that used it.)
set -euo pipefail
B=target/gpu-bench
D=${HIPFILE_BENCH_DIR:-/root/hf-bench}/safety
mkdir -p "$D"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
S=$B/safety_cuda
for hz in 1000 10000; do
    $S signals "$D/in" "$D/out" $hz 3
done
$S reuse "$D/a" "$D/b"
$S append "$D/append"
$S opath "$D/opath"
$S quiet "$D/quiet"
HIPFILE_BOUNCE_CHUNK_KIB=64 $S resources "$D/res" 256
rm -rf "$D"
