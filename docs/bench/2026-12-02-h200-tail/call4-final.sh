# The session's final build (no trial switch; waiting threads look 1 ms for their next job before
# sleeping, was 200 us): the data-safety program; the tool's figures; cuFile's users over ours
# (cuFile batch, KvikIO with compatibility mode off, torch.cuda.gds load_storage of 9 GB, the
# per-call timing of cufile_bench.py calls, PyTorch's own TestGDS and gds examples); KvikIO over
# NVIDIA's library; Python beside KvikIO.
# Before the call, here: cargo xtask dist target/gpu-run/d (lib/*.a removed, stripped), its
#   libhipfile.so.0.5.0 copied to target/gpu-run/s/libhipfile.so.0 beside safety_cuda;
#   pip wheel --no-deps ./hipfile-python -w target/devwheel/new; expecttest's wheel (which
#   torch.testing._internal needs) in target/devwheel; PyTorch's TestGDS transcribed into
#   target/peer/test_cuda_gds.py (not in the repository).
# carry: target/gpu-run, target/devwheel, target/peer, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl target/devwheel/new/*.whl target/devwheel/expecttest*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
echo "--- data safety (signals at 1 and 10 kHz, descriptor reuse, O_APPEND, O_PATH, fd 2, 256 threads closing)"
S=$G/s/safety_cuda; D=/root/hf-safety; mkdir -p $D
for hz in 1000 10000; do timeout 60 $S signals $D/in $D/out $hz 3 | tail -1; done
for t in "reuse $D/a $D/b" "append $D/append" "opath $D/opath" "quiet $D/quiet"; do timeout 30 $S $t > /dev/null; echo -n "${t%% *} rc=$? "; done
HIPFILE_BOUNCE_CHUNK_KIB=64 timeout 60 $S resources $D/res 256 | tail -1; rm -rf $D
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "--- the tool ($SECONDS s so far)"
echo "whole $(R=3 b --mode read) 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M)" \
  "17672Kx1 $(b --mode read --io-size 17672K) 64Mx1 $(b --mode read --io-size 64M) 70688Kx1 $(b --mode read --io-size 70688K)" \
  "batch128 $(R=7 b --mode randread --io-size 1M --count 128 --batch 128)" \
  "1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
  "4Mx16 $(b --mode read --io-size 4M --threads 16)"
echo "--- cuFile's users over ours ($SECONDS s so far)"
echo "cuFile batch: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt | tr -d '\n')"
echo "kvikio, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "torch gds: $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 3 2>>$OUT/err.txt | tr -d '\n')"
echo "calls: $(LD_PRELOAD=$OURS timeout 150 python3 xtask/gpu-bench/cufile_bench.py calls /root --size-gb 2.3 --runs 3 2>>$OUT/err.txt)"
echo "PyTorch's TestGDS over ours:"; LD_PRELOAD=$OURS timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | tail -5
echo "PyTorch's TestGDS over NVIDIA's:"; timeout 120 python3 target/peer/test_cuda_gds.py -v 2>&1 | grep -E "^(test_|Ran|OK|FAILED|RuntimeError|torch)" | tail -5
echo "PyTorch's gds examples over ours: $(LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/torch_gds_examples.py /root 2>$OUT/examples-ours.txt)"
echo "--- NVIDIA's library ($SECONDS s so far)"
echo "kvikio, default: $(timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "--- Python beside KvikIO ($SECONDS s so far)"
timeout 150 python3 xtask/gpu-bench/python_bench.py $F --size-gib 4 --runs 5 --kvikio > $OUT/pb.json 2>>$OUT/err.txt; tr -d '\n ' < $OUT/pb.json; echo
echo "done in $SECONDS s"
