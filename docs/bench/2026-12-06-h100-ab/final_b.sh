# issue 61: the Python data path, old (0bc54c1) and new (HEAD) alternated (harness python and
# load_file); KvikIO's whole-file read over each build's libcufile (the C path)
set -u
cd "$(dirname "$0")"
for b in old new; do [ -d ab$b ] || tar -xJf $b.tar.xz; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
pip install -q --no-deps --no-index --find-links ../.whl kvikio-cu13 libkvikio-cu13 rapids-logger 2>&1 | tail -1
H=../xtask/gpu-bench/harness.py
D=/root/hf-bench/data.bin; mkdir -p /root/hf-bench /root/ckpt
for r in 1 2; do
  if [ $r = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    echo "kvikio round $r $b: $(LD_PRELOAD=$PWD/ab$b/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 90 python3 $H --record $OUT/c_$b.jsonl cufile kvikio $D --runs 3 2>&1 | tail -1 | cut -c1-300)"
  done
done
timeout 450 python3 $H --record $OUT/ab_py.jsonl ab $PWD/abold/hipfile $PWD/abnew/hipfile --modes "python load_file" --rounds 2 --data $D --py-old $PWD/abold/py --py-new $PWD/abnew/py --ckpt /root/ckpt/model.safetensors 2>&1 | tail -8
