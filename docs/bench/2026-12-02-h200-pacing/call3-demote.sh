# cldemote (lines moved from the reading core's caches to the shared L3) against nothing and
# clwb, after each piece is read, two rounds; calls of 4, 16 and 64 MiB and 1 GiB.
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
grep -m1 -o -w 'cldemote' /proc/cpuinfo || echo "no cldemote flag"
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
[ -f $F ] || { dd if=/dev/urandom of=$F bs=64M count=64 status=none; }
cat $F > /dev/null
for r in 1 2; do
  for call in 4096 16384 65536 1048576; do
    s=$(( call / 4 )); [ $s -lt 1024 ] && s=1024; [ $s -gt 4096 ] && s=4096
    for f in 0 4 2; do timeout 60 env TIMING=1 FLUSH=$f /tmp/sp $F $call $s $(( s / 16 )) 16 24; done
  done
done
echo "done in $SECONDS s"
