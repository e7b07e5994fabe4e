# Where one caller's time goes, with the profile's new counters (probe, take, ship: thread time
# summed; first_copy and last_copy: per call, from its start to its first and last copy queued,
# summed over calls), for calls of 4, 16 and 64 MiB, a batch, and whole files.
# carry: target/gpu-run
set -u
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
B=$PWD/target/gpu-run/d/bin/hipfile
F=/root/hb.bin
nvidia-smi --query-gpu=pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,clocks.sm,clocks.mem,pstate --format=csv
timeout 120 $B bench --file $F --size 4G --mode read --runs 1 --json --no-verify > /dev/null
p() { timeout 60 $B bench --file $F --size 4G --no-verify --profile "$@" 2>&1 | grep -E "^(read|randread) |bounce:"; }
for io in 4M 16M 64M; do p --runs 5 --mode read --io-size $io; done
p --runs 7 --mode randread --io-size 1M --count 128 --batch 128
p --runs 3 --mode read
p --runs 5 --mode read --io-size 16M --threads 4
echo "done in $SECONDS s"
