#!/usr/bin/env bash
# Whether the runtime's work queues bound many threads' small copies: CUDA_DEVICE_MAX_CONNECTIONS
# 8 (CUDA's default) against 32, by hand (small_probe.c) and in the library (one binary, the
# variable set by a wrapper), alternated; then the 16-caller rounds beside KvikIO with each.
set -u
F=/root/small.bin
C=target/gpu-run/conn
G=xtask/gpu-bench
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --target /tmp/kv .whl/kvikio*.whl .whl/libkvikio*.whl .whl/rapids_logger*.whl 2>&1 | tail -1
$C/hipfile bench --file $F --size 4G --mode read --runs 1 --no-verify >/dev/null
gcc -O2 -I/usr/local/cuda/include $G/small_probe.c -L/usr/local/cuda/lib64 -lcudart -lpthread -o /tmp/small
for c in 8 32; do echo "== by hand, CUDA_DEVICE_MAX_CONNECTIONS=$c"; CUDA_DEVICE_MAX_CONNECTIONS=$c timeout 100 /tmp/small $F; done 2>&1 | tee $OUT/probe.txt
summary='import json,sys; r=json.load(sys.stdin)["results"][0]; print(r["best_gbps"], r["mean_gbps"], r.get("cpu_s_per_gb", "-"))'
for r in 1 2; do for b in c8 c32; do
  for s in "randread 4K 1 20000" "randread 4K 16 64000" "randread 16K 16 32000" "randread 64K 16 32000" "randread 1M 16 128" "read 4G 1"; do set -- $s
    extra=(); [ "$1" = randread ] && extra=(--count $4); [ "$2" = 4G ] || extra+=(--io-size $2)
    echo "$r $b $1 $2 x $3: $(timeout 60 $C/$b bench --file $F --size 4G --mode $1 --threads $3 "${extra[@]}" --runs 3 --no-verify --json | python3 -c "$summary")"
  done
done; done 2>&1 | tee $OUT/rust.txt
for b in c8 c32; do
  PYTHONPATH=/tmp/kv timeout 150 python3 $G/rounds.py --hipfile $C/$b --file $F --mode randread --rounds 3 > $OUT/rounds-$b.txt 2>&1
  echo "$b: $(grep -o 'hipfile [0-9.]*  KvikIO best [0-9.]*  ratio [0-9.]*x' $OUT/rounds-$b.txt | tr '\n' ';') $(tail -1 $OUT/rounds-$b.txt)"
done 2>&1 | tee $OUT/rounds.txt
