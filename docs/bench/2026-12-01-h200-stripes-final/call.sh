# The build where reads go through stripes only (lanes gone for reads), on the H200, one call:
# the data-safety program, the tool's figures, cuFile's users (KvikIO over NVIDIA's library and
# ours, cuFile's batch calls, torch.cuda.gds), Python beside KvikIO, the safetensors loader.
# Before the call, here:
#   cargo xtask dist target/gpu-run/d && rm target/gpu-run/d/lib/*.a && strip target/gpu-run/d/bin/hipfile \
#     target/gpu-run/d/lib/libhipfile.so.0.5.0 target/gpu-run/d/lib/cufile/libcufile.so.0
#   mkdir -p target/gpu-run/s && cp target/gpu-run/d/lib/libhipfile.so.0.5.0 target/gpu-run/s/libhipfile.so.0
#   cc -std=c11 -D__HIP_PLATFORM_AMD__ -D_GNU_SOURCE -DTESTS_OVER_CUDA -Iinclude -Ihipfile-capi/tests/c \
#     hipfile-capi/tests/c/safety.c -Ltarget/gpu-run/s -l:libhipfile.so.0 -ldl -lpthread \
#     -Wl,-rpath,'$ORIGIN' -o target/gpu-run/s/safety_cuda
#   pip wheel --no-deps ./hipfile-python -w target/devwheel/new
# carry: target/gpu-run, target/devwheel, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
echo "--- data safety (signals at 1 and 10 kHz, descriptor reuse, O_APPEND, O_PATH, fd 2, 256 threads closing)"
S=$G/s/safety_cuda; D=/root/hf-safety; mkdir -p $D
for hz in 1000 10000; do timeout 60 $S signals $D/in $D/out $hz 3; echo "signals $hz rc=$?"; done
for t in "reuse $D/a $D/b" "append $D/append" "opath $D/opath" "quiet $D/quiet"; do timeout 30 $S $t > /dev/null; echo "${t%% *} rc=$?"; done
HIPFILE_BOUNCE_CHUNK_KIB=64 timeout 60 $S resources $D/res 256; echo "resources rc=$?"; rm -rf $D
echo "--- hipfile bench (GB/s, best of 5; cold best of 2)"
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "whole $(b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
  "64Mx1 $(b --mode read --io-size 64M) batch128 $(b --mode randread --io-size 1M --count 128 --batch 128)" \
  "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
  "write $(R=2 b --mode write) cold $(R=2 b --mode read --cold)"
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/new/*.whl
export PYTHONPATH=/tmp/ps
echo "--- cuFile's users"
echo "kvikio, NVIDIA's libcufile, defaults: $(timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
echo "kvikio, ours, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt)"
echo "cuFile batch, ours: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt)"
echo "torch.cuda.gds, ours: $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 150 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 2 2>>$OUT/err.txt)"
rm -f /root/gds.bin
echo "--- Python beside KvikIO"
timeout 120 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 --kvikio > $OUT/pb.json 2>>$OUT/err.txt; tr -d '\n ' < $OUT/pb.json; echo
echo "--- the safetensors loader ($SECONDS s so far)"
left=$((565 - SECONDS))
[ $left -gt 60 ] && timeout $left python3 xtask/gpu-bench/load_bench.py /root/ckpt --size-gb 9.2 --runs 2 --cold --first \
  --peers kvikio,kvikio-default --json $OUT/load.json > $OUT/load.txt 2>>$OUT/err.txt; echo "load rc=$?"; tail -25 $OUT/load.txt
