# Which reads demote their tail (HIPFILE_TRIAL_DEMOTE: 1 every read; 3 a read alone on its
# device; 4 every read, its tail divided among the reads in flight; 0 none), on what call 4
# showed moving: 4 callers of 16 MiB, 16 callers of 4 MiB, one caller's 16 MiB, a batch, and
# KvikIO over ours; two rounds alternating.
# carry: target/gpu-run .whl
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
C=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
rm -rf .pysite
python3 -m pip install -q --no-index --no-deps --target .pysite .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids*.whl 2>&1 | tail -2
export PYTHONPATH=$PWD/.pysite
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
for r in 1 2; do
  order="1 3 4 0"; [ $r = 2 ] && order="0 4 3 1"
  for m in $order; do
    export HIPFILE_TRIAL_DEMOTE=$m
    echo "round $r demote $m: 4x16M $(b --mode read --io-size 16M --threads 4) 16x4M $(b --mode read --io-size 4M --threads 16)" \
      "16M $(b --mode read --io-size 16M) batch $(R=5 b --mode randread --io-size 1M --count 128 --batch 128)" \
      "kvikio $(LD_PRELOAD=$C KVIKIO_COMPAT_MODE=OFF timeout 100 python3 xtask/gpu-bench/cufile_bench.py kvikio $F --runs 2 2>>$OUT/err.txt | cut -c1-95)"
  done
done
echo "done in $SECONDS s"
