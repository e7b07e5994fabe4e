# Small reads packed into shared stripes (one copy for parts that meet on the device) against one
# stripe per chunk as before (HIPFILE_BOUNCE_PACK=0, a switch of this trial build only), in one
# binary and one wheel, alternating, the order swapped in round 2; then the build's figures, the
# package's test suite with PyTorch and CuPy, and upstream's system test.
# Before the call, here: cargo xtask dist target/gpu-run/d (lib/*.a removed, stripped);
#   pip wheel --no-deps ./hipfile-python -w target/devwheel/new
# carry: target/gpu-run, target/devwheel, .whl, target/upstream
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/new/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
pb() { timeout 100 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 2>>$OUT/err.txt |
  python3 -c 'import json,sys; r=json.load(sys.stdin); print(" ".join(k.split("1MiB ")[1].replace(" ", "")+"="+str(v) for k,v in r.items() if "1MiB" in k))'; }
echo "--- packing on / off (GB/s, best of 5 or 7)"
for r in 1 2; do
  order="on off"; [ $r = 2 ] && order="off on"
  for v in $order; do
    P=1; [ $v = off ] && P=0
    export HIPFILE_BOUNCE_PACK=$P
    echo "round $r $v: batch128x1M $(R=7 b --mode randread --io-size 1M --count 128 --batch 128)" \
      "batch512x256K $(b --mode randread --io-size 256K --count 512 --batch 512)" \
      "batch32x4M $(b --mode randread --io-size 4M --count 32 --batch 32)" \
      "cufile-batch $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt | tr -d '\n')" \
      "| python $(pb)"
  done
done
unset HIPFILE_BOUNCE_PACK
echo "--- the build ($SECONDS s so far)"
echo "whole $(b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
  "64Mx1 $(b --mode read --io-size 64M) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
  "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16)"
echo "kvikio over ours, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
timeout 150 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 --kvikio > $OUT/pb.json 2>>$OUT/err.txt; tr -d '\n ' < $OUT/pb.json; echo
echo "--- the package's suite and upstream's system test ($SECONDS s so far)"
(cd hipfile-python && timeout 200 python3 -m pytest -q -p no:cacheprovider tests -rfEs > $OUT/pytest.txt 2>&1; echo "suite rc=$?: $(tail -1 $OUT/pytest.txt)")
(cd target/upstream && timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_system_roundtrip.py --system > $OUT/upstream.txt 2>&1; echo "upstream rc=$?: $(tail -1 $OUT/upstream.txt)")
echo "done in $SECONDS s"; tail -3 $OUT/err.txt 2>/dev/null
