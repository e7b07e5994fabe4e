#!/usr/bin/env bash
# The two-GPU runs in one call (a machine of two GPUs or more, `nvidia-h200-x2`), from the
# project root, with target/gpu-bench (`cargo xtask gpu-bench`), .whl (KvikIO's
# wheels), WHEEL (a directory holding this build's Python wheel) and DIST (`cargo xtask dist`'s
# directory, for lib/cufile/libcufile.so.0) carried:
#  1. every GPU of the host: multi.sh (the C program over either device, hipfile bench into each
#     GPU and both at once, KvikIO beside);
#  2. read-once loading over NCCL: a cold 9 GB checkpoint, 2 ranks (a GPU each) against 1, every
#     tensor bitwise on every rank, the block devices' bytes (harness.py group);
#  3. DCP over NCCL: 2 ranks saving and loading their GPUs' tensors, beside PyTorch's storage,
#     and 1 rank (harness.py dcp);
#  4. KvikIO and torch.cuda.gds over our libcufile.so.0 into device 1 while device 0 is current
#     (harness.py cufile elsewhere).
# Results in $OUT (or target/gpu-bench/out). A dry run on one GPU: PARTS="2 3" RANKS=1 (the parts
# to run, and the rank counts of parts 2 and 3; by default all four parts, 1 and 2 ranks).
set -uo pipefail
PARTS=${PARTS:-1 2 3 4}
RANKS=${RANKS:-1 2}
part() { [[ " $PARTS " == *" $1 "* ]]; }
G=$PWD/xtask/gpu-bench
OUT=${OUT:-target/gpu-bench/out}
D=${HIPFILE_BENCH_DIR:-/root/hf-bench}
mkdir -p "$OUT" "$D"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

if part 1; then
    echo "== 1. every GPU of the host"
    OUT=$OUT/multi bash "$G/multi.sh"
fi

python3 -m pip install -q --no-index --no-deps --target /tmp/hf "${WHEEL:?a directory with the Python wheel}"/*.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl
export PYTHONPATH=/tmp/hf:/tmp/kv:$G
ranks() { torchrun --standalone --nproc-per-node "$@"; }

if part 2; then
    echo "== 2. read-once loading over NCCL, a cold 9 GB checkpoint"
    python3 -c "from benchlib import make_checkpoint; make_checkpoint('$D/ckpt9.safetensors', 9, 32)"
    for n in $RANKS; do
        ranks $n "$G/harness.py" group "$D/ckpt9.safetensors" --backend cpu:gloo,cuda:nccl --devices own 2>&1 |
            tee "$OUT/group-$n.txt"
    done
fi

if part 3; then
    echo "== 3. DCP over NCCL, from the GPUs' memory"
    for n in $RANKS; do
        ranks $n "$G/harness.py" dcp "$D/dcp" --devices own --rounds 2 2>&1 | grep '^{' | tee "$OUT/dcp-$n.txt"
    done
fi

if part 4; then
    echo "== 4. into device 1 while device 0 is current, over our libcufile.so.0"
    # Part 1 makes the file; alone, this part makes it.
    [ -s "$D/data2g.bin" ] || head -c $((2 << 30)) /dev/urandom > "$D/data2g.bin"
    LD_PRELOAD=$PWD/${DIST:?cargo xtask dist\'s directory}/lib/cufile/libcufile.so.0 \
        python3 "$G/harness.py" cufile elsewhere "$D/data2g.bin" 2>&1 | tee "$OUT/elsewhere.json"
fi
