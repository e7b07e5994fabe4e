#!/usr/bin/env bash
# Runs on the GPU machine, from the project root (what `cargo xtask gpu-bench` prepared is in
# target/gpu-bench, the peer's wheels in .whl): the peer baseline (KvikIO: harness.py whole) and
# `hipfile bench` on the same 4 GiB file, then prints the comparison (harness.py compare) and
# paired rounds where it is close (harness.py random, cold). Results land in $OUT (or
# target/gpu-bench/out).
set -euo pipefail
. "$(dirname "$0")/env.sh"

{ nvidia-smi -L; uname -r; nproc; } > "$OUT/machine.txt" 2>&1 || true
cat "$OUT/machine.txt"

echo "== the C ABI over CUDA"
$B/capi_cuda "$(dirname "$DATA")/capi.bin"

echo "== sanity: hipfile bench with no options"
$B/hipfile bench

python3 -m pip install -q --no-index --no-deps --target .pysite .whl/*.whl
export PYTHONPATH=$PWD/.pysite
echo "== peers (KvikIO compat mode)"
python3 $BASELINE --file "$DATA" --size-gib 4 --threads 1,4,16 --cold --write --random 128 \
    --raw-disk --json "$OUT/peers.json"

echo "== hipfile"
H="$B/hipfile bench --file $DATA --size 4G --json"
$H --mode read --runs 3 --profile > "$OUT/ours-read.json"
$H --mode read --runs 3 --cold --profile > "$OUT/ours-read-cold.json"
$H --mode write --runs 3 > "$OUT/ours-write.json"
$H --mode randread --io-size 1M --count 128 --threads 16 --runs 3 --profile > "$OUT/ours-randread.json"
for t in 1 4 16; do
    HIPFILE_BOUNCE_THREADS=$t $H --mode read --runs 3 > "$OUT/ours-read-t$t.json"
done
python3 $B/harness.py compare "$OUT"

echo "== paired rounds, where the comparison is close"
python3 $B/harness.py random --hipfile $B/hipfile --file "$DATA" --rounds 5 --json "$OUT/rounds-randread.json"
python3 $B/harness.py cold --hipfile $B/hipfile --file "$DATA" --rounds 3 --json "$OUT/rounds-cold.json"
