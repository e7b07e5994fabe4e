# One caller's calls and batches with 12 threads against 16 (the default on a 16-CPU machine),
# HIPFILE_BOUNCE_THREADS, three rounds alternating, the order swapped in round 2.
# carry: target/gpu-run, target/devwheel, .whl
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
cb() { LD_PRELOAD=$OURS timeout 60 python3 xtask/gpu-bench/cufile_bench.py batch $F --runs 7 2>>$OUT/err.txt |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["128 random 1 MiB as one cuFile batch GB/s"])'; }
for r in 1 2 3; do
  order="12 16"; [ $r = 2 ] && order="16 12"
  for t in $order; do
    export HIPFILE_BOUNCE_THREADS=$t
    echo "round $r threads $t: 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M) 64Mx1 $(b --mode read --io-size 64M)" \
      "batch128 $(R=7 b --mode randread --io-size 1M --count 128 --batch 128) whole $(R=3 b --mode read)" \
      "16Mx4 $(b --mode read --io-size 16M --threads 4) 1Mx16 $(b --mode randread --io-size 1M --count 128 --threads 16) cufile-batch $(cb)"
  done
done
echo "done in $SECONDS s"
