#!/usr/bin/env bash
# Call 1: the bundle as `cargo xtask gpu-bench` made it on a fresh clone (HEAD), run as its
# README says: bash target/gpu-bench/run.sh (results in $OUT).
set -u
date -u +%FT%TZ
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
start=$(date +%s)
bash target/gpu-bench/run.sh 2>&1 | tail -80
echo "run.sh: $(( $(date +%s) - start )) s"
