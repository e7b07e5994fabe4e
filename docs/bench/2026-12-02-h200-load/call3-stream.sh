# The stripe probe: each piece read into the thread's own buffer and moved into the slot with
# non-temporal stores (FLUSH=5) or memcpy (6), against plain reads into the slot (0) and
# cldemote after them (4, what the library does for a read's tail); the library's stripes
# (an eighth of a call, 1-4 MiB), pieces of a sixteenth, 16 threads, 24 slots; two rounds.
# carry: (nothing built here)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
[ -f $F ] || { dd if=/dev/urandom of=$F bs=64M count=64 status=none; }
cat $F > /dev/null
for r in 1 2; do
  for call in 4096 16384 65536 1048576; do
    s=$(( call / 8 )); [ $s -lt 1024 ] && s=1024; [ $s -gt 4096 ] && s=4096
    p=$(( s / 16 )); [ $p -lt 64 ] && p=64
    for f in 0 4 5 6; do timeout 60 env TIMING=1 FLUSH=$f /tmp/sp $F $call $s $p 16 24; done
  done
done
echo "done in $SECONDS s"
