#!/usr/bin/env bash
# Runs on the GPU machine, from the project root: two builds (say, before and after a change) on
# the same files, ROUNDS times, the order swapped every round, each measure in a fresh process;
# GB/s best of 3 runs each. MODES picks among:
#   warm, cold, write, randread  the `hipfile` binaries OLD and NEW on a 4 GiB file: a warm read,
#                                a cold read, a durable write, 128 random 1 MiB reads from 16 threads
#   python                       the Python packages in PY_OLD and PY_NEW (directories put first on
#                                PYTHONPATH): python_bench.py on that file (whole into CuPy and
#                                PyTorch; 128 random 1 MiB futures into one array, CuPy and PyTorch
#                                slices; one batch), PyTorch and CuPy installed on the machine
#   load_file                    hipfile.safetensors.load_file of CKPT (made by load_bench.py's
#                                make_checkpoint, 8.6 GB, if missing), warm, into cuda:0
#   bash xtask/gpu-bench/ab.sh OLD_HIPFILE NEW_HIPFILE     (PY_OLD=... PY_NEW=... for the Python modes)
set -euo pipefail
OLD=$1
NEW=$2
DATA=${HIPFILE_BENCH_DIR:-/root/hf-bench}/data.bin
CKPT=${CKPT:-/root/ckpt/model.safetensors}
ROUNDS=${ROUNDS:-2}
MODES=${MODES:-"warm cold write randread"}
HERE=$(dirname "$0")
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$(dirname "$DATA")" "$(dirname "$CKPT")"
best() {
    "$@" --file "$DATA" --size 4G --json --no-verify --runs 3 2>/dev/null |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'
}
python_figures() {
    PYTHONPATH=$1 python3 "$HERE/python_bench.py" "$DATA" --size-gib 4 --runs 3 | python3 -c '
import json, sys
r = json.load(sys.stdin)
short = {"read into cupy": "cupy", "read into torch": "torch", "128 random 1MiB futures": "futures",
         "128 random 1MiB futures, torch slices": "torch_slices",
         "128 random 1MiB futures, cupy slices": "cupy_slices", "128 random 1MiB batch": "batch"}
print(" ".join(v + " " + str(r["hipfile " + k]) for k, v in short.items()))'
}
load_file() {
    PYTHONPATH=$1 python3 - "$CKPT" <<'PY'
import os, sys, time, torch, hipfile.safetensors as hs
path = sys.argv[1]
hs.load_file(path, device="cuda:0")  # warm: the page cache and the driver
times = []
for _ in range(3):
    start = time.perf_counter()
    tensors = hs.load_file(path, device="cuda:0")
    torch.cuda.synchronize()
    times.append(time.perf_counter() - start)
    del tensors
print(round(os.path.getsize(path) / min(times) / 1e9, 2))
PY
}
measure() {
    local line="$2:"
    for mode in $MODES; do
        case $mode in
            warm) line="$line warm $(best "$1" bench --mode read)" ;;
            cold) line="$line cold $(best "$1" bench --mode read --cold)" ;;
            write) line="$line write $(best "$1" bench --mode write)" ;;
            randread) line="$line randread $(best "$1" bench --mode randread --io-size 1M --count 128 --threads 16)" ;;
            python) line="$line $(python_figures "$4")" ;;
            load_file) line="$line load_file $(load_file "$4")" ;;
        esac
    done
    echo "round $3 $line"
}
if [[ " $MODES " == *" load_file "* && ! -e $CKPT ]]; then
    PYTHONPATH=${PY_NEW:-} python3 -c "import sys; sys.path.insert(0, '$HERE'); import load_bench; load_bench.make_checkpoint('$CKPT', 8.6, 32)"
fi
for round in $(seq "$ROUNDS"); do
    if [ $((round % 2)) = 1 ]; then
        measure "$OLD" old "$round" "${PY_OLD:-}"
        measure "$NEW" new "$round" "${PY_NEW:-}"
    else
        measure "$NEW" new "$round" "${PY_NEW:-}"
        measure "$OLD" old "$round" "${PY_OLD:-}"
    fi
done
