# issue 26 on the H200: cuFile's users over hipfile-rs's libcufile.so.0 (LD_PRELOAD) beside NVIDIA's.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
OURS=$G/lib/cufile/libcufile.so.0
rm -rf .pysite
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/wheels/hipfile-*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.pysite
F=/root/hf-bench/data.bin; mkdir -p /root/hf-bench
timeout 120 $G/hipfile bench --file $F --size 4G --mode read --runs 2 --json --no-verify > $OUT/bench_read.json
python3 -c "import json; r=json.load(open('$OUT/bench_read.json'))['results'][0]; print('hipfile bench warm read', r['best_gbps'], r['run_gbps'])"
LD_LIBRARY_PATH=$G/lib/cufile:$LD_LIBRARY_PATH $G/hipfile check | grep cuFile
echo "--- KvikIO CuFile.read, NVIDIA's libcufile, default settings"
timeout 200 python3 $G/cufile_bench.py kvikio $F 2>$OUT/kv_nvidia.err | tee $OUT/kv_nvidia.json; tail -2 $OUT/kv_nvidia.err
echo "--- KvikIO CuFile.read, ours, KVIKIO_COMPAT_MODE=OFF"
LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 200 python3 $G/cufile_bench.py kvikio $F 2>$OUT/kv_ours.err | tee $OUT/kv_ours.json; tail -2 $OUT/kv_ours.err
echo "--- KvikIO CuFile.read, ours, default settings (AUTO)"
LD_PRELOAD=$OURS timeout 200 python3 $G/cufile_bench.py kvikio $F 2>$OUT/kv_ours_auto.err | tee $OUT/kv_ours_auto.json; tail -2 $OUT/kv_ours_auto.err
echo "--- batch: cuFile's batch calls over ours, and hipfile bench"
LD_PRELOAD=$OURS timeout 120 python3 $G/cufile_bench.py batch $F --runs 7 2>$OUT/batch.err | tee $OUT/batch.json; tail -2 $OUT/batch.err
timeout 60 $G/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --batch 128 --runs 7 --json --no-verify | python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]; print('hipfile bench batch', r['best_gbps'], r['run_gbps'])"
echo "--- torch.cuda.gds over ours"
LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 $G/cufile_bench.py gds /root --size-gb 9 --runs 2 2>$OUT/gds.err | tee $OUT/gds.json; tail -3 $OUT/gds.err
echo "--- KvikIO's test suite"
cd $G/kvikio-py
for cfg in nvidia_off ours_off; do
  case $cfg in nvidia_off) pre="";; ours_off) pre=$OURS;; esac
  LD_PRELOAD=$pre KVIKIO_COMPAT_MODE=OFF timeout 280 python3 -m pytest -q -p no:cacheprovider tests -rfEs --junitxml=$OUT/kv_$cfg.xml > $OUT/kv_$cfg.txt 2>&1
  echo "$cfg rc=$?: $(tail -1 $OUT/kv_$cfg.txt)"
done
