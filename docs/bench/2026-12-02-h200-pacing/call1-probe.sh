# One caller's calls of 4, 16 and 64 MiB in the stripes' shape without the library
# (stripe_probe.c): where a call's time goes (TIMING), and whether pacing the readers to the
# copies (LEAD), smaller stripes or fewer threads bring a call nearer the copy ceiling. Then the
# library (the last session's build) on the same file, with its profile, and stripe sizes.
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$PWD/target/gpu-run/d/bin/hipfile
F=/root/hb.bin
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
P() { timeout 60 env "$@"; }
for call in 4096 16384 65536; do
  s=$(( call / 4 )); [ $s -lt 1024 ] && s=1024; [ $s -gt 4096 ] && s=4096
  p=$(( s / 16 ))
  echo "== call $call KiB"
  for lead in 0 2 4; do P TIMING=1 LEAD=$lead /tmp/sp $F $call $s $p 16 24; done
  for st in 1024 2048; do
    [ $st = $s ] && continue
    for lead in 0 4 8; do P TIMING=1 LEAD=$lead /tmp/sp $F $call $st $(( st / 16 )) 16 24; done
  done
  P TIMING=1 /tmp/sp $F $call $s $(( s / 8 )) 8 24
  P TIMING=1 /tmp/sp $F $call $s $(( s / 12 / 4 * 4 )) 12 24 2>/dev/null || true
done
echo "== whole file (1 GiB calls)"
for lead in 0 4 8; do P TIMING=1 LEAD=$lead /tmp/sp $F 1048576 4096 256 16 24; done
echo "== library"
p() { timeout 60 $B bench --file $F --size 4G --no-verify --profile "$@" 2>&1 | grep -E "^(read|randread) |first_copy" | sed -E 's/served_requests.*io_uring_ops [0-9]+, //'; }
for io in 4M 16M 64M; do p --runs 4 --mode read --io-size $io; done
for c in 1024 2048; do
  for io in 16M 64M; do echo "chunk $c KiB:"; HIPFILE_BOUNCE_CHUNK_KIB=$c p --runs 4 --mode read --io-size $io; done
done
echo "done in $SECONDS s"
