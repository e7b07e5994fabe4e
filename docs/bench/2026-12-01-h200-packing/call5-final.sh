# The session's final build on one H200: the data-safety program, one caller's calls against the
# number of threads (HIPFILE_BOUNCE_THREADS), the tool's figures, Python beside KvikIO (two
# rounds), cuFile's batch and KvikIO over our libcufile.
# Before the call, here: cargo xtask dist target/gpu-run/d (lib/*.a removed, stripped), its
#   libhipfile.so.0.5.0 copied to target/gpu-run/s/libhipfile.so.0 beside safety_cuda (built as
#   in ../2026-12-01-h200-stripes-final/call.sh); pip wheel --no-deps ./hipfile-python -w target/devwheel/new
# carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/new/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
echo "--- data safety (signals at 1 and 10 kHz, descriptor reuse, O_APPEND, O_PATH, fd 2, 256 threads closing)"
S=$G/s/safety_cuda; D=/root/hf-safety; mkdir -p $D
for hz in 1000 10000; do timeout 60 $S signals $D/in $D/out $hz 3; echo "signals $hz rc=$?"; done
for t in "reuse $D/a $D/b" "append $D/append" "opath $D/opath" "quiet $D/quiet"; do timeout 30 $S $t > /dev/null; echo "${t%% *} rc=$?"; done
HIPFILE_BOUNCE_CHUNK_KIB=64 timeout 60 $S resources $D/res 256; echo "resources rc=$?"; rm -rf $D
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "--- one caller against threads ($SECONDS s so far)"
for t in 8 12 16; do
  echo "threads $t: 4Mx1 $(HIPFILE_BOUNCE_THREADS=$t b --mode read --io-size 4M) 16Mx1 $(HIPFILE_BOUNCE_THREADS=$t b --mode read --io-size 16M)" \
    "64Mx1 $(HIPFILE_BOUNCE_THREADS=$t b --mode read --io-size 64M) batch128 $(R=7 HIPFILE_BOUNCE_THREADS=$t b --mode randread --io-size 1M --count 128 --batch 128)" \
    "whole $(R=3 HIPFILE_BOUNCE_THREADS=$t b --mode read)"
done
echo "--- the tool ($SECONDS s so far)"
echo "whole $(b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
  "64Mx1 $(b --mode read --io-size 64M) batch128 $(R=7 b --mode randread --io-size 1M --count 128 --batch 128)" \
  "batch128x256K $(R=7 b --mode randread --io-size 256K --count 128 --batch 128)" \
  "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
  "write $(R=2 b --mode write) cold $(R=2 b --mode read --cold)"
echo "--- cuFile's users ($SECONDS s so far)"
echo "cuFile batch, ours: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt | tr -d '\n')"
echo "kvikio over ours, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "--- Python beside KvikIO, two rounds ($SECONDS s so far)"
for r in 1 2; do
  timeout 150 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 --kvikio > $OUT/pb$r.json 2>>$OUT/err.txt; tr -d '\n ' < $OUT/pb$r.json; echo
done
echo "done in $SECONDS s"
