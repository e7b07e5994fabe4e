# NOT RUN YET: no GPU machine was lent for the rest of the session that wrote it (2026-12-01);
# the next session with one runs it first (see docs/performance.md, "One caller's calls").
# xtask/gpu-bench/stripe_probe.c on the H200: one caller's calls over a warm 4 GiB file, threads
# filling shared stripes (many preads, one large copy) against each thread its own chunk
# (piece == stripe, the lanes' shape), 16 threads.
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gcc -O2 -I/usr/local/cuda/include xtask/gpu-bench/stripe_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/sp || exit 1
F=/root/hb.bin
[ -f $F ] || head -c 4G /dev/urandom > $F
cat $F > /dev/null
P() { timeout 60 /tmp/sp $F "$@"; }
# lane-like: each thread its own chunk
P 4096 256 256; P 16384 512 512; P 65536 2048 2048; P 4194304 4096 4096
# stripes filled together
P 4096 1024 128; P 4096 1024 256; P 4096 2048 128; P 4096 4096 256
P 16384 4096 256; P 16384 4096 512; P 16384 2048 128; P 16384 2048 256
P 65536 4096 256; P 65536 4096 512; P 65536 8192 512
P 4194304 4096 256; P 4194304 8192 512
# fewer threads
P 16384 4096 512 8; P 4096 1024 128 8
