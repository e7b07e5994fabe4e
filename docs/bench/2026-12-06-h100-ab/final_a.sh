# issue 61: the data path, old (0bc54c1) and new (HEAD) alternated on one machine; the C path
# (libcufile -> libhipfile's dispatch table) by a cuFile batch and KvikIO over each.
set -u
cd "$(dirname "$0")"
for b in old new; do rm -rf ab$b; tar -xJf $b.tar.xz; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
pip install -q --no-index --find-links ../.whl kvikio-cu13 2>&1 | tail -1
H=../xtask/gpu-bench/harness.py
D=/root/hf-bench/data.bin; mkdir -p /root/hf-bench
nvidia-smi --query-gpu=name --format=csv,noheader
echo "== ab: the hipfile binaries"
timeout 300 python3 $H --record $OUT/ab.jsonl ab $PWD/abold/hipfile $PWD/abnew/hipfile --modes "warm cold write randread" --rounds 2 --data $D 2>&1 | tail -8
echo "== the C path: a cuFile batch (128 random 1 MiB) and KvikIO (whole file), over each build's libcufile"
for r in 1 2; do
  if [ $r = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    echo "round $r $b"
    LD_PRELOAD=$PWD/ab$b/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 60 python3 $H --record $OUT/c_$b.jsonl cufile batch $D --runs 5 2>&1 | tail -1 | cut -c1-200
    LD_PRELOAD=$PWD/ab$b/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 90 python3 $H --record $OUT/c_$b.jsonl cufile kvikio $D --runs 3 2>&1 | tail -1 | cut -c1-300
  done
done
