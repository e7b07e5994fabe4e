# Two more rounds of packing on / off (as call1.sh), the profile of one caller's calls, and the
# safetensors loader beside safetensors, KvikIO (16 threads and its default) and fastsafetensors:
# warm, cold (page cache dropped before each run), and the first load of fresh processes.
# carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/*.whl target/devwheel/new/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
pb() { timeout 100 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 2>>$OUT/err.txt |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(k.split("1MiB ")[1].replace(" ", "")+"="+str(v) for k,v in r.items() if "1MiB" in k))'; }
cb() { LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["128 random 1 MiB as one cuFile batch GB/s"])'; }
echo "--- packing on / off (GB/s, best of 5 or 7)"
for r in 3 4; do
  order="on off"; [ $r = 4 ] && order="off on"
  for v in $order; do
    P=1; [ $v = off ] && P=0
    export HIPFILE_BOUNCE_PACK=$P
    echo "round $r $v: batch128x1M $(R=7 b --mode randread --io-size 1M --count 128 --batch 128)" \
      "batch128x256K $(R=7 b --mode randread --io-size 256K --count 128 --batch 128)" \
      "cufile-batch $(cb) | python $(pb)"
  done
done
unset HIPFILE_BOUNCE_PACK
echo "--- profiles ($SECONDS s so far)"
for io in 16M 64M; do timeout 60 $B bench --file $F --size 4G --no-verify --runs 5 --profile --mode read --io-size $io 2>&1 | tail -12; done
timeout 60 $B bench --file $F --size 4G --no-verify --runs 7 --profile --mode randread --io-size 1M --count 128 --batch 128 2>&1 | tail -12
rm -f $F
echo "--- the safetensors loader ($SECONDS s so far)"
left=$((575 - SECONDS))
timeout $left python3 xtask/gpu-bench/load_bench.py /root/ckpt --size-gb 9.2 --runs 2 --cold --first \
  --peers kvikio,kvikio-default,fastsafetensors --json $OUT/load.json > $OUT/load.txt 2>>$OUT/err.txt; echo "load rc=$?"
python3 - $OUT/load.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in ("warm", "cold", "raw disk O_DIRECT", "first load", "first tensor warm", "first tensor cold", "ratios"):
    v = r.get(k)
    if isinstance(v, dict): print(k, json.dumps({a: (b.get("best_gbps", b) if isinstance(b, dict) else b) for a, b in v.items()}))
PY
echo "done in $SECONDS s"
