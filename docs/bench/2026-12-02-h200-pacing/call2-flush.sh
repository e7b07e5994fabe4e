# Whether a copy is slow because it reads lines that the reading cores still hold modified:
# the stripe probe with each piece written back out of the caches after its read (FLUSH=1
# clflushopt, 2 clwb, 3 clflush) against none, calls of 4, 16 and 64 MiB and 1 GiB.
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
grep -m1 -o -w 'clflushopt\|clwb' /proc/cpuinfo | sort -u | tr '\n' ' '; grep -m1 "model name" /proc/cpuinfo; lscpu | grep -i -E "cache|numa|thread|socket" 
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
[ -f $F ] || { dd if=/dev/urandom of=$F bs=64M count=64 status=none; }
cat $F > /dev/null
for r in 1 2; do
  for call in 4096 16384 65536 1048576; do
    s=$(( call / 4 )); [ $s -lt 1024 ] && s=1024; [ $s -gt 4096 ] && s=4096
    for f in 0 1 2 3; do
      [ $r = 2 ] && [ $f = 3 ] && continue
      timeout 60 env TIMING=1 FLUSH=$f /tmp/sp $F $call $s $(( s / 16 )) 16 24
    done
  done
done
echo "done in $SECONDS s"
