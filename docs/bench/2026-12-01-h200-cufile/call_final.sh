# v1 (256 KiB chunks alone) against v3 (the same, workers and callers awake 200 us before sleeping),
# then the final figures over v3: KvikIO, torch GDS, cuFile batch, Python, KvikIO's suite, PyTorch's GDS tests.
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
rm -rf .pysite
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/wheels/hipfile-*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.pysite
F=/root/hf-bench/data.bin; mkdir -p /root/hf-bench
timeout 120 $G/v3/hipfile bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
best() { python3 -c 'import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["run_gbps"])'; }
for r in 1 2; do
  for v in v1 v3; do
    a=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode read --io-size 4M --runs 3 --json --no-verify | best)
    b=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode read --io-size 16M --runs 3 --json --no-verify | best)
    c=$(timeout 60 $G/$v/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --batch 128 --runs 5 --json --no-verify | best)
    echo "round $r $v: 4M calls $a | 16M calls $b | batch $c"
  done
done
for v in v1 v3; do
  echo "$v kvikio OFF: $(LD_PRELOAD=$G/$v/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 200 python3 $G/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
  echo "$v gds: $(LD_PRELOAD=$G/$v/lib/cufile/libcufile.so.0 HIPFILE_DURABLE_WRITES=false timeout 240 python3 $G/cufile_bench.py gds /root --size-gb 9 --runs 2 2>>$OUT/err.txt)"
done
echo "v3 cuFile batch: $(LD_PRELOAD=$G/v3/lib/cufile/libcufile.so.0 timeout 120 python3 $G/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt)"
echo "v3 whole: $(timeout 60 $G/v3/hipfile bench --file $F --size 4G --mode read --runs 3 --json --no-verify | best)"
echo "v3 randread16: $(timeout 60 $G/v3/hipfile bench --file $F --size 4G --mode randread --io-size 1M --count 128 --threads 16 --runs 5 --json --no-verify | best)"
timeout 200 python3 $G/python_bench.py /root/pb.bin --size-gib 4 --runs 5 --kvikio > $OUT/python_bench.json 2>$OUT/python_bench.err; cat $OUT/python_bench.json | tr -d '\n '; echo; tail -2 $OUT/python_bench.err
(cd $G/kvikio-py && LD_PRELOAD=$G/v3/lib/cufile/libcufile.so.0 KVIKIO_COMPAT_MODE=OFF timeout 280 python3 -m pytest -q -p no:cacheprovider tests -rfEs --continue-on-collection-errors --junitxml=$OUT/kv_ours_off.xml > $OUT/kv_ours_off.txt 2>&1; echo "kvikio suite over ours rc=$?: $(tail -1 $OUT/kv_ours_off.txt)")
