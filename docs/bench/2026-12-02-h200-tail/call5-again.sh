# The final build again, on another machine: the machine's pace (one caller's calls of the
# tensors' sizes, a whole file), load_storage of 9 GB, KvikIO over ours and over NVIDIA's.
# carry: target/gpu-run, .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
python3 -m pip install -q --no-index --no-deps --target /tmp/ps .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/ps
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "whole $(R=3 b --mode read) 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K)"
echo "torch gds: $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 240 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 5 2>>$OUT/err.txt | tr -d '\n')"
echo "kvikio, KVIKIO_COMPAT_MODE=OFF: $(LD_PRELOAD=$OURS KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "kvikio over NVIDIA's, default: $(timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F 2>>$OUT/err.txt | tr -d '\n')"
echo "whole $(R=3 b --mode read) 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K)"
echo "done in $SECONDS s"
