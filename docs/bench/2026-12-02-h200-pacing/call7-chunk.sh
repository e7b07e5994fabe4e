# torch.cuda.gds load_storage (9 GB, tensors of 18 and 72 MB) and one caller's calls with 2 MiB
# stripes (HIPFILE_BOUNCE_CHUNK_KIB=2048) against the default 4 MiB, on the final build, two
# rounds alternating.
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
  order="4096 2048"; [ $r = 2 ] && order="2048 4096"
  for c in $order; do
    export HIPFILE_BOUNCE_CHUNK_KIB=$c
    echo "round $r chunk $c: 16Mx1 $(b --mode read --io-size 16M) 64Mx1 $(b --mode read --io-size 64M) whole $(R=2 b --mode read)" \
      "gds $(LD_PRELOAD=$OURS HIPFILE_DURABLE_WRITES=false timeout 120 python3 xtask/gpu-bench/cufile_bench.py gds /root --size-gb 9 --runs 3 2>>$OUT/err.txt | cut -c1-150)"
  done
done
echo "done in $SECONDS s"
