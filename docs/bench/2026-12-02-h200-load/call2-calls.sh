# Where load_storage's time goes (cufile_bench.py calls: the gds benchmark's shapes and offsets,
# 2.3 GB, through load_storage into each tensor, into one per shape, and cuFileRead by ctypes),
# beside hipfile bench's calls of the same sizes; current main (no trial switch set).
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
G=$PWD/target/gpu-run
B=$G/d/bin/hipfile
OURS=$G/d/lib/cufile/libcufile.so.0
F=/root/hb.bin
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-4} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
echo "bench: 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K)"
for r in 1 2; do
  echo "round $r: $(LD_PRELOAD=$OURS timeout 150 python3 xtask/gpu-bench/cufile_bench.py calls /root --size-gb 2.3 --runs 5 2>>$OUT/err.txt)"
done
echo "bench: 17672Kx1 $(b --mode read --io-size 17672K) 70688Kx1 $(b --mode read --io-size 70688K)"
echo "done in $SECONDS s"
