# The stripe probe: non-temporal stores for the stripes in a call's first and last EDGE KiB only
# (FLUSH=7), against plain (0) and non-temporal everywhere (5); one caller's calls of 64 MiB (4
# MiB stripes; edges of 8, 12 and 16 MiB), 256 MiB and 1 GiB; two rounds; then each stripe of
# a 64 MiB call with 12 MiB edges.
# carry: (nothing built here)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
[ -f $F ] || { dd if=/dev/urandom of=$F bs=64M count=64 status=none; }
cat $F > /dev/null
p() { timeout 60 env TIMING=1 "$@" /tmp/sp $F $CALL 4096 256 16 24 | head -1 | sed -E 's/.*flush/flush/'; }
for r in 1 2; do
  CALL=65536
  echo "round $r 64M: $(p FLUSH=0) | $(p FLUSH=5) | $(p FLUSH=7 EDGE=8192) | $(p FLUSH=7 EDGE=12288) | $(p FLUSH=7 EDGE=16384)"
  CALL=262144
  echo "round $r 256M: $(p FLUSH=0) | $(p FLUSH=7 EDGE=16384)"
  CALL=1048576
  echo "round $r 1G: $(p FLUSH=0) | $(p FLUSH=7 EDGE=16384)"
done
timeout 60 env TIMING=2 FLUSH=7 EDGE=12288 /tmp/sp $F 65536 4096 256 16 24
echo "done in $SECONDS s"
