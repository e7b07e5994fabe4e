# The session's final build (reads' tails demoted, no trial switch): the data-safety program,
# the tool's figures (with the profile of one caller's 16 MiB calls), cuFile's users over ours
# (cuFile batch, KvikIO with compatibility mode off, torch.cuda.gds load_storage of 9 GB, PyTorch's
# own gds examples), KvikIO over NVIDIA's library, and Python beside KvikIO (futures, batch).
# Before the call, here: cargo xtask dist target/gpu-run/d (lib/*.a removed, stripped), its
#   libhipfile.so.0.5.0 copied to target/gpu-run/s/libhipfile.so.0 beside safety_cuda;
#   pip wheel --no-deps ./hipfile-python -w target/devwheel/new
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
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "--- the tool ($SECONDS s so far)"
echo "whole $(R=3 b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
  "64Mx1 $(b --mode read --io-size 64M) batch128 $(R=7 b --mode randread --io-size 1M --count 128 --batch 128)" \
  "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
  "4Mx16 $(b --mode read --io-size 4M --threads 16)"
timeout 60 $B bench --file $F --size 4G --no-verify --profile --runs 3 --mode read --io-size 16M 2>&1 | grep -E "^read |bounce:" | sed -E 's/served_requests.*io_uring_ops [0-9]+, //'
echo "--- cuFile's users over ours ($SECONDS s so far)"
echo "cuFile batch: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt | tr -d '\n')"
echo "kvikio, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "torch gds: $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 3 2>>$OUT/err.txt | tr -d '\n')"
echo "PyTorch's gds examples: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/torch_gds_examples.py /root 2>$OUT/examples-ours.txt)"
echo "--- NVIDIA's library ($SECONDS s so far)"
echo "kvikio, default: $(timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "PyTorch's gds examples: $(timeout 60 python3 xtask/gpu-bench/torch_gds_examples.py /root 2>$OUT/examples-nvidia.txt | cut -c1-300)"
echo "--- Python beside KvikIO ($SECONDS s so far)"
timeout 150 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 --kvikio > $OUT/pb.json 2>>$OUT/err.txt; tr -d '\n ' < $OUT/pb.json; echo
echo "done in $SECONDS s"
