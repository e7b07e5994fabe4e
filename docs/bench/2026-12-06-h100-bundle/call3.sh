#!/usr/bin/env bash
# Call 3: the fresh clone's wheel as cuFile's clients reach it in a PyTorch process: the one
# documented step (python -m hipfile.cufile use), torch.cuda.gds and KvikIO (KVIKIO_COMPAT_MODE=OFF)
# over ours; KvikIO over NVIDIA's cuFile (compat mode, no GDS module) before the step, for the
# figure users have today; NVIDIA's files restored at the end.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
python3 -m pip install -q --no-index --no-deps --target /tmp/hf target/wheels/hipfile-*.whl 2>&1 | tail -1
export PYTHONPATH=/tmp/hf:/tmp/kv
B=target/gpu-bench
F=/root/hf-bench/data.bin
mkdir -p /root/hf-bench /root/gds
[ -e $F ] || $B/hipfile bench --file $F --size 4G --mode read --runs 1 --no-verify > /dev/null
H="python3 $B/harness.py --record $OUT/harness.jsonl"
echo "== KvikIO over NVIDIA's cuFile (compat mode)"
KVIKIO_COMPAT_MODE=ON timeout 90 $H cufile kvikio $F --runs 3 2>&1 | tail -3
echo "== the step"
python3 -m hipfile.cufile use 2>&1 | tail -5
python3 -m hipfile.cufile status 2>&1 | tail -5
echo "== KvikIO over ours (KVIKIO_COMPAT_MODE=OFF)"
KVIKIO_COMPAT_MODE=OFF timeout 90 $H cufile kvikio $F --runs 3 2>&1 | tail -3
echo "== torch.cuda.gds over ours"
timeout 200 $H cufile gds /root/gds --size-gb 2 2>&1 | tail -8
python3 -m hipfile.cufile restore 2>&1 | tail -3
python3 -m hipfile.cufile status 2>&1 | tail -3
