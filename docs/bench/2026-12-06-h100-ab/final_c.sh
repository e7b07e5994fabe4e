# issue 61: KvikIO's whole-file read (KVIKIO_COMPAT_MODE=OFF: cuFile) over each build's libcufile
set -u
cd "$(dirname "$0")"
for b in old new; do [ -d ab$b ] || tar -xJf $b.tar.xz; done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p kv && python3 -m pip install -q --no-index --no-deps --target kv ../.whl/kvikio_cu13-*.whl ../.whl/libkvikio_cu13-*.whl ../.whl/rapids_logger-*.whl 2>&1 | grep -v WARNING | tail -2
export PYTHONPATH=$PWD/kv
H=../xtask/gpu-bench/harness.py
D=/root/hf-bench/data.bin; mkdir -p /root/hf-bench
[ -f $D ] || ./abnew/hipfile bench --mode read --size 4G --file $D --runs 1 --no-verify > /dev/null
for r in 1 2; do
  if [ $r = 1 ]; then order="old new"; else order="new old"; fi
  for b in $order; do
    echo "kvikio round $r $b: $(LD_PRELOAD=$PWD/ab$b/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 90 python3 $H --record $OUT/c_kvikio_$b.jsonl cufile kvikio $D --runs 3 2>&1 | tail -1 | cut -c1-400)"
  done
done
