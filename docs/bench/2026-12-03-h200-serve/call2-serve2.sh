#!/usr/bin/env bash
# Served copies, second look: the probe with the idle check fixed; then three builds of the
# library alternated (serve off; served, one kernel launched at a time; served, one waiting
# behind), three rounds; failures shown with their stderr.
set -u
F=/root/small.bin
D=target/gpu-run/ab
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$D/hipfile bench --file $F --size 4G --mode read --runs 1 --no-verify >/dev/null
gcc -O2 -I/usr/local/cuda/include $D/serve_probe.c -L/usr/local/cuda/lib64 \
    -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread -o /tmp/serve
timeout 170 /tmp/serve $F 2>&1 | tee $OUT/probe.txt
one() { # label env binary size threads count
  local label=$1 env=$2 bin=$3; shift 3
  env $env timeout 60 $D/$bin bench --file $F --size 4G --mode randread --threads $2 --io-size $1 --count $3 \
      --runs 3 --no-verify --json >/tmp/j 2>/tmp/e
  local rc=$?
  if [ $rc = 0 ]; then
    echo "$label $1 x $2: $(python3 -c 'import json; r=json.load(open("/tmp/j"))["results"][0]; print(r["best_gbps"], r["mean_gbps"], r.get("cpu_s_per_gb", "-"))')"
  else echo "$label $1 x $2: FAILED rc=$rc: $(tail -c 600 /tmp/e)"; fi
}
for r in 1 2 3; do
  for s in "4K 16 32000" "16K 16 32000" "32K 16 32000" "64K 16 32000" "4K 1 20000" "16K 1 20000" "64K 1 20000"; do set -- $s
    one "$r off" HIPFILE_BOUNCE_SERVE=false hipfile $1 $2 $3
    one "$r q1 " HIPFILE_BOUNCE_SERVE=true hipfile-q1 $1 $2 $3
    one "$r q2 " HIPFILE_BOUNCE_SERVE=true hipfile $1 $2 $3
  done
done 2>&1 | tee $OUT/ab.txt
for s in "4K 16" "64K 16" "4K 1"; do set -- $s
  timeout 60 $D/hipfile bench --file $F --size 4G --mode randread --threads $2 --io-size $1 --count 16000 --runs 1 --profile 2>&1 | tail -3
done 2>&1 | tee $OUT/verified.txt
