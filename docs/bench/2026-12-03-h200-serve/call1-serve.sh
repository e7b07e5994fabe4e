#!/usr/bin/env bash
# Served copies: the probe by hand (serve_probe.c), then the library with served copies
# (HIPFILE_BOUNCE_SERVE=true) against without (=false: the landed path, gathering 16-32 KiB),
# one binary, three rounds alternated; verified runs; a warm whole file.
set -u
F=/root/small.bin
B=target/gpu-run/ab/hipfile
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
$B bench --file $F --size 4G --mode read --runs 1 --no-verify >/dev/null
gcc -O2 -I/usr/local/cuda/include target/gpu-run/ab/serve_probe.c -L/usr/local/cuda/lib64 \
    -L/usr/local/cuda/lib64/stubs -lcudart -lcuda -lpthread -o /tmp/serve
timeout 150 /tmp/serve $F 2>&1 | tee $OUT/probe.txt
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["mean_gbps"], r.get("cpu_s_per_gb", "-"))'
for r in 1 2 3; do for v in true false; do
  for s in "4K 16 64000" "16K 16 64000" "32K 16 32000" "64K 16 32000" "4K 1 20000" "64K 1 20000"; do set -- $s
    echo "$r serve=$v $1 x $2: $(HIPFILE_BOUNCE_SERVE=$v timeout 60 $B bench --file $F --size 4G --mode randread --threads $2 --io-size $1 --count $3 --runs 3 --no-verify --json | python3 -c "$summary")"
  done
done; done 2>&1 | tee $OUT/ab.txt
for s in "4K 16" "16K 16" "64K 16" "4K 1"; do set -- $s
  HIPFILE_BOUNCE_SERVE=true timeout 60 $B bench --file $F --size 4G --mode randread --threads $2 --io-size $1 --count 16000 --runs 1 --profile 2>&1 | tail -3
done 2>&1 | tee $OUT/verified.txt
timeout 60 $B bench --file $F --size 4G --mode read --runs 3 --no-verify 2>&1 | tail -2 | tee $OUT/whole.txt
