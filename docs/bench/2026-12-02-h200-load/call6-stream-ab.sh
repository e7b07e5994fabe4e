# One trial build, HIPFILE_TRIAL: 0 demotes a read's tail (cldemote, as landed), 1 writes the
# tail with streaming stores through each thread's own buffer instead, 2 writes all of a read of
# up to 128 MiB so; two rounds alternating: the tool's figures one caller and several, and
# torch.cuda.gds load_storage of 9 GB.
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
for r in 1 2; do
  order="0 1 2"; [ $r = 2 ] && order="2 1 0"
  for t in $order; do
    export HIPFILE_TRIAL=$t
    echo "round $r trial $t: 4Mx1 $(b --mode read --io-size 4M) 16Mx1 $(b --mode read --io-size 16M) 17672Kx1 $(b --mode read --io-size 17672K)" \
      "70688Kx1 $(b --mode read --io-size 70688K) whole $(R=2 b --mode read) 16Mx4 $(b --mode read --io-size 16M --threads 4)" \
      "batch128 $(b --mode randread --io-size 1M --count 128 --batch 128)" \
      "gds $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 120 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 2 2>>$OUT/err.txt | cut -c60-135)"
  done
done
echo "done in $SECONDS s"
