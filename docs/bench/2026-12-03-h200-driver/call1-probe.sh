#!/usr/bin/env bash
# Where small copies serialize (driver_probe.c: the runtime's copy and wait, the driver's, the
# driver's copy with a flag written by the stream, a context of each thread's own), the landed
# library's small-read figures beside it, and 16-caller rounds beside KvikIO with the machine's
# steal time (vmstat) logged through them.
set -u
G=xtask/gpu-bench
R=target/gpu-run/drv
F=/root/small.bin
. docs/bench/2026-12-03-h200-callers/setup.sh "$R/hipfile"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; lscpu | grep 'Model name'
gcc -O2 -I/usr/local/cuda/include -o /tmp/driver $G/driver_probe.c -L/usr/local/cuda/lib64 \
    -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread || exit 1
timeout 240 /tmp/driver $F 2>&1 | tee $OUT/probe.txt
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["mean_gbps"], r.get("cpu_s_per_gb", "-"))'
for r in 1 2; do
  for s in "4K 1 20000" "4K 16 64000" "64K 16 32000" "1M 16 128"; do set -- $s
    echo "$r library $1 x $2: $(timeout 60 $R/hipfile bench --file $F --size 4G --mode randread --threads $2 --io-size $1 --count $3 --runs 3 --no-verify --json | python3 -c "$summary")"
  done
done 2>&1 | tee $OUT/library.txt
vmstat 1 > $OUT/vmstat.txt 2>&1 &
V=$!
PYTHONPATH=/tmp/kv timeout 200 python3 $G/rounds.py --hipfile $R/hipfile --file $F --mode randread --rounds 5 2>&1 | tail -6 | tee $OUT/rounds.txt
kill $V
