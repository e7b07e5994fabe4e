#!/usr/bin/env bash
# Runs on the two-GPU machine (`nvidia-h200-x2`), from the project root, with target/gpu-bench and
# .whl carried (after `cargo xtask gpu-bench`): every GPU of the host.
#  1. the machine: GPUs, their NUMA nodes, CPUs;
#  2. the C ABI over CUDA with memory of either device whatever device is current
#     (hipfile-capi/tests/c/devices.c), auto and bounce;
#  3. the ceiling: pinned host memory copied to one GPU and to both at once (harness.py ceiling);
#  4. hipfile bench on a warm 2 GiB file into device 0 alone, device 1 alone, both at once
#     (ROUNDS rounds, best of 3 runs each), then the peer (KvikIO) the same ways (harness.py devices);
#  5. the first call: a 4 GiB read in a fresh process, each run's GB/s (HIPFILE_LOG=debug says
#     when the staging set up at open was ready).
# Results in $OUT (or target/gpu-bench/out).
set -uo pipefail
B=target/gpu-bench
OUT=${OUT:-$B/out}
D=${HIPFILE_BENCH_DIR:-/root/hf-bench}
ROUNDS=${ROUNDS:-3}
mkdir -p "$OUT" "$D"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

{
    nvidia-smi -L
    nproc
    lscpu | grep -i numa
    for g in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do
        id=${g,,}
        echo "$g numa_node $(cat /sys/bus/pci/devices/${id:4}/numa_node 2>/dev/null || echo '?')"
    done
    nvidia-smi topo -m
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"

echo "== memory of either device, whatever device is current (C ABI over CUDA)"
head -c $((3 << 20)) /dev/urandom > "$D/devices.in"
for backend in auto bounce; do
    HIPFILE_BACKEND=$backend $B/devices_cuda "$D/devices.in" "$D/devices.out" && echo "devices_cuda $backend: ok"
done

echo "== pinned host -> GPU ceiling"
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/*.whl
export PYTHONPATH=$PWD/.pysite
python3 $B/harness.py ceiling --devices 0,1 --size-gib 2 > "$OUT/ceiling.txt" 2>&1
cat "$OUT/ceiling.txt"

echo "== hipfile, warm 2 GiB, alone and both at once"
H="$B/hipfile bench --file $D/data2g.bin --size 2G --mode read --runs 3 --no-verify --json"
$H --devices 0 > /dev/null  # creates the file and warms it
gbps() { python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["run_gbps"])'; }
for round in $(seq "$ROUNDS"); do
    for devs in 0 1 0,1; do
        echo "round $round devices $devs: $($H --devices $devs | tee "$OUT/ours-$devs-$round.json" | gbps)"
    done
done

echo "== KvikIO, the same file"
python3 $B/harness.py devices --file "$D/data2g.bin" --devices 0,1 --threads 16,32 --runs 5 > "$OUT/kvikio.txt" 2>&1
cat "$OUT/kvikio.txt" | grep -v '^{'

echo "== first call: 4 GiB in a fresh process"
$B/hipfile bench --file "$D/data4g.bin" --size 4G --mode read --runs 1 --no-verify > /dev/null
for i in 1 2 3; do
    HIPFILE_LOG=debug $B/hipfile bench --file "$D/data4g.bin" --size 4G --mode read --runs 3 --no-verify --json \
        2> "$OUT/first-$i.log" | tee "$OUT/first-$i.json" | gbps
    grep -h 'staging of device' "$OUT/first-$i.log" || true
done
