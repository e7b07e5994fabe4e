# Alone-request chunking A/B (v0 current, v1 256 KiB minimum chunk alone, v2 v1 + one chunk per
# lane alone) on calls of 4 and 16 MiB, KvikIO 1 thread over each, torch GDS over each; then
# KvikIO's suite over v0 and NVIDIA's.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
rm -rf .pysite
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/wheels/hipfile-*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.pysite
F=/root/hf-bench/data.bin; mkdir -p /root/hf-bench
timeout 120 $G/v0/hipfile bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
best() { python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["run_gbps"])'; }
for r in 1 2; do
  for v in v0 v1 v2; do
    a=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode read --io-size 4M --runs 3 --json --no-verify | best)
    b=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode read --io-size 16M --runs 3 --json --no-verify | best)
    c=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode read --runs 3 --json --no-verify | best)
    echo "round $r $v: 4M calls $a | 16M calls $b | whole $c"
  done
done
for v in v0 v1 v2; do
  echo "$v randread16: $(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --threads 16 --runs 5 --json --no-verify | best)"
  echo "$v kvikio OFF: $(LD_PRELOAD=$G/$v/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 200 python3 $G/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
  echo "$v gds: $(LD_PRELOAD=$G/$v/lib/cufile/libcufile.so.0 HIPFILE_DURABLE_WRITES=false timeout 240 python3 $G/cufile_bench.py gds /root --size-gb 9 --runs 2 2>>$OUT/err.txt)"
done
cd $G/kvikio-py
for cfg in nvidia_off ours_off; do
  case $cfg in nvidia_off) pre="";; ours_off) pre=$G/v0/lib/cufile/libcufile.so.0;; esac
  LD_PRELOAD=$pre KVIKIO_COMPAT_MODE=OFF timeout 280 python3 -m pytest -q -p no:cacheprovider tests -rfEs --continue-on-collection-errors --junitxml=$OUT/kv_$cfg.xml > $OUT/kv_$cfg.txt 2>&1
  echo "$cfg rc=$?: $(tail -1 $OUT/kv_$cfg.txt)"
done
