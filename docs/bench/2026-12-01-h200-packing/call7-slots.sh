# Fewer reads' slots (HIPFILE_BOUNCE_MEMORY_MIB 32: 5 slots of 4 MiB; 48: 8; 256, the default: 24),
# so that a call's readers wait for its copies as in a whole-file read: two rounds alternating.
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$PWD/target/gpu-run/d/bin/hipfile
F=/root/hb.bin
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
b() { timeout 60 "$B" bench --file $F --size 4G --json --no-verify --runs ${R:-5} "$@" 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["best_gbps"])'; }
for r in 1 2; do
  order="32 48 256"; [ $r = 2 ] && order="256 48 32"
  for m in $order; do
    export HIPFILE_BOUNCE_MEMORY_MIB=$m
    echo "round $r memory $m: 16Mx1 $(R=4 b --mode read --io-size 16M) 64Mx1 $(R=4 b --mode read --io-size 64M)" \
      "batch128 $(b --mode randread --io-size 1M --count 128 --batch 128) whole $(R=2 b --mode read)"
  done
done
echo "done in $SECONDS s"
