# The stripe probe with TIMING=2: each stripe's copy, queued and done, averaged over one run's
# calls; one caller's 64 MiB calls (4 MiB stripes) plain, demoted, non-temporal; 16 MiB demoted.
# carry: (nothing built here)
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
F=/root/hb.bin
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
[ -f $F ] || { dd if=/dev/urandom of=$F bs=64M count=64 status=none; }
cat $F > /dev/null
for f in 0 4 5; do timeout 60 env TIMING=2 FLUSH=$f /tmp/sp $F 65536 4096 256 16 24; done
timeout 60 env TIMING=2 FLUSH=4 /tmp/sp $F 16384 2048 128 16 24
timeout 60 env TIMING=2 FLUSH=0 /tmp/sp $F 262144 4096 256 16 24 | head -40
echo "done in $SECONDS s"
